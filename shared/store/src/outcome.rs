//! Reading a `tools/call` response into sanitized facts.
//!
//! Shared by passive capture and the probe client so both classify a
//! response the same way. The malformed value itself is never returned.

use serde_json::Value;

use crate::raw;
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

/// Classifies a JSON-RPC response object (one with `result` or `error`),
/// as [`classify_raw`] classifies its text: the probe's calls, parsed by
/// its client, are classified by the same reading as captured ones.
pub fn classify(response: &Value, salt: &Salt) -> Classified {
    let text = response.to_string();
    match raw::object(&text, ["error", "result"]) {
        Some([error, result]) => classify_raw(error, result, salt, &mut Templates::default()),
        // Not an object: no `result` to read.
        None => Classified::malformed(),
    }
}

/// Classifies a response from its `error` and `result` members as
/// written, of a message [`raw::object`] accepted, read where they lie:
/// only the members classification needs, none parsed into a tree.
/// A JSON-RPC `error` is an error on that channel, whatever `result`
/// holds; else `result` must be an object, whose `isError` (absent or
/// `false`: ok; `true`: a tool error; anything else: malformed) decides.
/// A tool error's code is `structuredContent.code`, else the code of an
/// SDK's `MCP error <code>:` leading its first text item; its template is
/// made of its text items (first 1 KiB); its `retryable` is
/// `structuredContent.retryable`, else `_meta.retryable`.
pub fn classify_raw(
    error: Option<&str>,
    result: Option<&str>,
    salt: &Salt,
    templates: &mut Templates,
) -> Classified {
    if let Some(err) = error {
        let [message, code, data] =
            raw::members(err, ["message", "code", "data"]).unwrap_or_default();
        let retryable = data
            .and_then(|d| raw::members(d, ["retryable"]))
            .and_then(|[r]| r)
            .and_then(raw::boolean);
        return Classified::error(CallError {
            channel: Channel::Jsonrpc,
            code: code.and_then(raw_code),
            template_id: message
                .and_then(raw::string)
                .map(|m| templates.id(salt, &m).into()),
            retryable,
        });
    }
    let Some([is_error, content, structured, meta]) =
        result.and_then(|r| raw::members(r, ["isError", "content", "structuredContent", "_meta"]))
    else {
        return Classified::malformed();
    };
    match is_error.map(raw::boolean) {
        None | Some(Some(false)) => Classified::ok(),
        Some(Some(true)) => {
            // The text items of `content`, read once: the first may carry
            // an SDK's error code, and all of them make the template.
            let texts = content
                .and_then(raw::elements)
                .into_iter()
                .flatten()
                .filter_map(|item| raw::members(item, ["text"]).and_then(|[t]| t))
                .filter_map(raw::string);
            let mut text = String::new();
            let mut sdk_code = None;
            for (i, t) in texts.enumerate() {
                if i == 0 {
                    sdk_code = sdk_error_code(&t);
                }
                text.push_str(&t);
                if text.len() >= MAX_TEMPLATE_INPUT {
                    break;
                }
            }
            let [s_code, s_retryable] = structured
                .and_then(|s| raw::members(s, ["code", "retryable"]))
                .unwrap_or_default();
            let code = s_code.and_then(raw_code).or(sdk_code);
            let retryable = s_retryable.and_then(raw::boolean).or_else(|| {
                meta.and_then(|m| raw::members(m, ["retryable"]))
                    .and_then(|[r]| r)
                    .and_then(raw::boolean)
            });
            Classified::error(CallError {
                channel: Channel::Tool,
                code,
                template_id: (!text.is_empty()).then(|| {
                    let text = sanitize::truncate(&text, MAX_TEMPLATE_INPUT);
                    templates.id(salt, text).into()
                }),
                retryable,
            })
        }
        Some(None) => Classified::malformed(),
    }
}

/// An error code, given as its JSON text, as the store keeps it: an
/// integer (as a `Value` holds one: no fraction or exponent, within an
/// `i64`, and not `-0`, which it holds as a float) that [`is_kept_code`].
/// Anything else (an account, card or phone number a server put there)
/// is no code.
fn raw_code(text: &str) -> Option<i64> {
    if text == "-0" || text.contains(['.', 'e', 'E']) {
        return None;
    }
    text.parse::<i64>().ok().filter(|&c| is_kept_code(c))
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

    /// The reading of a parsed response that capture and the probe
    /// once shared, kept as the model [`classify_raw`] is held to.
    fn classify_with(response: &Value, salt: &Salt, templates: &mut Templates) -> Classified {
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

    /// [`classify_raw`] of `text`, against [`classify_with`] of its parse.
    fn same_in_place(text: &str) {
        let Some([error, result]) = raw::object(text, ["error", "result"]) else {
            return;
        };
        let parsed: Value = serde_json::from_str(text).expect("raw::object accepted it");
        let (mut a, mut b) = (Templates::default(), Templates::default());
        assert_eq!(
            classify_raw(error, result, &salt(), &mut a),
            classify_with(&parsed, &salt(), &mut b),
            "{text}"
        );
    }

    #[test]
    fn responses_read_in_place_classify_as_parsed_ones() {
        let long = "x".repeat(700);
        let cases = [
            r#"{"result":{"content":[]}}"#.to_owned(),
            r#"{"result":{"isError":false,"content":[{"type":"text","text":"a"}]}}"#.to_owned(),
            r#"{"result":{"isError":"yes"}}"#.to_owned(),
            r#"{"result":{"isError":null}}"#.to_owned(),
            r#"{"result":[1,2]}"#.to_owned(),
            r#"{"result":null}"#.to_owned(),
            r#"{"id":1}"#.to_owned(),
            r#"{"error":null}"#.to_owned(),
            r#"{"error":7,"result":{}}"#.to_owned(),
            r#"{"error":{"code":-32602,"message":"bad \"x\" 12","data":{"retryable":true}}}"#.to_owned(),
            r#"{"error":{"code":-32602.0,"message":7,"data":{"retryable":"yes"}}}"#.to_owned(),
            r#"{"error":{"code":-0,"message":"a\u00e9\n"},"error":{"code":1e2}}"#.to_owned(),
            r#"{"error":{"code":9223372036854775807}}"#.to_owned(),
            r#"{"error":{"code":-9223372036854775808,"data":[{"retryable":true}]}}"#.to_owned(),
            r#"{"error":{"code":9223372036854775808,"data":{"retryable":false},"data":{}}}"#.to_owned(),
            r#"{"error":{"code":4111111111111111,"message":""}}"#.to_owned(),
            r#"{"result":{"isError":true}}"#.to_owned(),
            r#"{"result":{"isError":true,"content":[{"type":"text","text":"MCP error -32001: slow"}]}}"#.to_owned(),
            r#"{"result":{"isError":true,"content":[{"text":7},{"text":" MCP error  12 : x"},{"text":"more"}]}}"#.to_owned(),
            r#"{"result":{"isError":true,"content":[{"text":"MCP error -0: x"},{"text":"MCP error 1.5: y"}]}}"#.to_owned(),
            r#"{"result":{"isError":true,"content":{"text":"not a list"},"structuredContent":{"code":7,"retryable":true}}}"#.to_owned(),
            r#"{"result":{"isError":true,"content":[],"structuredContent":[{"code":7}],"_meta":{"retryable":false}}}"#.to_owned(),
            r#"{"result":{"isError":true,"structuredContent":{"code":"7","retryable":null},"_meta":{"retryable":true}}}"#.to_owned(),
            r#"{"result":{"isError":true,"structuredContent":{"code":5.0},"content":[{"text":"MCP error 3: z"}]}}"#.to_owned(),
            r#"{"result":{"isError":true,"content":[{"text":"\ud83d\ude00 \u0000 \\ tab\t"}]},"result":{"isError":true,"content":[{"text":"last"}]}}"#.to_owned(),
            format!(r#"{{"result":{{"isError":true,"content":[{{"text":"{long}"}},{{"text":"{long}"}},{{"text":"never"}}]}}}}"#),
            format!(r#"{{"result":{{"isError":true,"content":[{{"text":"{}é"}}]}}}}"#, "y".repeat(1023)),
        ];
        for case in &cases {
            assert!(raw::object(case, ["error"]).is_some(), "{case}");
            same_in_place(case);
            // And with every byte dropped in turn: what parses still agrees.
            for at in 0..case.len() {
                if case.is_char_boundary(at) && case.is_char_boundary(at + 1) {
                    same_in_place(&format!("{}{}", &case[..at], &case[at + 1..]));
                }
            }
        }
    }

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
