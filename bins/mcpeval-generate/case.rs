//! The case `generate` writes for a finding: probe by class, the tool and
//! its most frequent argument shape as placeholders, sized attempts.
//!
//! Only facts the catalog holds go in: shapes, never values. The oracle of
//! a false-success finding can only come from the operator's expect file.
//! Keys that capture folded into `"*"` cannot be brought back: that member
//! becomes one placeholder the operator replaces with the real members.

use mcp::probe::{DEGRADATION_CAP, ERROR_HONESTY_CAP};
use serde::Serialize;
use serde_json::{Map, Value};
use shared::Error;
use shared::Result;
use shared::finding::{DefectClass, Probe};
use shared::manifest::{DEFAULT_TIMEOUT_MS, Expect, VERSION};
use shared::score;
use store::catalog::Finding;
use store::sanitize::FOLDED;

/// The scalar types an argument shape names.
const TYPES: [&str; 6] = ["string", "integer", "number", "boolean", "null", "object"];

/// The generated manifest, fields in the order people read them.
#[derive(Debug, Serialize)]
pub struct Document {
    manifest_version: u64,
    cases: [Case; 1],
}

#[derive(Debug, Serialize)]
struct Case {
    id: String,
    finding: shared::id::FindingId,
    probe: &'static str,
    tool: String,
    arguments: Map<String, Value>,
    timeout_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    attempts: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expect: Option<Value>,
}

/// The manifest document for `finding`, with `expect` from `--expect`.
pub fn manifest(finding: &Finding, expect: Option<&Expect>) -> Result<Document> {
    let d = &finding.derived;
    let class = d.defect_class;
    let probe = match expect {
        Some(_) => Probe::InstructionFidelity,
        None => class.probe(),
    };
    if class == DefectClass::FalseSuccess {
        match expect {
            None => {
                return Err(Error::usage(format!(
                    "{} is a false-success finding: it needs --expect with a result assertion or an \
                     expected error; nothing was written",
                    d.id
                ))
                .with_hint(
                    "write an expect file whose equals_paths or required_result_paths tell the bug \
                     from the repair, or that expects an error",
                ));
            }
            Some(e) if !e.has_oracle() => {
                return Err(Error::rejected(format!(
                    "{} is a false-success finding: the expect file asserts nothing on the result \
                     and expects no error, so it cannot tell the bug from the repair; nothing was written",
                    d.id
                ))
                .with_hint("add equals_paths or required_result_paths, or expect an error"));
            }
            Some(_) => {}
        }
    }
    let shape = d.args_shapes.first().cloned().unwrap_or(Value::Null);
    let arguments = match placeholders(&shape) {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let (attempts, expect) = match probe {
        Probe::Degradation => (Some(score::attempts(d.failure_rate, DEGRADATION_CAP)), None),
        Probe::ErrorHonesty => (
            Some(score::attempts(d.failure_rate, ERROR_HONESTY_CAP)),
            None,
        ),
        Probe::InstructionFidelity | Probe::Workflow => (
            None,
            Some(expect.map_or_else(|| Expect::ok().to_value(), Expect::to_value)),
        ),
    };
    Ok(Document {
        manifest_version: VERSION,
        cases: [Case {
            id: d.id.to_string(),
            finding: d.id.clone(),
            probe: probe.as_str(),
            tool: d.tool.clone(),
            arguments,
            timeout_ms: DEFAULT_TIMEOUT_MS,
            attempts,
            expect,
        }],
    })
}

/// The placeholder of a folded member names its values' type after this.
const ENTRIES: &str = "<fill:entries of ";

/// Every scalar of an argument shape as `"<fill:TYPE>"`; an array keeps
/// one element; keys are kept, but the folded `"*"` member becomes
/// `"*": "<fill:entries of TYPE>"`, TYPE naming its values' kind, so that
/// the case is refused until someone writes the real members there.
fn placeholders(shape: &Value) -> Value {
    match shape {
        Value::String(t) if TYPES.contains(&t.as_str()) => Value::String(format!("<fill:{t}>")),
        Value::Array(items) => Value::Array(items.first().map(placeholders).into_iter().collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let filled = if k == FOLDED {
                        Value::String(format!("{ENTRIES}{}>", kind(v)))
                    } else {
                        placeholders(v)
                    };
                    (k.clone(), filled)
                })
                .collect(),
        ),
        _ => Value::String("<fill:value>".into()),
    }
}

/// The kind of value a shape stands for, as a placeholder names it.
fn kind(shape: &Value) -> &str {
    match shape {
        Value::String(t) if TYPES.contains(&t.as_str()) => t,
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        _ => "value",
    }
}

/// What to do with the placeholder `placeholder`, said after its pointer.
pub fn what_to_fill(placeholder: &str) -> String {
    if let Some(kind) = placeholder
        .strip_prefix(ENTRIES)
        .and_then(|rest| rest.strip_suffix('>'))
    {
        let each = match kind {
            "boolean" => "true or false".to_owned(),
            "null" => "null, or the value the call needs".to_owned(),
            "integer" | "object" | "array" => format!("an {kind}"),
            "string" | "number" => format!("a {kind}"),
            _ => "the value the call needs".to_owned(),
        };
        return format!(
            "replace this \"*\" member with the members the call needs, each value {each} \
             (capture keeps no key that may be data, such as an e-mail address or a token)"
        );
    }
    let with = match placeholder {
        "<fill:string>" => "a string",
        "<fill:integer>" => "an integer",
        "<fill:number>" => "a number",
        "<fill:boolean>" => "true or false",
        "<fill:null>" => "null, or the value the call needs",
        "<fill:object>" => "an object (captured shapes stop at depth 4)",
        _ => "the value the call needs",
    };
    format!("replace \"{placeholder}\" with {with}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shapes_become_placeholders() {
        let shape = json!({"q": "string", "n": "integer", "ids": ["integer"], "none": [],
                           "opts": {"deep": "object", "on": "boolean"}, "odd": "<x>"});
        assert_eq!(
            placeholders(&shape),
            json!({"q": "<fill:string>", "n": "<fill:integer>", "ids": ["<fill:integer>"],
                   "none": [], "opts": {"deep": "<fill:object>", "on": "<fill:boolean>"},
                   "odd": "<fill:value>"})
        );
    }

    #[test]
    fn folded_members_become_one_placeholder_each() {
        let shape = json!({"*": "integer", "q": "string",
                           "users": {"*": {"role": "string"}}, "rows": [{"*": ["boolean"]}]});
        let filled = placeholders(&shape);
        assert_eq!(
            filled,
            json!({"*": "<fill:entries of integer>", "q": "<fill:string>",
                   "users": {"*": "<fill:entries of object>"},
                   "rows": [{"*": "<fill:entries of array>"}]})
        );
        assert_eq!(
            what_to_fill("<fill:entries of integer>"),
            "replace this \"*\" member with the members the call needs, each value an integer \
             (capture keeps no key that may be data, such as an e-mail address or a token)"
        );
        assert_eq!(
            what_to_fill("<fill:string>"),
            "replace \"<fill:string>\" with a string"
        );
    }
}
