//! The commands that ship with the suite, and what each one is for.
//!
//! `--list` shows these one-line descriptions without running anything, so
//! the text lives here rather than in the subcommands' own `--help`. This
//! table must never decide what gets run: dispatch only looks at the disk,
//! so a built-in that is not installed is reported missing, not faked.

/// One command of the suite.
pub struct Builtin {
    pub name: &'static str,
    pub about: &'static str,
}

/// Every built-in command, sorted by name (a unit test keeps it sorted).
pub const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "annotate",
        about: "Mark a captured call as a false success, workaround or slow",
    },
    Builtin {
        name: "capture",
        about: "Relay MCP traffic untouched, journaling every tool call",
    },
    Builtin {
        name: "close",
        about: "Close a finding by hand, with a reason kept in its history",
    },
    Builtin {
        name: "export-issues",
        about: "Write one issue-ready markdown file per open finding",
    },
    Builtin {
        name: "findings",
        about: "List findings for agents, for people (markdown) or as JSON",
    },
    Builtin {
        name: "generate",
        about: "Write a manifest case that probes a finding, to fill in",
    },
    Builtin {
        name: "index",
        about: "Index the capture journals into SQLite, incrementally",
    },
    Builtin {
        name: "otel",
        about: "Journal the MCP tool calls in OpenTelemetry traces (OTLP)",
    },
    Builtin {
        name: "probe",
        about: "Run one manifest case against a server; print the signed result",
    },
    Builtin {
        name: "promote",
        about: "Score recurring failures and promote them to findings",
    },
    Builtin {
        name: "readiness",
        about: "Report how ready each server is, from findings and trends",
    },
    Builtin {
        name: "report",
        about: "Write one HTML page of readiness, findings and fixes",
    },
    Builtin {
        name: "salt",
        about: "Export the store's secret salt, or import a team's salt",
    },
    Builtin {
        name: "serve",
        about: "Serve findings and verification as an MCP server on stdio",
    },
    Builtin {
        name: "share",
        about: "Pack share-safe findings into an envelope for others",
    },
    Builtin {
        name: "verify",
        about: "Probe a claimed fix; three green runs in a row close it",
    },
];

/// The description of built-in command `name`, if it is one.
pub fn about(name: &str) -> Option<&'static str> {
    BUILTINS
        .binary_search_by(|b| b.name.cmp(name))
        .ok()
        .map(|i| BUILTINS[i].about)
}

/// The names of every built-in command, in order.
pub fn names() -> impl Iterator<Item = &'static str> {
    BUILTINS.iter().map(|b| b.name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::sibling::is_valid_name;

    #[test]
    fn table_is_sorted_and_names_are_valid() {
        // `about` relies on binary search; a misplaced row would vanish.
        assert!(BUILTINS.windows(2).all(|w| w[0].name < w[1].name));
        assert!(names().all(is_valid_name));
        assert_eq!(BUILTINS.len(), 16);
        for b in BUILTINS {
            assert_eq!(about(b.name), Some(b.about));
            // One line each, short enough for an 80-column listing.
            assert!(
                !b.about.contains('\n') && b.about.chars().count() <= 80 - 17,
                "{}",
                b.name
            );
        }
        assert_eq!(about("nope"), None);
    }
}
