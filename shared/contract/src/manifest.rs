//! The manifest contract (`mcp-eval.manifest.json`) and expect files.
//!
//! A manifest says how to check a repair: per case, which finding it
//! proves, which probe runs, which tool is called with which arguments and
//! what the result must show. Parsing is strict: an unknown property at any
//! level, a case that breaks a rule, or a file over its size limit is
//! rejected with the file, the JSON Pointer of the offending value and the
//! rule, never guessed at. The canonical form of a case is what credit is
//! bound to, so it must never depend on formatting, key order or the other
//! cases in the file.
//!
//! Share safety: a manifest may be shared with a server's authors, so
//! successful string equalities must be identifiers (see [`is_identifier`])
//! and equality values must be scalars. A manifest never carries result
//! payloads.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::canonical;
use crate::error::{Error, Result};
use crate::file_arg::Input;
use crate::finding::Probe;
use crate::id::FindingId;
use crate::spelling::spelled;

/// The conventional manifest file name.
pub const FILE_NAME: &str = "mcp-eval.manifest.json";
/// The only `manifest_version` this release reads.
pub const VERSION: u64 = 1;
/// Manifest files larger than this (1 MiB) are rejected unread.
pub const MAX_MANIFEST_BYTES: u64 = 1024 * 1024;
/// Expect files (`generate --expect`) larger than this (64 KiB) are rejected.
pub const MAX_EXPECT_BYTES: u64 = 64 * 1024;
/// `timeout_ms` when a case gives none.
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;
/// The longest `timeout_ms` a case may ask for (one hour).
pub const MAX_TIMEOUT_MS: u64 = 3_600_000;
/// The most `attempts` a case may ask for.
pub const MAX_ATTEMPTS: u32 = 1000;
/// The longest identifier (see [`is_identifier`]).
pub const MAX_IDENTIFIER: usize = 128;

/// Whether `s` is an identifier: 1 to 128 characters from `A-Z a-z 0-9 _ . : -`.
///
/// Case ids and every successful string equality must be identifiers, so
/// a manifest can say `"status": "ready"` but never carry free text.
pub fn is_identifier(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_IDENTIFIER
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'))
}

const IDENTIFIER_RULE: &str = "must be an identifier: 1 to 128 characters from A-Z a-z 0-9 _ . : -";

/// Escapes one key for use as a JSON Pointer segment (`~` → `~0`, `/` → `~1`).
pub fn pointer_escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// A rule a document broke: where (JSON Pointer into the file) and which rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// JSON Pointer of the offending value; empty for the whole document.
    pub pointer: String,
    /// What is wrong and what would be accepted.
    pub rule: String,
}

impl Rejection {
    fn at(pointer: impl Into<String>, rule: impl Into<String>) -> Rejection {
        Rejection {
            pointer: pointer.into(),
            rule: rule.into(),
        }
    }

    /// The exit-status-4 error naming `file` (a path's `display()`, an
    /// [`Input`] or an output).
    pub fn into_error(self, file: impl std::fmt::Display) -> Error {
        let place = if self.pointer.is_empty() {
            "the top level".to_owned()
        } else {
            self.pointer
        };
        Error::rejected(format!("{file}: at {place}: {}", self.rule))
            .with_hint("fix the file and run the command again; nothing was run or changed")
    }
}

/// A parsed, checked manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// Always [`VERSION`].
    pub manifest_version: u64,
    /// Declared sandboxes by name.
    pub sandboxes: BTreeMap<String, Sandbox>,
    /// The cases, in file order.
    pub cases: Vec<Case>,
}

/// Where a case runs, in the operator's words. Only its fingerprint is kept.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sandbox {
    /// Free prose; bound into credit, never stored or printed.
    pub declaration: String,
}

/// One case: a probe of one finding.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// Position in the file's `cases` array (for JSON Pointers in messages).
    pub index: usize,
    /// Unique within the manifest; an identifier.
    pub id: String,
    /// The finding this case proves.
    pub finding: FindingId,
    /// Which probe runs.
    pub probe: Probe,
    /// The declared sandbox it runs in, if any.
    pub sandbox: Option<String>,
    /// Per-call timeout in milliseconds.
    pub timeout_ms: u64,
    /// Repetitions for degradation and error-honesty; sized when absent.
    pub attempts: Option<u32>,
    /// The calls: one for instruction-fidelity, degradation and
    /// error-honesty, one or more in order for workflow.
    pub steps: Vec<Step>,
}

/// One call of a case.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// JSON Pointer of the object holding `tool`/`arguments` in the file.
    pub pointer: String,
    /// Tool name.
    pub tool: String,
    /// Arguments object sent as is.
    pub arguments: Map<String, Value>,
    /// What the result must show (`{"outcome":"ok"}` when not given;
    /// unused by degradation and error-honesty).
    pub expect: Expect,
}

spelled! {
    /// The expected outcome of a call.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Outcome {
        /// A result with `isError` false or absent.
        Ok = "ok",
        /// A JSON-RPC error or a result with `isError: true`.
        Error = "error",
    }
}

/// What a call's result must show.
#[derive(Debug, Clone, PartialEq)]
pub struct Expect {
    /// `ok` or `error`.
    pub outcome: Outcome,
    /// Top-level keys of `structuredContent` that must be present (sorted, unique).
    pub required_result_fields: Vec<String>,
    /// Scalar values of top-level `structuredContent` keys.
    pub equals: BTreeMap<String, Value>,
    /// JSON Pointers into the `CallToolResult` that must be present (sorted, unique).
    pub required_result_paths: Vec<String>,
    /// Scalar values at JSON Pointers into the `CallToolResult`.
    pub equals_paths: BTreeMap<String, Value>,
    /// The error's code, with outcome `error`.
    pub error_code: Option<i64>,
}

/// The first expectation a result did not meet.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unmet {
    /// Nothing at this JSON Pointer into the result.
    Missing(String),
    /// A different value at this JSON Pointer into the result.
    NotEqual(String),
}

impl Expect {
    /// `{"outcome":"ok"}`, the default expectation.
    pub fn ok() -> Expect {
        Expect {
            outcome: Outcome::Ok,
            required_result_fields: Vec::new(),
            equals: BTreeMap::new(),
            required_result_paths: Vec::new(),
            equals_paths: BTreeMap::new(),
            error_code: None,
        }
    }

    /// Reads and checks an expect file, or standard input (at most
    /// [`MAX_EXPECT_BYTES`]).
    pub fn parse_file(input: &Input) -> Result<Expect> {
        let text = read_limited(input, MAX_EXPECT_BYTES, "expect files", "64 KiB")?;
        Expect::parse(&text).map_err(|r| r.into_error(input))
    }

    /// Parses the text of an expect file: one `expect` object.
    pub fn parse(text: &str) -> Result<Expect, Rejection> {
        let raw: RawExpect = deserialize(text)?;
        raw.check("")
    }

    /// Whether this expectation is an oracle for a false-success finding:
    /// an expected error or at least one result assertion.
    pub fn has_oracle(&self) -> bool {
        self.outcome == Outcome::Error
            || !self.required_result_fields.is_empty()
            || !self.equals.is_empty()
            || !self.required_result_paths.is_empty()
            || !self.equals_paths.is_empty()
    }

    /// Whether this expectation says something that not every successful
    /// result satisfies, so that it can tell a false success from a
    /// repair: an expected error, a key of `structuredContent`, or a
    /// value under `/content`. What every `CallToolResult` of a success
    /// has is not such an assertion: the presence of `/content` or of
    /// anything under it (every result has a content array, and its items
    /// a type and text), `/isError`, a bare `/structuredContent`, or the
    /// `type` of a content item.
    pub fn says_something(&self) -> bool {
        if self.outcome == Outcome::Error
            || !self.required_result_fields.is_empty()
            || !self.equals.is_empty()
        {
            return true;
        }
        let field = |p: &str| p.strip_prefix("/structuredContent/").is_some();
        let content_value = |p: &str| {
            p.strip_prefix("/content/")
                .is_some_and(|rest| rest.contains('/') && !rest.ends_with("/type"))
        };
        self.required_result_paths.iter().any(|p| field(p))
            || self
                .equals_paths
                .keys()
                .any(|p| field(p) || content_value(p))
    }

    /// Checks a successful `CallToolResult` object against the result
    /// assertions: presence first (`required_result_fields`, then
    /// `required_result_paths`), then values (`equals`, then
    /// `equals_paths`), each in sorted order; the first unmet one is
    /// returned. Only the pointers (which come from the
    /// manifest) leave this function, never a result value.
    pub fn first_unmet(&self, result: &Value) -> Option<Unmet> {
        let field = |key: &str| format!("/structuredContent/{}", pointer_escape(key));
        let required = self
            .required_result_fields
            .iter()
            .map(|k| field(k))
            .chain(self.required_result_paths.iter().cloned());
        for pointer in required {
            if result.pointer(&pointer).is_none() {
                return Some(Unmet::Missing(pointer));
            }
        }
        let equalities = self
            .equals
            .iter()
            .map(|(k, v)| (field(k), v))
            .chain(self.equals_paths.iter().map(|(p, v)| (p.clone(), v)));
        for (pointer, want) in equalities {
            match result.pointer(&pointer) {
                None => return Some(Unmet::Missing(pointer)),
                Some(got) if !scalar_eq(got, want) => return Some(Unmet::NotEqual(pointer)),
                Some(_) => {}
            }
        }
        None
    }

    /// The canonical value: defaults filled in, empty assertions left out.
    pub fn to_value(&self) -> Value {
        let mut out = Map::new();
        out.insert("outcome".into(), json!(self.outcome.as_str()));
        if !self.required_result_fields.is_empty() {
            out.insert(
                "required_result_fields".into(),
                json!(self.required_result_fields),
            );
        }
        if !self.equals.is_empty() {
            out.insert("equals".into(), json!(self.equals));
        }
        if !self.required_result_paths.is_empty() {
            out.insert(
                "required_result_paths".into(),
                json!(self.required_result_paths),
            );
        }
        if !self.equals_paths.is_empty() {
            out.insert("equals_paths".into(), json!(self.equals_paths));
        }
        if let Some(code) = self.error_code {
            out.insert("error_code".into(), json!(code));
        }
        Value::Object(out)
    }
}

/// Equality of two scalars; numbers compare by value, so `33` equals `33.0`.
fn scalar_eq(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Number(a), Value::Number(b)) => {
            if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
                x == y
            } else if let (Some(x), Some(y)) = (a.as_u64(), b.as_u64()) {
                x == y
            } else {
                a.as_f64() == b.as_f64()
            }
        }
        _ => got == want,
    }
}

impl Manifest {
    /// Reads and checks a manifest file, or standard input (at most
    /// [`MAX_MANIFEST_BYTES`]).
    pub fn load(input: &Input) -> Result<Manifest> {
        let text = read_limited(input, MAX_MANIFEST_BYTES, "manifests", "1 MiB")?;
        Manifest::parse(&text).map_err(|r| r.into_error(input))
    }

    /// Parses and checks the text of a manifest.
    pub fn parse(text: &str) -> Result<Manifest, Rejection> {
        let raw: RawManifest = deserialize(text)?;
        raw.check()
    }

    /// The case with id `id`.
    pub fn case(&self, id: &str) -> Option<&Case> {
        self.cases.iter().find(|c| c.id == id)
    }
}

impl Case {
    /// The case definition as canonical JSON: defaults filled in
    /// (`timeout_ms`, `arguments: {}`, `expect: {"outcome":"ok"}`), empty
    /// assertions left out, keys sorted, no whitespace. Credit is bound to
    /// it, so formatting, key order and other cases never change it.
    pub fn canonical(&self) -> String {
        canonical::to_string(&self.to_value())
    }

    fn to_value(&self) -> Value {
        let mut out = Map::new();
        out.insert("id".into(), json!(self.id));
        out.insert("finding".into(), json!(self.finding));
        out.insert("probe".into(), json!(self.probe.as_str()));
        out.insert("sandbox".into(), json!(self.sandbox));
        out.insert("timeout_ms".into(), json!(self.timeout_ms));
        out.insert("attempts".into(), json!(self.attempts));
        let step = |s: &Step, with_expect: bool| {
            let mut m = Map::new();
            m.insert("tool".into(), json!(s.tool));
            m.insert("arguments".into(), Value::Object(s.arguments.clone()));
            if with_expect {
                m.insert("expect".into(), s.expect.to_value());
            }
            m
        };
        match self.probe {
            Probe::Workflow => {
                let steps: Vec<Value> = self
                    .steps
                    .iter()
                    .map(|s| Value::Object(step(s, true)))
                    .collect();
                out.insert("steps".into(), Value::Array(steps));
            }
            probe => {
                if let Some(s) = self.steps.first() {
                    out.extend(step(s, probe == Probe::InstructionFidelity));
                }
            }
        }
        Value::Object(out)
    }

    /// Every argument still holding a `"<fill:TYPE>"` placeholder, as JSON
    /// Pointers into the manifest file, in file order.
    pub fn placeholders(&self) -> Vec<String> {
        let mut found = Vec::new();
        for step in &self.steps {
            for (key, value) in &step.arguments {
                let at = format!("{}/arguments/{}", step.pointer, pointer_escape(key));
                collect_placeholders(value, at, &mut found);
            }
        }
        found
    }

    /// The tools the case calls, in step order, each once: the `tool` of
    /// a single-call probe, every step's of a workflow.
    pub fn tools(&self) -> Vec<String> {
        let mut tools: Vec<String> = Vec::with_capacity(self.steps.len());
        for step in &self.steps {
            if !tools.contains(&step.tool) {
                tools.push(step.tool.clone());
            }
        }
        tools
    }

    /// Whether the case can prove a false-success repair: an
    /// instruction-fidelity expectation, or at least one workflow step,
    /// with a result assertion or an expected error.
    pub fn has_oracle(&self) -> bool {
        match self.probe {
            Probe::InstructionFidelity | Probe::Workflow => {
                self.steps.iter().any(|s| s.expect.has_oracle())
            }
            Probe::Degradation | Probe::ErrorHonesty => false,
        }
    }
}

/// Whether `s` holds a placeholder, `<fill:` then anything but `<` and `>`,
/// then `>`.
fn has_placeholder(s: &str) -> bool {
    s.match_indices("<fill:").any(|(at, open)| {
        let rest = &s[at + open.len()..];
        rest.find(['<', '>'])
            .is_some_and(|end| rest.as_bytes()[end] == b'>')
    })
}

fn collect_placeholders(value: &Value, at: String, found: &mut Vec<String>) {
    match value {
        Value::String(s) if has_placeholder(s) => found.push(at),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                collect_placeholders(item, format!("{at}/{i}"), found);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                collect_placeholders(item, format!("{at}/{}", pointer_escape(key)), found);
            }
        }
        _ => {}
    }
}

/// Reads at most `limit` bytes of UTF-8 text from `input`.
fn read_limited(input: &Input, limit: u64, what: &str, limit_text: &str) -> Result<String> {
    let bytes = input.read_limited(limit)?;
    if bytes.len() as u64 > limit {
        return Err(Error::rejected(format!(
            "{input}: larger than {limit_text}; {what} are limited to {limit} bytes"
        )));
    }
    String::from_utf8(bytes).map_err(|_| Error::rejected(format!("{input}: not UTF-8 text")))
}

/// Deserializes with the JSON Pointer of the offending value on error.
fn deserialize<'de, T: Deserialize<'de>>(text: &'de str) -> Result<T, Rejection> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|err| {
        let pointer: String = err
            .path()
            .iter()
            .map(|segment| match segment {
                serde_path_to_error::Segment::Seq { index } => format!("/{index}"),
                serde_path_to_error::Segment::Map { key } => format!("/{}", pointer_escape(key)),
                serde_path_to_error::Segment::Enum { variant } => format!("/{variant}"),
                serde_path_to_error::Segment::Unknown => "/?".to_owned(),
            })
            .collect();
        Rejection::at(pointer, err.into_inner().to_string())
    })?;
    de.end()
        .map_err(|err| Rejection::at("", format!("trailing characters: {err}")))?;
    Ok(value)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    manifest_version: u64,
    #[serde(default)]
    sandboxes: BTreeMap<String, Sandbox>,
    cases: Vec<RawCase>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCase {
    id: String,
    finding: String,
    probe: String,
    #[serde(default)]
    sandbox: Option<String>,
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(default)]
    tool: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(default)]
    attempts: Option<u64>,
    #[serde(default)]
    steps: Option<Vec<RawStep>>,
    #[serde(default)]
    expect: Option<RawExpect>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    tool: String,
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(default)]
    expect: Option<RawExpect>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpect {
    outcome: String,
    #[serde(default)]
    required_result_fields: Option<Vec<String>>,
    #[serde(default)]
    equals: Option<BTreeMap<String, Value>>,
    #[serde(default)]
    required_result_paths: Option<Vec<String>>,
    #[serde(default)]
    equals_paths: Option<BTreeMap<String, Value>>,
    #[serde(default)]
    error_code: Option<i64>,
}

impl RawManifest {
    fn check(self) -> Result<Manifest, Rejection> {
        if self.manifest_version != VERSION {
            return Err(Rejection::at(
                "/manifest_version",
                format!(
                    "unsupported manifest_version {}; this release reads version {VERSION}",
                    self.manifest_version
                ),
            ));
        }
        for (name, sandbox) in &self.sandboxes {
            let at = format!("/sandboxes/{}", pointer_escape(name));
            if name.is_empty() {
                return Err(Rejection::at(at, "a sandbox name must not be empty"));
            }
            if sandbox.declaration.trim().is_empty() {
                return Err(Rejection::at(
                    format!("{at}/declaration"),
                    "the declaration must say where the case runs; it must not be empty",
                ));
            }
        }
        let mut cases: Vec<Case> = Vec::with_capacity(self.cases.len());
        for (index, raw) in self.cases.into_iter().enumerate() {
            let case = raw.check(index, &self.sandboxes)?;
            if let Some(first) = cases.iter().find(|c| c.id == case.id) {
                return Err(Rejection::at(
                    format!("/cases/{index}/id"),
                    format!(
                        "duplicate case id; ids must be unique (first at /cases/{}/id)",
                        first.index
                    ),
                ));
            }
            cases.push(case);
        }
        Ok(Manifest {
            manifest_version: self.manifest_version,
            sandboxes: self.sandboxes,
            cases,
        })
    }
}

impl RawCase {
    fn check(self, index: usize, sandboxes: &BTreeMap<String, Sandbox>) -> Result<Case, Rejection> {
        let at = format!("/cases/{index}");
        let field = |name: &str| format!("{at}/{name}");
        if !is_identifier(&self.id) {
            return Err(Rejection::at(
                field("id"),
                format!("the case id {IDENTIFIER_RULE}"),
            ));
        }
        let Ok(finding) = FindingId::parse(&self.finding) else {
            return Err(Rejection::at(
                field("finding"),
                "must be a finding id: \"finding-\" and 16 lower-case hex digits",
            ));
        };
        let probe = Probe::parse(&self.probe).ok_or_else(|| {
            Rejection::at(
                field("probe"),
                "must be one of instruction-fidelity, degradation, error-honesty, workflow",
            )
        })?;
        if let Some(name) = &self.sandbox
            && !sandboxes.contains_key(name)
        {
            return Err(Rejection::at(
                field("sandbox"),
                "names no sandbox declared under /sandboxes; declare it there or remove the reference",
            ));
        }
        let timeout_ms = self.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
        if !(1..=MAX_TIMEOUT_MS).contains(&timeout_ms) {
            return Err(Rejection::at(
                field("timeout_ms"),
                format!("must be from 1 to {MAX_TIMEOUT_MS} milliseconds"),
            ));
        }
        let attempts = match self.attempts {
            None => None,
            Some(n) if (1..=u64::from(MAX_ATTEMPTS)).contains(&n) => Some(n as u32),
            Some(_) => {
                return Err(Rejection::at(
                    field("attempts"),
                    format!("must be from 1 to {MAX_ATTEMPTS}"),
                ));
            }
        };
        let name = probe.as_str();
        let refuse = |key: &str, why: &str| {
            Err(Rejection::at(
                field(key),
                format!("not allowed in a {name} case: {why}"),
            ))
        };
        let steps = match probe {
            Probe::Workflow => {
                if self.tool.is_some() {
                    return refuse("tool", "put each call in \"steps\"");
                }
                if self.arguments.is_some() {
                    return refuse("arguments", "put each call's arguments in its step");
                }
                if self.expect.is_some() {
                    return refuse("expect", "put each expectation in its step");
                }
                if self.attempts.is_some() {
                    return refuse("attempts", "a workflow runs its steps once");
                }
                let raw_steps = self.steps.unwrap_or_default();
                if raw_steps.is_empty() {
                    return Err(Rejection::at(
                        field("steps"),
                        "a workflow case needs at least one step",
                    ));
                }
                let mut steps = Vec::with_capacity(raw_steps.len());
                for (i, s) in raw_steps.into_iter().enumerate() {
                    let step_at = format!("{at}/steps/{i}");
                    steps.push(Step::check(step_at, s.tool, s.arguments, s.expect)?);
                }
                steps
            }
            _ => {
                if self.steps.is_some() {
                    return refuse("steps", "only workflow cases have steps");
                }
                if probe != Probe::InstructionFidelity && self.expect.is_some() {
                    return refuse(
                        "expect",
                        "every attempt is judged by its outcome and its retryable report",
                    );
                }
                if probe == Probe::InstructionFidelity && self.attempts.is_some() {
                    return refuse("attempts", "instruction-fidelity makes exactly one call");
                }
                let Some(tool) = self.tool else {
                    return Err(Rejection::at(at, format!("a {name} case needs \"tool\"")));
                };
                vec![Step::check(at.clone(), tool, self.arguments, self.expect)?]
            }
        };
        Ok(Case {
            index,
            id: self.id,
            finding,
            probe,
            sandbox: self.sandbox,
            timeout_ms,
            attempts,
            steps,
        })
    }
}

impl Step {
    fn check(
        pointer: String,
        tool: String,
        arguments: Option<Value>,
        expect: Option<RawExpect>,
    ) -> Result<Step, Rejection> {
        if tool.is_empty() {
            return Err(Rejection::at(
                format!("{pointer}/tool"),
                "the tool name must not be empty",
            ));
        }
        let arguments = match arguments {
            None => Map::new(),
            Some(Value::Object(map)) => map,
            Some(_) => {
                return Err(Rejection::at(
                    format!("{pointer}/arguments"),
                    "must be an object of named arguments",
                ));
            }
        };
        let expect = match expect {
            None => Expect::ok(),
            Some(raw) => raw.check(&format!("{pointer}/expect"))?,
        };
        Ok(Step {
            pointer,
            tool,
            arguments,
            expect,
        })
    }
}

impl RawExpect {
    fn check(self, at: &str) -> Result<Expect, Rejection> {
        let field = |name: &str| format!("{at}/{name}");
        let Some(outcome) = Outcome::parse(&self.outcome) else {
            return Err(Rejection::at(
                field("outcome"),
                "must be \"ok\" or \"error\"",
            ));
        };
        if outcome == Outcome::Error {
            let ok_only = [
                (
                    "required_result_fields",
                    self.required_result_fields.is_some(),
                ),
                ("equals", self.equals.is_some()),
                (
                    "required_result_paths",
                    self.required_result_paths.is_some(),
                ),
                ("equals_paths", self.equals_paths.is_some()),
            ];
            if let Some((name, _)) = ok_only.iter().find(|(_, present)| *present) {
                return Err(Rejection::at(
                    field(name),
                    "only allowed with outcome \"ok\"; an expected error can check error_code",
                ));
            }
        } else if self.error_code.is_some() {
            return Err(Rejection::at(
                field("error_code"),
                "only allowed with outcome \"error\"",
            ));
        }
        if let Some(code) = self.error_code.filter(|&c| !crate::record::is_kept_code(c)) {
            return Err(Rejection::at(
                field("error_code"),
                format!(
                    "{code} is not a code a record keeps (capture and probe keep -32768 to \
                     -32000 and -9999 to 9999, and record any other code as none), so no run \
                     could match it; expect a code in those ranges, or any error"
                ),
            ));
        }

        let mut required_result_fields = self.required_result_fields.unwrap_or_default();
        for (i, key) in required_result_fields.iter().enumerate() {
            if key.is_empty() {
                return Err(Rejection::at(
                    format!("{}/{i}", field("required_result_fields")),
                    "must be a non-empty top-level key of structuredContent",
                ));
            }
        }
        let equals = self.equals.unwrap_or_default();
        for (key, value) in &equals {
            let at = format!("{}/{}", field("equals"), pointer_escape(key));
            if key.is_empty() {
                return Err(Rejection::at(
                    at,
                    "must be a non-empty top-level key of structuredContent",
                ));
            }
            check_equality_value(value, at)?;
        }
        let mut required_result_paths = self.required_result_paths.unwrap_or_default();
        for (i, path) in required_result_paths.iter().enumerate() {
            check_result_pointer(path, format!("{}/{i}", field("required_result_paths")))?;
        }
        let equals_paths = self.equals_paths.unwrap_or_default();
        for (path, value) in &equals_paths {
            let at = format!("{}/{}", field("equals_paths"), pointer_escape(path));
            check_result_pointer(path, at.clone())?;
            check_equality_value(value, at)?;
        }
        // Order and repetition in the required lists carry no meaning.
        required_result_fields.sort_unstable();
        required_result_fields.dedup();
        required_result_paths.sort_unstable();
        required_result_paths.dedup();
        Ok(Expect {
            outcome,
            required_result_fields,
            equals,
            required_result_paths,
            equals_paths,
            error_code: self.error_code,
        })
    }
}

/// Equality values are share-safe scalars: strings must be identifiers.
fn check_equality_value(value: &Value, at: String) -> Result<(), Rejection> {
    match value {
        Value::Object(_) | Value::Array(_) => Err(Rejection::at(
            at,
            "equality values must be scalars (string, number, boolean or null); nested objects and arrays are refused",
        )),
        Value::String(s) if !is_identifier(s) => Err(Rejection::at(
            at,
            format!(
                "a string equality value {IDENTIFIER_RULE}, so a shared manifest never carries free text"
            ),
        )),
        _ => Ok(()),
    }
}

/// A result path is an RFC 6901 JSON Pointer whose first segment is
/// `structuredContent` or `content`, with `~` only in `~0` and `~1`.
fn check_result_pointer(path: &str, at: String) -> Result<(), Rejection> {
    let first = path
        .strip_prefix('/')
        .map(|rest| rest.split('/').next().unwrap_or(""));
    if !matches!(first, Some("structuredContent" | "content")) {
        return Err(Rejection::at(
            at,
            "must be a JSON Pointer starting /structuredContent or /content",
        ));
    }
    let bytes = path.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'~' && !matches!(bytes.get(i + 1), Some(b'0' | b'1')) {
            return Err(Rejection::at(
                at,
                "a JSON Pointer may use ~ only as ~0 (for ~) or ~1 (for /)",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: &str = "finding-0123456789abcdef";

    fn manifest(cases: Value) -> String {
        json!({"manifest_version": 1,
               "sandboxes": {"fixture": {"declaration": "disposable copy; no network"}},
               "cases": cases})
        .to_string()
    }

    fn one(case: Value) -> Result<Manifest, Rejection> {
        Manifest::parse(&manifest(json!([case])))
    }

    fn rejected(case: Value) -> Rejection {
        one(case).expect_err("should be rejected")
    }

    fn literal() -> Value {
        json!({"id": "literal-status", "finding": F, "probe": "instruction-fidelity",
               "sandbox": "fixture", "tool": "get_status", "arguments": {"job": "job_1"},
               "expect": {"outcome": "ok", "equals_paths": {"/structuredContent/status": "ready"}}})
    }

    fn with(mut base: Value, key: &str, value: Value) -> Value {
        base[key] = value;
        base
    }

    #[test]
    fn the_spec_example_parses_with_defaults() {
        let m = Manifest::parse(&manifest(json!([
            literal(),
            {"id": "flaky-search", "finding": F, "probe": "degradation",
             "tool": "search", "arguments": {"q": "x"}, "attempts": 12},
            {"id": "create-then-read", "finding": F, "probe": "workflow",
             "steps": [{"tool": "create", "arguments": {"a": 1}, "expect": {"outcome": "ok"}},
                       {"tool": "read",
                        "expect": {"outcome": "ok", "required_result_paths": ["/structuredContent/item"]}}]}
        ])))
        .unwrap();
        assert_eq!(m.cases.len(), 3);
        let c = m.case("literal-status").unwrap();
        assert_eq!(
            (c.probe, c.timeout_ms, c.attempts),
            (Probe::InstructionFidelity, 10_000, None)
        );
        assert_eq!(c.steps[0].pointer, "/cases/0");
        let d = m.case("flaky-search").unwrap();
        assert_eq!((d.attempts, d.steps[0].tool.as_str()), (Some(12), "search"));
        let w = m.case("create-then-read").unwrap();
        assert_eq!(w.steps[1].pointer, "/cases/2/steps/1");
        assert_eq!(w.steps[1].arguments, Map::new());
        assert_eq!(
            w.steps[1].expect.required_result_paths,
            ["/structuredContent/item"]
        );
    }

    #[test]
    fn unknown_properties_are_rejected_at_every_level() {
        let top = Manifest::parse(r#"{"manifest_version":1,"cases":[],"extra":1}"#).unwrap_err();
        assert_eq!(top.pointer, "/extra");
        assert!(
            top.rule.starts_with("unknown field `extra`"),
            "{}",
            top.rule
        );
        let sandbox = Manifest::parse(
            r#"{"manifest_version":1,"sandboxes":{"s":{"declaration":"d","net":false}},"cases":[]}"#,
        )
        .unwrap_err();
        assert_eq!(sandbox.pointer, "/sandboxes/s/net");
        assert!(sandbox.rule.starts_with("unknown field `net`"));
        let case = rejected(with(literal(), "retries", json!(2)));
        assert_eq!(case.pointer, "/cases/0/retries");
        assert!(case.rule.starts_with("unknown field `retries`"));
        let expect = rejected(with(
            literal(),
            "expect",
            json!({"outcome": "ok", "status": "x"}),
        ));
        assert_eq!(expect.pointer, "/cases/0/expect/status");
        let step = Manifest::parse(&manifest(
            json!([{"id": "w", "finding": F, "probe": "workflow",
            "steps": [{"tool": "a", "when": 1}]}]),
        ))
        .unwrap_err();
        assert_eq!(step.pointer, "/cases/0/steps/0/when");
        assert!(step.rule.starts_with("unknown field `when`"));
    }

    #[test]
    fn type_errors_name_the_value() {
        let e = rejected(with(literal(), "timeout_ms", json!(1.5)));
        assert_eq!(e.pointer, "/cases/0/timeout_ms");
        assert!(
            e.rule.starts_with("invalid type: floating point"),
            "{}",
            e.rule
        );
        let syntax = Manifest::parse("{\"manifest_version\": 1,\n \"cases\": [}").unwrap_err();
        assert!(syntax.rule.contains("line 2"), "{}", syntax.rule);
    }

    #[test]
    fn version_ids_findings_and_probes() {
        let v = Manifest::parse(r#"{"manifest_version":2,"cases":[]}"#).unwrap_err();
        assert_eq!(
            v,
            Rejection::at(
                "/manifest_version",
                "unsupported manifest_version 2; this release reads version 1"
            )
        );
        let id = rejected(with(literal(), "id", json!("has space")));
        assert_eq!(id.pointer, "/cases/0/id");
        let finding = rejected(with(literal(), "finding", json!("finding-XYZ")));
        assert_eq!(finding.pointer, "/cases/0/finding");
        let probe = rejected(with(literal(), "probe", json!("fuzz")));
        assert_eq!(
            probe,
            Rejection::at(
                "/cases/0/probe",
                "must be one of instruction-fidelity, degradation, error-honesty, workflow"
            )
        );
        let dup = Manifest::parse(&manifest(json!([literal(), literal()]))).unwrap_err();
        assert_eq!(
            dup,
            Rejection::at(
                "/cases/1/id",
                "duplicate case id; ids must be unique (first at /cases/0/id)"
            )
        );
    }

    #[test]
    fn sandbox_timeout_attempts_and_shape() {
        let sb = rejected(with(literal(), "sandbox", json!("prod")));
        assert_eq!(sb.pointer, "/cases/0/sandbox");
        let empty = Manifest::parse(
            r#"{"manifest_version":1,"sandboxes":{"s":{"declaration":" "}},"cases":[]}"#,
        )
        .unwrap_err();
        assert_eq!(empty.pointer, "/sandboxes/s/declaration");
        assert_eq!(
            rejected(with(literal(), "timeout_ms", json!(0))).pointer,
            "/cases/0/timeout_ms"
        );
        assert_eq!(
            one(with(literal(), "timeout_ms", json!(250)))
                .unwrap()
                .cases[0]
                .timeout_ms,
            250
        );
        let deg = json!({"id": "d", "finding": F, "probe": "degradation", "tool": "t"});
        assert_eq!(
            rejected(with(deg.clone(), "attempts", json!(0))),
            Rejection::at("/cases/0/attempts", "must be from 1 to 1000")
        );
        assert_eq!(
            rejected(with(deg.clone(), "expect", json!({"outcome": "ok"}))).pointer,
            "/cases/0/expect"
        );
        assert_eq!(
            rejected(with(literal(), "attempts", json!(2))).pointer,
            "/cases/0/attempts"
        );
        assert_eq!(
            rejected(json!({"id": "d", "finding": F, "probe": "degradation"})),
            Rejection::at("/cases/0", "a degradation case needs \"tool\"")
        );
        assert_eq!(
            rejected(with(literal(), "arguments", json!([1]))),
            Rejection::at("/cases/0/arguments", "must be an object of named arguments")
        );
        let wf = json!({"id": "w", "finding": F, "probe": "workflow", "steps": []});
        assert_eq!(
            rejected(wf.clone()),
            Rejection::at("/cases/0/steps", "a workflow case needs at least one step")
        );
        assert_eq!(
            rejected(with(wf, "tool", json!("x"))).pointer,
            "/cases/0/tool"
        );
        assert_eq!(
            rejected(with(literal(), "steps", json!([]))).pointer,
            "/cases/0/steps"
        );
    }

    fn expect_err(expect: Value) -> Rejection {
        rejected(with(literal(), "expect", expect))
    }

    #[test]
    fn expectations_follow_their_outcome() {
        assert_eq!(
            expect_err(json!({"outcome": "maybe"})).pointer,
            "/cases/0/expect/outcome"
        );
        assert_eq!(
            expect_err(json!({"outcome": "error", "equals": {"a": 1}})),
            Rejection::at(
                "/cases/0/expect/equals",
                "only allowed with outcome \"ok\"; an expected error can check error_code"
            )
        );
        assert_eq!(
            expect_err(json!({"outcome": "ok", "error_code": -32602})).pointer,
            "/cases/0/expect/error_code"
        );
        let ok = one(with(
            literal(),
            "expect",
            json!({"outcome": "error", "error_code": -32602}),
        ))
        .unwrap();
        assert_eq!(ok.cases[0].steps[0].expect.error_code, Some(-32602));
        for kept in [-32768, -32000, -9999, 9999] {
            let case = with(
                literal(),
                "expect",
                json!({"outcome": "error", "error_code": kept}),
            );
            assert!(one(case).is_ok(), "{kept}");
        }
        for dropped in [-32769, -31999, -10000, 10000, 987654321] {
            assert_eq!(
                expect_err(json!({"outcome": "error", "error_code": dropped})).rule,
                format!(
                    "{dropped} is not a code a record keeps (capture and probe keep -32768 to \
                     -32000 and -9999 to 9999, and record any other code as none), so no run \
                     could match it; expect a code in those ranges, or any error"
                ),
                "{dropped}"
            );
        }
    }

    #[test]
    fn result_paths_are_pointers_into_the_result() {
        for bad in [
            "structuredContent/x",
            "/result/x",
            "/structuredContentX",
            "/content/~2",
            "/content/a~",
        ] {
            let e = expect_err(json!({"outcome": "ok", "required_result_paths": [bad]}));
            assert_eq!(
                e.pointer, "/cases/0/expect/required_result_paths/0",
                "{bad}"
            );
        }
        let e = expect_err(json!({"outcome": "ok", "equals_paths": {"/x/y": 1}}));
        assert_eq!(e.pointer, "/cases/0/expect/equals_paths/~1x~1y");
        for good in [
            "/structuredContent",
            "/content/0/text",
            "/structuredContent/a~1b/~0c",
        ] {
            one(with(
                literal(),
                "expect",
                json!({"outcome": "ok", "required_result_paths": [good]}),
            ))
            .unwrap_or_else(|e| panic!("{good}: {e:?}"));
        }
    }

    #[test]
    fn equality_values_are_share_safe() {
        let nested = expect_err(json!({"outcome": "ok", "equals": {"item": {"a": 1}}}));
        assert_eq!(nested.pointer, "/cases/0/expect/equals/item");
        assert!(
            nested
                .rule
                .contains("nested objects and arrays are refused")
        );
        let list = expect_err(json!({"outcome": "ok", "equals_paths": {"/content/0": [1]}}));
        assert_eq!(list.pointer, "/cases/0/expect/equals_paths/~1content~10");
        let prose = expect_err(json!({"outcome": "ok", "equals": {"msg": "Job done!"}}));
        assert!(
            prose.rule.contains("must be an identifier"),
            "{}",
            prose.rule
        );
        for s in ["", &"x".repeat(129)] {
            assert_eq!(
                expect_err(json!({"outcome": "ok", "equals": {"k": s}})).pointer,
                "/cases/0/expect/equals/k"
            );
        }
        one(with(
            literal(),
            "expect",
            json!({"outcome": "ok", "equals": {"a": "job_1.v2:ok-x", "b": 3, "c": null, "d": false}}),
        ))
        .unwrap();
    }

    #[test]
    fn identifiers() {
        assert!(is_identifier("A-z_0.9:x"));
        assert!(is_identifier(&"a".repeat(128)));
        for bad in ["", "a b", "a/b", "é", "a\n", &"a".repeat(129)] {
            assert!(!is_identifier(bad), "{bad:?}");
        }
    }

    #[test]
    fn placeholders_are_listed_by_pointer() {
        let m = Manifest::parse(&manifest(json!([
            with(literal(), "arguments", json!({"job": "<fill:string>", "n": 1,
                "opts": {"a/b": ["x", "<fill:integer>"]}})),
            {"id": "w", "finding": F, "probe": "workflow",
             "steps": [{"tool": "a"}, {"tool": "b", "arguments": {"id": "<fill:string>"}}]}
        ])))
        .unwrap();
        assert_eq!(
            m.cases[0].placeholders(),
            ["/cases/0/arguments/job", "/cases/0/arguments/opts/a~1b/1"]
        );
        assert_eq!(m.cases[1].placeholders(), ["/cases/1/steps/1/arguments/id"]);
        assert!(one(literal()).unwrap().cases[0].placeholders().is_empty());
    }

    #[test]
    fn canonical_ignores_formatting_order_defaults_and_other_cases() {
        let a = one(literal()).unwrap();
        let reordered = r#"{
            "cases": [ { "expect": {"equals_paths": {"/structuredContent/status": "ready"}, "outcome": "ok"},
                "arguments": {"job": "job_1"}, "tool": "get_status", "sandbox": "fixture",
                "probe": "instruction-fidelity", "finding": "finding-0123456789abcdef",
                "timeout_ms": 10000, "id": "literal-status" },
              { "id": "other", "finding": "finding-0123456789abcdef", "probe": "degradation", "tool": "x" } ],
            "sandboxes": {"fixture": {"declaration": "disposable copy; no network"}},
            "manifest_version": 1 }"#;
        let b = Manifest::parse(reordered).unwrap();
        let canon = a.cases[0].canonical();
        assert_eq!(canon, b.case("literal-status").unwrap().canonical());
        assert_eq!(
            canon,
            r#"{"arguments":{"job":"job_1"},"attempts":null,"expect":{"equals_paths":{"/structuredContent/status":"ready"},"outcome":"ok"},"finding":"finding-0123456789abcdef","id":"literal-status","probe":"instruction-fidelity","sandbox":"fixture","timeout_ms":10000,"tool":"get_status"}"#
        );
        let longer = one(with(literal(), "timeout_ms", json!(20000))).unwrap();
        assert_ne!(canon, longer.cases[0].canonical());
    }

    #[test]
    fn oracle_minimum() {
        let plain_ok = with(literal(), "expect", json!({"outcome": "ok"}));
        assert!(!one(plain_ok.clone()).unwrap().cases[0].has_oracle());
        assert!(one(literal()).unwrap().cases[0].has_oracle());
        let error = with(literal(), "expect", json!({"outcome": "error"}));
        assert!(one(error).unwrap().cases[0].has_oracle());
        let deg = json!({"id": "d", "finding": F, "probe": "degradation", "tool": "t"});
        assert!(!one(deg).unwrap().cases[0].has_oracle());
        let wf = json!({"id": "w", "finding": F, "probe": "workflow", "steps": [
            {"tool": "create"},
            {"tool": "read", "expect": {"outcome": "ok", "required_result_fields": ["item"]}}]});
        assert!(one(wf).unwrap().cases[0].has_oracle());
    }

    #[test]
    fn judging_a_result() {
        let expect = Expect::parse(
            r#"{"outcome":"ok","required_result_fields":["count"],"equals":{"status":"ready"},
                "required_result_paths":["/content/0/text","/structuredContent/nothing"],
                "equals_paths":{"/structuredContent/a~1b":33,"/structuredContent/nothing":null}}"#,
        )
        .unwrap();
        let good = json!({"content": [{"type": "text", "text": "hi"}],
            "structuredContent": {"count": 0, "status": "ready", "nothing": null, "a/b": 33.0}});
        assert_eq!(expect.first_unmet(&good), None);
        let mut missing = good.clone();
        missing["structuredContent"]
            .as_object_mut()
            .unwrap()
            .remove("nothing");
        assert_eq!(
            expect.first_unmet(&missing),
            Some(Unmet::Missing("/structuredContent/nothing".into()))
        );
        let mut differs = good.clone();
        differs["structuredContent"]["status"] = json!("pending");
        assert_eq!(
            expect.first_unmet(&differs),
            Some(Unmet::NotEqual("/structuredContent/status".into()))
        );
        let mut not_null = good.clone();
        not_null["structuredContent"]["nothing"] = json!(0);
        assert_eq!(
            expect.first_unmet(&not_null),
            Some(Unmet::NotEqual("/structuredContent/nothing".into()))
        );
        assert_eq!(
            expect.first_unmet(&json!({"content": []})),
            Some(Unmet::Missing("/structuredContent/count".into()))
        );
    }

    #[test]
    fn expect_files_are_limited_and_strict() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("expect.json");
        std::fs::write(
            &path,
            r#"{"outcome":"ok","equals_paths":{"/structuredContent/status":"ready"}}"#,
        )
        .unwrap();
        let e = Expect::parse_file(&Input::new(&path)).unwrap();
        assert_eq!(e.equals_paths.len(), 1);
        std::fs::write(&path, r#"{"outcome":"ok","note":"x"}"#).unwrap();
        let err = Expect::parse_file(&Input::new(&path)).unwrap_err();
        assert_eq!(err.status(), crate::exit::REJECTED);
        assert_eq!(
            err.message(),
            format!(
                "{}: at /note: unknown field `note`, expected one of `outcome`, \
                 `required_result_fields`, `equals`, `required_result_paths`, `equals_paths`, \
                 `error_code` at line 1 column 22",
                path.display()
            )
        );
        std::fs::write(
            &path,
            format!(r#"{{"outcome":"ok"{}}}"#, " ".repeat(65 * 1024)),
        )
        .unwrap();
        let big = Expect::parse_file(&Input::new(&path)).unwrap_err();
        assert_eq!(
            big.message(),
            format!(
                "{}: larger than 64 KiB; expect files are limited to 65536 bytes",
                path.display()
            )
        );
    }

    #[test]
    fn manifest_files_are_limited_to_one_mebibyte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let mut text = manifest(json!([literal()]));
        std::fs::write(&path, &text).unwrap();
        assert_eq!(Manifest::load(&Input::new(&path)).unwrap().cases.len(), 1);
        text.push_str(&" ".repeat(1024 * 1024));
        std::fs::write(&path, &text).unwrap();
        let err = Manifest::load(&Input::new(&path)).unwrap_err();
        assert_eq!(err.status(), crate::exit::REJECTED);
        assert_eq!(
            err.message(),
            format!(
                "{}: larger than 1 MiB; manifests are limited to 1048576 bytes",
                path.display()
            )
        );
        let missing = Manifest::load(&Input::new(dir.path().join("nope.json"))).unwrap_err();
        assert_eq!(missing.status(), crate::exit::REJECTED);
    }

    #[test]
    fn a_number_reads_back_as_the_same_number() {
        // Found by fuzzing: 2^64 + 2^52 parsed to a float one unit off, so
        // the canonical text (what credit is bound to) changed once written
        // and read again. serde_json now parses floats exactly.
        let expect =
            Expect::parse(r#"{"outcome":"ok","equals":{"e":118446744073709551616}}"#).unwrap();
        let canonical = expect.to_value();
        let again = Expect::parse(&canonical.to_string()).unwrap();
        assert_eq!(again.to_value(), canonical);
        assert_eq!(
            canonical["equals"]["e"].as_f64(),
            Some(118446744073709551616.0)
        );
    }
}
