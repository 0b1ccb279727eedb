//! `mcpeval --list`: what each name runs, as text for people or JSON.
//!
//! The listing is data, so it goes to stdout through one handle and a closed
//! pipe ends it quietly. It must never run a listed program (not even for
//! `--help`): descriptions come from the built-in table, plugins show paths.

use std::io::{self, BufWriter, Write};

use serde_json::json;
use shared::Result;

use crate::args::Format;
use crate::builtin::{self, BUILTINS};
use shared::sibling::{Listed, Origin, Search};

/// Prints every command `search` finds, in name order.
pub fn write(search: &Search, format: Format) -> Result<()> {
    let commands = search.list();
    let mut out = BufWriter::new(io::stdout().lock());
    match format {
        Format::Json => writeln!(out, "{}", to_json(&commands))?,
        Format::Text if commands.is_empty() => {
            // Nothing for stdout, but an empty screen deserves a reason.
            let place = search
                .own_dir()
                .map_or(String::new(), |d| format!(" in {} or", d.display()));
            shared::cli::warn(
                "mcpeval",
                format!("no mcpeval-NAME commands found{place} on PATH"),
            );
        }
        Format::Text => write_text(&mut out, &commands)?,
    }
    out.flush()?;
    Ok(())
}

/// `{"commands":[{"name","path","origin","builtin","description","shadowed"}]}`.
fn to_json(commands: &[Listed]) -> serde_json::Value {
    // Paths that are not UTF-8 are shown lossily; JSON has no way to carry them.
    let items: Vec<serde_json::Value> = commands
        .iter()
        .map(|c| {
            let about = builtin::about(&c.name);
            json!({
                "name": c.name,
                "path": c.path.to_string_lossy(),
                "origin": c.origin.as_str(),
                "builtin": about.is_some(),
                "description": about,
                "shadowed": c.shadowed.iter().map(|p| p.to_string_lossy()).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({ "commands": items })
}

/// Two sections, built-in then plugins, with the second column aligned:
///
/// ```text
/// Built-in commands:
///   capture        Relay MCP traffic unchanged and journal every tool call, sanitized
///
/// Plugins:
///   hello          /opt/x/mcpeval-hello
///                  (shadows /usr/bin/mcpeval-hello)
/// ```
fn write_text(out: &mut impl Write, commands: &[Listed]) -> io::Result<()> {
    // Sized to the longest built-in name as well, so the layout does not
    // shift as commands are installed; a longer plugin name widens it.
    let width = BUILTINS
        .iter()
        .map(|b| b.name.len())
        .chain(commands.iter().map(|c| c.name.len()))
        .max()
        .unwrap_or(0)
        + 2;
    let (builtins, plugins): (Vec<&Listed>, Vec<&Listed>) = commands
        .iter()
        .partition(|c| builtin::about(&c.name).is_some());
    let mut first = true;
    for (title, section) in [("Built-in commands:", builtins), ("Plugins:", plugins)] {
        if section.is_empty() {
            continue;
        }
        if !std::mem::take(&mut first) {
            writeln!(out)?;
        }
        writeln!(out, "{title}")?;
        for c in section {
            let pad = " ".repeat(width + 2);
            match builtin::about(&c.name) {
                Some(about) => {
                    writeln!(out, "  {:width$}{about}", c.name)?;
                    // A built-in run from elsewhere than beside the front is
                    // worth knowing about: it may be another version.
                    if c.origin == Origin::Path {
                        writeln!(out, "{pad}(runs {})", c.path.display())?;
                    }
                }
                None => writeln!(out, "  {:width$}{}", c.name, c.path.display())?,
            }
            for s in &c.shadowed {
                writeln!(out, "{pad}(shadows {})", s.display())?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn listed(name: &str, path: &str, origin: Origin, shadowed: &[&str]) -> Listed {
        Listed {
            name: name.into(),
            path: PathBuf::from(path),
            origin,
            shadowed: shadowed.iter().map(PathBuf::from).collect(),
        }
    }

    #[test]
    fn text_is_aligned_in_two_sections() {
        let commands = [
            listed(
                "capture",
                "/s/mcpeval-capture",
                Origin::Sibling,
                &["/p/mcpeval-capture"],
            ),
            listed("hello", "/p/mcpeval-hello", Origin::Path, &[]),
            listed("index", "/p/mcpeval-index", Origin::Path, &[]),
        ];
        let mut out = Vec::new();
        write_text(&mut out, &commands).unwrap();
        let expected = format!(
            "Built-in commands:\n\
             \x20 capture        {}\n\
             \x20                (shadows /p/mcpeval-capture)\n\
             \x20 index          {}\n\
             \x20                (runs /p/mcpeval-index)\n\
             \n\
             Plugins:\n\
             \x20 hello          /p/mcpeval-hello\n",
            builtin::about("capture").unwrap(),
            builtin::about("index").unwrap(),
        );
        assert_eq!(String::from_utf8(out).unwrap(), expected);
    }

    #[test]
    fn json_carries_every_field() {
        let commands = [listed(
            "hello",
            "/p/mcpeval-hello",
            Origin::Path,
            &["/q/mcpeval-hello"],
        )];
        assert_eq!(
            to_json(&commands),
            json!({"commands": [{"name": "hello", "path": "/p/mcpeval-hello", "origin": "path",
                "builtin": false, "description": null, "shadowed": ["/q/mcpeval-hello"]}]})
        );
    }
}
