//! Reading a `tools/call` response into sanitized facts.
//!
//! Shared by passive capture and the probe client so both classify a
//! response the same way. The malformed value itself is never returned.

use serde_json::Value;

use crate::salt::Salt;
use crate::sanitize::{self, MAX_TEMPLATE_INPUT, Templates};
use shared::record::{CallError, Channel, Outcome, Unknown, is_kept_code};

/// What a response said, with nothing raw left in it.
#[derive(Debug, Clone, PartialEq)]
pub struct Classified {
    /// `ok`, `error` or `unknown`.
    pub outcome: Outcome,
    /// Set with `Outcome::Unknown`.
    pub unknown: Option<Unknown>,
    /// Set with `Outcome::Error`.
    pub error: Option<CallError<'static>>,
}

impl Classified {
    /// The outcome of a result object with `isError` false or absent.
    pub fn ok() -> Classified {
        Classified {
            outcome: Outcome::Ok,
            unknown: None,
            error: None,
        }
    }

    /// The outcome of a call that never got a response.
    pub fn unanswered() -> Classified {
        Classified {
            outcome: Outcome::Unknown,
            unknown: Some(Unknown::Unanswered),
            error: None,
        }
    }

    /// The outcome of a malformed result.
    pub fn malformed() -> Classified {
        Classified {
            outcome: Outcome::Unknown,
            unknown: Some(Unknown::Malformed),
            error: None,
        }
    }

    fn error(error: CallError<'static>) -> Classified {
        Classified {
            outcome: Outcome::Error,
            unknown: None,
            error: Some(error),
        }
    }
}

/// Classifies a JSON-RPC response object (one with `result` or `error`).
pub fn classify(response: &Value, salt: &Salt) -> Classified {
    classify_with(response, salt, &mut Templates::default())
}

/// [`classify`], with the template ids of messages seen before taken from
/// `templates`.
pub fn classify_with(response: &Value, salt: &Salt, templates: &mut Templates) -> Classified {
    if let Some(err) = response.get("error") {
        let message = err.get("message").and_then(Value::as_str);
        return Classified::error(CallError {
            channel: Channel::Jsonrpc,
            code: err.get("code").and_then(code),
            template_id: message.map(|m| templates.id(salt, m).into()),
            retryable: err.pointer("/data/retryable").and_then(Value::as_bool),
        });
    }
    let Some(Value::Object(result)) = response.get("result") else {
        return Classified::malformed();
    };
    match result.get("isError") {
        None | Some(Value::Bool(false)) => Classified::ok(),
        Some(Value::Bool(true)) => {
            let text = error_text(result.get("content"));
            let structured = result.get("structuredContent");
            let code = structured
                .and_then(|s| s.get("code"))
                .and_then(code)
                .or_else(|| first_text(result.get("content")).and_then(sdk_error_code));
            let retryable = structured
                .and_then(|s| s.get("retryable"))
                .and_then(Value::as_bool)
                .or_else(|| {
                    result
                        .get("_meta")
                        .and_then(|m| m.get("retryable"))
                        .and_then(Value::as_bool)
                });
            Classified::error(CallError {
                channel: Channel::Tool,
                code,
                template_id: text.map(|t| templates.id(salt, &t).into()),
                retryable,
            })
        }
        Some(_) => Classified::malformed(),
    }
}

/// The concatenated text items of a result's content, first 1 KiB; `None`
/// when there is no text at all.
fn error_text(content: Option<&Value>) -> Option<String> {
    let items = content?.as_array()?;
    let mut text = String::new();
    for item in items {
        if let Some(t) = item.get("text").and_then(Value::as_str) {
            text.push_str(t);
            if text.len() >= MAX_TEMPLATE_INPUT {
                break;
            }
        }
    }
    if text.is_empty() {
        return None;
    }
    Some(sanitize::truncate(&text, MAX_TEMPLATE_INPUT).to_owned())
}

fn first_text(content: Option<&Value>) -> Option<&str> {
    content?
        .as_array()?
        .iter()
        .find_map(|item| item.get("text").and_then(Value::as_str))
}

/// An error code as the store keeps it: an integer that [`is_kept_code`].
/// Anything else (an account, card or phone number a server put there)
/// is no code.
fn code(value: &Value) -> Option<i64> {
    value.as_i64().filter(|&c| is_kept_code(c))
}

/// The code in a leading `MCP error <code>:`, as the reference SDKs write
/// it, when the store keeps it ([`is_kept_code`]).
fn sdk_error_code(text: &str) -> Option<i64> {
    let rest = text.trim_start().strip_prefix("MCP error ")?;
    let (code, _) = rest.split_once(':')?;
    code.trim().parse::<i64>().ok().filter(|&c| is_kept_code(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn salt() -> Salt {
        Salt::from_bytes([9; 32])
    }

    #[test]
    fn ok_results() {
        assert_eq!(
            classify(&json!({"result": {"content": []}}), &salt()).outcome,
            Outcome::Ok
        );
        assert_eq!(
            classify(&json!({"result": {"isError": false}}), &salt()).outcome,
            Outcome::Ok
        );
    }

    #[test]
    fn jsonrpc_error_keeps_code_and_retryable() {
        let c = classify(
            &json!({"error": {"code": -32602, "message": "bad city 'Paris'", "data": {"retryable": false}}}),
            &salt(),
        );
        let e = c.error.unwrap();
        assert_eq!(
            (e.channel, e.code, e.retryable),
            (Channel::Jsonrpc, Some(-32602), Some(false))
        );
        assert!(e.template_id.unwrap().starts_with("t-"));
    }

    #[test]
    fn tool_error_code_sources() {
        let sc = classify(
            &json!({"result": {"isError": true, "structuredContent": {"code": 7, "retryable": true},
                "content": [{"type": "text", "text": "MCP error -32001: slow"}]}}),
            &salt(),
        );
        assert_eq!(sc.error.as_ref().unwrap().code, Some(7));
        assert_eq!(sc.error.as_ref().unwrap().retryable, Some(true));
        let sdk = classify(
            &json!({"result": {"isError": true, "content": [{"type": "text", "text": "MCP error -32001: slow"}]}}),
            &salt(),
        );
        assert_eq!(sdk.error.as_ref().unwrap().code, Some(-32001));
        let none = classify(
            &json!({"result": {"isError": true, "_meta": {"retryable": false}}}),
            &salt(),
        );
        let e = none.error.unwrap();
        assert_eq!(
            (e.code, e.template_id, e.retryable),
            (None, None, Some(false))
        );
    }

    #[test]
    fn codes_outside_the_json_rpc_and_small_ranges_are_null() {
        let code = |response: Value| classify(&response, &salt()).error.unwrap().code;
        let rpc = |c: Value| code(json!({"error": {"code": c, "message": "m"}}));
        let tool = |sc: Value, text: &str| {
            code(json!({"result": {"isError": true, "structuredContent": sc,
                "content": [{"type": "text", "text": text}]}}))
        };
        // Each edge of both ranges, and the first number past it.
        for (c, kept) in [
            (-32769, false),
            (-32768, true),
            (-32000, true),
            (-31999, false),
            (-10000, false),
            (-9999, true),
            (0, true),
            (9999, true),
            (10000, false),
            (987654321, false),
            (4111111111111111, false),
            (i64::MIN, false),
            (i64::MAX, false),
        ] {
            let want = kept.then_some(c);
            assert_eq!(is_kept_code(c), kept, "{c}");
            assert_eq!(rpc(json!(c)), want, "jsonrpc {c}");
            assert_eq!(tool(json!({"code": c}), "failed"), want, "structured {c}");
            assert_eq!(
                tool(json!({}), &format!("MCP error {c}: no")),
                want,
                "sdk {c}"
            );
        }
        assert_eq!(rpc(json!(18446744073709551615_u64)), None);
        assert_eq!(rpc(json!(-32000.5)), None);
        assert_eq!(rpc(json!("-32602")), None);
        // A code the store does not keep does not hide the SDK's own.
        assert_eq!(
            tool(json!({"code": 987654321}), "MCP error -32001: slow"),
            Some(-32001)
        );
    }

    #[test]
    fn malformed_results() {
        for bad in [
            json!({"result": null}),
            json!({"result": [1]}),
            json!({"result": {"isError": "yes"}}),
            json!({}),
        ] {
            assert_eq!(
                classify(&bad, &salt()).unknown,
                Some(Unknown::Malformed),
                "{bad}"
            );
        }
    }
}
