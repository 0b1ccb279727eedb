//! Findings: what a recurring failure group is called, how it is classified,
//! and the one-line server-side fix each class suggests.
//!
//! Ids are salted hashes of the group's key, so they are stable across
//! rebuilds of the index and meaningless outside this store.

use serde::{Deserialize, Serialize};

use crate::spelling::spelled;

spelled! {
    /// What kind of group a finding stands for.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
    #[non_exhaustive]
    pub enum Kind {
        /// Errors sharing (server, tool, template).
        Error = "error",
        /// Malformed results of one (server, tool).
        Malformed = "malformed",
        /// Successful calls annotated `false-success`, per (server, tool).
        FalseSuccess = "false-success",
        /// Successful calls whose result broke the tool's declared
        /// `outputSchema`, per (server, tool, where, keyword).
        Contract = "contract",
    }
}

spelled! {
    /// The probe a manifest case uses to check a repair.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Probe {
        /// One call with an expectation.
        InstructionFidelity = "instruction-fidelity",
        /// Repeated calls; green when none fails.
        Degradation = "degradation",
        /// Repeated calls checking retryable is reported truthfully.
        ErrorHonesty = "error-honesty",
        /// Several steps in order.
        Workflow = "workflow",
    }
}

spelled! {
    /// Defect classes, in the order they are tried: the first that applies wins.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    #[non_exhaustive]
    pub enum DefectClass {
        /// Success reported for a call that did not do its job.
        FalseSuccess = "false-success",
        /// A result that is not a `CallToolResult` object.
        MalformedResult = "malformed-result",
        /// A success whose `structuredContent` breaks the tool's declared
        /// `outputSchema`: the reference clients raise on it.
        ContractViolation = "contract-violation",
        /// A call to a tool the server does not (or no longer) advertise.
        UnknownTool = "unknown-tool",
        /// Arguments the server rejected as invalid.
        InvalidArguments = "invalid-arguments",
        /// An error whose `retryable` report is inconsistent.
        ErrorHonesty = "error-honesty",
        /// A failure that goes away on retry, or a timeout.
        Transient = "transient",
        /// An unhandled failure inside the server.
        InternalError = "internal-error",
        /// Any other error.
        ToolError = "tool-error",
    }
}

spelled! {
    /// A finding's place in the lifecycle.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub enum State {
        /// Promoted and not (yet) claimed fixed.
        #[default]
        Open = "open",
        /// A verification ran and was red: a fix is claimed but not shown.
        FixClaimed = "fix-claimed",
        /// At least one green run, fewer than three in a row.
        Verifying = "verifying",
        /// Three consecutive green runs, or closed by hand.
        Closed = "closed",
    }
}

/// Where a contract group's results first broke the tool's
/// `outputSchema`: a JSON Pointer into `structuredContent` of names the
/// schema declares (`""`: the whole of it) and the keyword that failed.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Violation {
    /// The place, as the record's `contract.at`.
    pub at: String,
    /// The keyword, as the record's `contract.keyword`.
    pub keyword: String,
}

impl Violation {
    /// The violation as one text, the key a contract group is stored and
    /// identified by where an error group has its template id:
    /// `KEYWORD:AT` (a keyword holds no `:`).
    pub fn key(&self) -> String {
        format!("{}:{}", self.keyword, self.at)
    }

    /// The violation a contract group's key names; `None` for any other
    /// kind of group, or a key not in that form.
    pub fn of_group(kind: Kind, key: Option<&str>) -> Option<Violation> {
        let (keyword, at) = key?.split_once(':')?;
        (kind == Kind::Contract).then(|| Violation {
            at: at.to_owned(),
            keyword: keyword.to_owned(),
        })
    }

    /// The place as people read it: the pointer, or `(root)` for the whole
    /// `structuredContent` (or its absence).
    pub fn shown_at(&self) -> &str {
        if self.at.is_empty() {
            "(root)"
        } else {
            &self.at
        }
    }

    /// The contract-violation fix hint, naming this violation.
    pub fn fix_hint(&self) -> String {
        format!(
            "Return structuredContent that conforms to the tool's declared outputSchema (first violation at {}: {}).",
            self.shown_at(),
            self.keyword
        )
    }
}

/// A finding's fix hint: its class's, naming the violation for a contract
/// finding.
pub fn fix_hint(class: DefectClass, contract: Option<&Violation>) -> String {
    match contract {
        Some(violation) => violation.fix_hint(),
        None => class.fix_hint().to_owned(),
    }
}

/// JSON-RPC "method not found".
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC "invalid params".
pub const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC "internal error".
pub const INTERNAL_ERROR: i64 = -32603;
/// The reference SDKs' request timeout.
pub const REQUEST_TIMEOUT: i64 = -32001;

/// The facts of a group's failures that decide its class.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Evidence {
    /// Every distinct error code seen (null codes left out).
    pub err_codes: Vec<i64>,
    /// Failures that reported `retryable: true`.
    pub retryable_true: u64,
    /// Failures that reported `retryable: false`.
    pub retryable_false: u64,
    /// Failures that said nothing about retrying.
    pub retryable_unreported: u64,
    /// Failed calls whose tool was known not to be advertised.
    pub unadvertised_failures: u64,
    /// All failed calls of the group.
    pub failures: u64,
}

impl DefectClass {
    /// The class of a group of `kind` with `evidence`.
    pub fn of(kind: Kind, evidence: &Evidence) -> DefectClass {
        let has = |code| evidence.err_codes.contains(&code);
        let reported = [
            evidence.retryable_true,
            evidence.retryable_false,
            evidence.retryable_unreported,
        ];
        let mixed_retryable = reported.iter().filter(|&&n| n > 0).count() > 1;
        match kind {
            Kind::FalseSuccess => DefectClass::FalseSuccess,
            Kind::Malformed => DefectClass::MalformedResult,
            Kind::Contract => DefectClass::ContractViolation,
            Kind::Error if has(METHOD_NOT_FOUND) => DefectClass::UnknownTool,
            Kind::Error
                if evidence.failures > 0 && evidence.unadvertised_failures == evidence.failures =>
            {
                DefectClass::UnknownTool
            }
            Kind::Error if has(INVALID_PARAMS) => DefectClass::InvalidArguments,
            Kind::Error if mixed_retryable => DefectClass::ErrorHonesty,
            Kind::Error
                if evidence.failures > 0 && evidence.retryable_true == evidence.failures =>
            {
                DefectClass::Transient
            }
            Kind::Error if has(REQUEST_TIMEOUT) => DefectClass::Transient,
            Kind::Error if has(INTERNAL_ERROR) => DefectClass::InternalError,
            Kind::Error => DefectClass::ToolError,
        }
    }

    /// One line telling the server's author what to change.
    pub fn fix_hint(self) -> &'static str {
        match self {
            DefectClass::FalseSuccess => {
                "Return an error when the call did not achieve its contract; never report success for an unmet request."
            }
            DefectClass::MalformedResult => {
                "Return a CallToolResult object with a boolean isError."
            }
            DefectClass::ContractViolation => {
                "Return structuredContent that conforms to the tool's declared outputSchema."
            }
            DefectClass::UnknownTool => {
                "Keep tools/list and dispatch in sync, and answer an unknown name with an error listing the valid ones."
            }
            DefectClass::InvalidArguments => {
                "Validate against the advertised inputSchema and name the offending field."
            }
            DefectClass::ErrorHonesty => {
                "Report retryable truthfully and consistently for each error."
            }
            DefectClass::Transient => {
                "Recover without restart; bound latency; mark transient errors retryable."
            }
            DefectClass::InternalError => {
                "Catch the failure and return a specific, actionable error."
            }
            DefectClass::ToolError => "Fix the failing path and make the error text actionable.",
        }
    }

    /// The probe `generate` writes for this class.
    pub fn probe(self) -> Probe {
        match self {
            DefectClass::ErrorHonesty => Probe::ErrorHonesty,
            DefectClass::Transient => Probe::Degradation,
            _ => Probe::InstructionFidelity,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(codes: &[i64], t: u64, f: u64, u: u64) -> Evidence {
        Evidence {
            err_codes: codes.to_vec(),
            retryable_true: t,
            retryable_false: f,
            retryable_unreported: u,
            unadvertised_failures: 0,
            failures: t + f + u,
        }
    }

    #[test]
    fn first_matching_class_wins() {
        // -32601 and -32602 and mixed retryable: unknown-tool comes first.
        assert_eq!(
            DefectClass::of(Kind::Error, &ev(&[-32601, -32602], 1, 1, 0)),
            DefectClass::UnknownTool
        );
        assert_eq!(
            DefectClass::of(Kind::Error, &ev(&[-32602], 1, 1, 0)),
            DefectClass::InvalidArguments
        );
        assert_eq!(
            DefectClass::of(Kind::Error, &ev(&[-32603], 1, 0, 1)),
            DefectClass::ErrorHonesty
        );
        assert_eq!(
            DefectClass::of(Kind::Error, &ev(&[-32603], 3, 0, 0)),
            DefectClass::Transient
        );
        assert_eq!(
            DefectClass::of(Kind::Error, &ev(&[-32001, -32603], 0, 2, 0)),
            DefectClass::Transient
        );
        assert_eq!(
            DefectClass::of(Kind::Error, &ev(&[-32603], 0, 2, 0)),
            DefectClass::InternalError
        );
        assert_eq!(
            DefectClass::of(Kind::Error, &ev(&[], 0, 0, 2)),
            DefectClass::ToolError
        );
        assert_eq!(
            DefectClass::of(Kind::Malformed, &ev(&[-32601], 0, 0, 0)),
            DefectClass::MalformedResult
        );
        let unadvertised = Evidence {
            unadvertised_failures: 2,
            ..ev(&[-32602], 0, 0, 2)
        };
        assert_eq!(
            DefectClass::of(Kind::Error, &unadvertised),
            DefectClass::UnknownTool
        );
    }
}
