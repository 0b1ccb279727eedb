//! The six tools: their schemas, and what each call does.
//!
//! Every tool runs the suite's command for it (see `siblings.rs`), so
//! each rule has the one implementation the CLI uses: the reading tools
//! (`list_findings`, `get_finding`) read `mcpeval-findings --format json`,
//! whose findings hold nothing raw; the others relay their command. Arguments
//! are checked against the advertised schema and a wrong one is named in
//! an isError result, never guessed at. What a client may write and run
//! is bounded by the user's flags (see `workspace.rs`, `allowlist.rs`),
//! and the annotations say which tools only read.

use std::ffi::OsString;
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;

use serde_json::{Map, Value, json};
use shared::Error;
use shared::escape::{self, quoted, terminal};

use crate::args::Config;
use crate::failure::Failure;
use crate::siblings::{self, Ran};

use shared::id::FindingId;
use store::lifecycle::{Kind, State};
use store::verification::GREENS_TO_CLOSE;

/// The names a client may give, as the lifecycle spells them.
fn spelled_list<T: Copy>(all: &[T], name: fn(T) -> &'static str) -> String {
    all.iter().map(|&v| name(v)).collect::<Vec<_>>().join(", ")
}

/// The tool names, in the order `tools/list` gives them.
pub fn names() -> impl Iterator<Item = &'static str> {
    [
        "list_findings",
        "get_finding",
        "generate_manifest",
        "verify_finding",
        "annotate_call",
        "readiness",
    ]
    .into_iter()
}

fn finding_schema() -> Value {
    let s = json!({"type": "string"});
    let n = json!({"type": "number"});
    let i = json!({"type": "integer"});
    json!({
        "type": "object",
        "properties": {
            "id": {"type": "string", "pattern": "^finding-[0-9a-f]{16}$"},
            "kind": {"enum": ["error", "malformed", "false-success", "contract"]},
            "server": s, "tool": s, "defect_class": s, "fix_hint": s,
            "severity": {"enum": ["high", "medium", "low"]},
            "score": n, "failures": i, "calls": i, "failure_rate": n, "wilson_lower": n,
            "sessions": i, "first_seen": s, "last_seen": s, "median_window_turns": n,
            "blast_radius": i, "err_code": {"type": ["integer", "null"]},
            "err_codes": {"type": "array", "items": i},
            "retryable": {"type": ["boolean", "null"]},
            "args_shapes": {"type": "array"},
            "state": {"enum": State::ALL}, "streak": i, "probe_attached": {"type": "boolean"},
            "reopened": i,
            "contract": {"type": "object",
                         "properties": {"at": s, "keyword": s},
                         "required": ["at", "keyword"],
                         "description": "a contract-violation finding's first violation: a JSON Pointer into structuredContent and the schema keyword that failed"},
            "witnessed": {"type": ["boolean", "null"],
                          "description": "for a finding closed by verification: whether the same case ran red on the same target before its closing streak"}
        },
        "required": ["id", "kind", "server", "tool", "defect_class", "fix_hint", "severity",
                     "score", "failures", "calls", "state", "streak", "probe_attached"]
    })
}

/// The relayed command's facts, shared by the tools that run one.
fn relay_properties() -> Map<String, Value> {
    let mut p = Map::new();
    p.insert(
        "exit_status".into(),
        json!({"type": "integer", "description": "the command's exit status (see `mcpeval help`)"}),
    );
    p.insert("stdout".into(), json!({"type": "string"}));
    p.insert("stderr".into(), json!({"type": "string"}));
    p
}

fn relay_schema(extra: Value) -> Value {
    let mut props = relay_properties();
    if let Value::Object(more) = extra {
        props.extend(more);
    }
    json!({"type": "object", "properties": props, "required": ["exit_status", "stdout", "stderr"]})
}

/// `tools/list`'s tools.
pub fn definitions() -> Vec<Value> {
    let id = json!({"type": "string", "pattern": "^finding-[0-9a-f]{16}$", "description": "a finding id, as list_findings shows it"});
    vec![
        json!({
            "name": "list_findings",
            "title": "List findings",
            "description": "The promoted findings, highest score first: recurring tool failures with their figures, defect class, fix hint, argument shapes and lifecycle state. Empty (with a note) before the first index.",
            "inputSchema": {"type": "object", "properties": {
                "state": {"type": "array", "items": {"enum": State::ALL}, "description": "only findings in these states"},
                "server": {"type": "array", "items": {"type": "string"}, "description": "only findings of these servers"}
            }, "additionalProperties": false},
            "outputSchema": {"type": "object", "properties": {
                "findings": {"type": "array", "items": finding_schema()},
                "note": {"type": "string"}
            }, "required": ["findings"]},
            "annotations": {"title": "List findings", "readOnlyHint": true, "openWorldHint": false}
        }),
        json!({
            "name": "get_finding",
            "title": "Get one finding",
            "description": "One finding by id, with every figure `mcpeval findings --format json` gives.",
            "inputSchema": {"type": "object", "properties": {"id": id}, "required": ["id"], "additionalProperties": false},
            "outputSchema": {"type": "object", "properties": {"finding": finding_schema()}, "required": ["finding"]},
            "annotations": {"title": "Get one finding", "readOnlyHint": true, "openWorldHint": false}
        }),
        json!({
            "name": "generate_manifest",
            "title": "Generate a manifest case",
            "description": "Runs `mcpeval generate` for a finding and returns the one-case manifest it made (case id = finding id); with output, also writes it into serve's workspace. The same rules apply: confirm_read_only must be true; a false-success finding needs expect. Fill every \"<fill:TYPE>\" placeholder before verify_finding.",
            "inputSchema": {"type": "object", "properties": {
                "finding": id,
                "confirm_read_only": {"type": "boolean", "description": "confirm the probe's calls are safe to repeat against the server (required by generate)"},
                "expect": {"type": "object", "description": "an expect object (outcome, equals_paths, ...), passed as generate's --expect file"},
                "output": {"type": "string", "description": "where to write the manifest: a path relative to serve's workspace, with no \"..\" and no symbolic link on the way; without it, only the returned copy exists"},
                "force": {"type": "boolean", "description": "replace an existing output file; only a file that is an mcpeval manifest is ever replaced"}
            }, "required": ["finding", "confirm_read_only"], "additionalProperties": false},
            "outputSchema": relay_schema(json!({
                "manifest": {"type": ["object", "null"], "description": "the manifest written, when generate succeeded"},
                "output": {"type": ["string", "null"]}
            })),
            "annotations": {"title": "Generate a manifest case", "readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": false}
        }),
        json!({
            "name": "verify_finding",
            "title": "Verify a fix",
            "description": "Runs `mcpeval verify`: starts the server command, runs the manifest case and records the result in the finding's lifecycle (three green runs in a row close it; a red run reopens it). Returns the verify line. Only a command the user allowed when starting serve (--allow-command) runs; relative paths are taken from serve's workspace.",
            "inputSchema": {"type": "object", "properties": {
                "finding": id,
                "case": {"type": "string", "description": "the case id (default: the finding id, as generate_manifest names it)"},
                "manifest": {"type": "string", "description": "path of the manifest file"},
                "command": {"type": "array", "items": {"type": "string"}, "minItems": 1, "description": "the server command and its arguments; an allowed command, word for word, may be followed by more arguments"}
            }, "required": ["finding", "manifest", "command"], "additionalProperties": false},
            "outputSchema": relay_schema(json!({})),
            "annotations": {"title": "Verify a fix", "readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true}
        }),
        json!({
            "name": "annotate_call",
            "title": "Annotate a call",
            "description": "Runs `mcpeval annotate`: stores a bounded observation about one captured call (by event_id, or session and seq for legacy records). false-success annotations that recur become findings. Never put credentials, private paths or payload fragments in the note.",
            "inputSchema": {"type": "object", "properties": {
                "event_id": {"type": "string", "description": "the call's identity.event_id"},
                "session": {"type": "string", "description": "legacy records: the session token"},
                "seq": {"type": "integer", "minimum": 1, "description": "legacy records: the turn"},
                "kind": {"enum": Kind::ALL},
                "note": {"type": "string", "maxLength": 240}
            }, "required": ["kind", "note"], "additionalProperties": false},
            "outputSchema": relay_schema(json!({"annotation_id": {"type": ["integer", "null"]}})),
            "annotations": {"title": "Annotate a call", "readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": false}
        }),
        json!({
            "name": "readiness",
            "title": "Readiness",
            "description": "Runs `mcpeval readiness --format json`: per server, recent daily failure rates per tool, open and fix-claimed findings by severity, a verdict (ready, at-risk, not-ready) with its reasons, and the verifying findings, which are shown but never count against the verdict.",
            "inputSchema": {"type": "object", "properties": {
                "days": {"type": "integer", "minimum": 1, "maximum": 366},
                "server": {"type": "array", "items": {"type": "string"}}
            }, "additionalProperties": false},
            "outputSchema": relay_schema(json!({"report": {"type": ["object", "null"]}})),
            "annotations": {"title": "Readiness", "readOnlyHint": true, "openWorldHint": false}
        }),
    ]
}

/// Runs tool `name`; `None` when there is no such tool.
pub fn call(config: &Config, name: &str, args: &Map<String, Value>) -> Option<Value> {
    let known: &[&str] = match name {
        "list_findings" => &["state", "server"],
        "get_finding" => &["id"],
        "generate_manifest" => &["finding", "confirm_read_only", "expect", "output", "force"],
        "verify_finding" => &["finding", "case", "manifest", "command"],
        "annotate_call" => &["event_id", "session", "seq", "kind", "note"],
        "readiness" => &["days", "server"],
        _ => return None,
    };
    if let Some(extra) = args.keys().find(|k| !known.contains(&k.as_str())) {
        let failure = Failure::arguments(format!(
            "unknown argument {extra:?}; {name} takes {}",
            known.join(", ")
        ));
        return Some(failed(failure.to_string()));
    }
    let outcome = match name {
        "list_findings" => list_findings(config, args),
        "get_finding" => get_finding(config, args),
        "generate_manifest" => generate_manifest(config, args),
        "verify_finding" => verify_finding(config, args),
        "annotate_call" => annotate_call(config, args),
        _ => readiness(config, args),
    };
    Some(outcome.unwrap_or_else(|failure| failed(failure.to_string())))
}

/// A successful result: structured content and its text rendering.
fn ok(structured: Value, text: String) -> Value {
    json!({"content": [{"type": "text", "text": text}], "structuredContent": structured, "isError": false})
}

/// A tool error with the words a person would read on stderr.
fn failed(text: String) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}

// --- arguments ------------------------------------------------------------

fn string(args: &Map<String, Value>, key: &str) -> Result<Option<String>, Failure> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(Failure::arguments(format!("{key} must be a string"))),
    }
}

fn required(args: &Map<String, Value>, key: &str) -> Result<String, Failure> {
    string(args, key)?.ok_or_else(|| Failure::arguments(format!("{key} is required")))
}

fn strings(args: &Map<String, Value>, key: &str) -> Result<Vec<String>, Failure> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| Failure::arguments(format!("{key} must be an array of strings")))
            })
            .collect(),
        Some(_) => Err(Failure::arguments(format!(
            "{key} must be an array of strings"
        ))),
    }
}

fn boolean(args: &Map<String, Value>, key: &str) -> Result<bool, Failure> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(Failure::arguments(format!("{key} must be true or false"))),
    }
}

fn finding_id(args: &Map<String, Value>, key: &str) -> Result<FindingId, Failure> {
    let id = required(args, key)?;
    FindingId::parse(&id).map_err(|_| {
        Failure::arguments(format!(
            "{key} {id:?} is not a {} ({})",
            FindingId::KIND,
            FindingId::FORM
        ))
    })
}

// --- reading tools --------------------------------------------------------

/// What `mcpeval-findings --format json ARGS…` lists, with the
/// explanation it gives for an empty answer; its own words when it fails.
fn findings(config: &Config, args: &[OsString]) -> Result<(Vec<Value>, String), Failure> {
    let mut argv: Vec<OsString> = vec!["--format".into(), "json".into()];
    argv.extend_from_slice(args);
    let ran = run(config, "findings", &argv)?;
    if ran.status != 0 {
        return Err(Failure::Relayed(both(&ran)));
    }
    let listed = serde_json::from_str::<Value>(&ran.stdout)
        .ok()
        .and_then(|mut v| match v["findings"].take() {
            Value::Array(findings) => Some(findings),
            _ => None,
        })
        .ok_or_else(|| {
            Error::rejected(
                "mcpeval-findings printed no findings object; \
                 install mcpeval-serve and its siblings from the same release",
            )
        })?;
    Ok((listed, ran.stderr.trim_end().to_owned()))
}

fn list_findings(config: &Config, args: &Map<String, Value>) -> Result<Value, Failure> {
    let states = strings(args, "state")?;
    if let Some(bad) = states.iter().find(|s| State::parse(s).is_none()) {
        return Err(Failure::arguments(format!(
            "state {bad:?} is not one of {}",
            spelled_list(&State::ALL, State::as_str)
        )));
    }
    let servers = strings(args, "server")?;
    // A team's findings are in its database, whatever this store holds;
    // findings says so when the store joined a team but names none.
    if !team::belongs(&config.home)? && !config.home.index_db().exists() {
        let note = "no findings: no index yet; run `mcpeval index` and `mcpeval promote`";
        return Ok(ok(json!({"findings": [], "note": note}), note.to_owned()));
    }
    let mut filters = Vec::new();
    for (flag, values) in [("--state", &states), ("--server", &servers)] {
        for value in values {
            filters.push(OsString::from(flag));
            filters.push(OsString::from(value));
        }
    }
    let (findings, why) = findings(config, &filters)?;
    if findings.is_empty() {
        return Ok(ok(json!({"findings": [], "note": why}), why));
    }
    let text = findings.iter().map(summary).collect::<Vec<_>>().join("\n");
    Ok(ok(json!({"findings": findings}), text))
}

/// A field of a finding as text, for the summaries.
fn field(f: &Value, key: &str) -> String {
    match &f[key] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A numeric field of a finding, shown as Rust shows the number.
fn number(f: &Value, key: &str) -> f64 {
    f[key].as_f64().unwrap_or(f64::NAN)
}

/// One line per finding for the text rendering. It is read by an agent,
/// so names are quoted literals (as in `findings --format agent`) and can
/// never start a line, and the id is shown escaped.
fn summary(f: &Value) -> String {
    format!(
        "{} [{}; severity {}, score {:.3}, state {}] {} / {}: {} of {} calls failed in {} sessions. Fix: {}",
        terminal(&field(f, "id")),
        terminal(&field(f, "defect_class")),
        terminal(&field(f, "severity")),
        number(f, "score"),
        terminal(&field(f, "state")),
        quoted(&field(f, "server")),
        quoted(&field(f, "tool")),
        field(f, "failures"),
        field(f, "calls"),
        field(f, "sessions"),
        terminal(&field(f, "fix_hint"))
    )
}

fn get_finding(config: &Config, args: &Map<String, Value>) -> Result<Value, Failure> {
    let id = finding_id(args, "id")?;
    let (findings, _) = findings(config, &[])?;
    let finding = findings
        .into_iter()
        .find(|f| f["id"] == id.as_str())
        .ok_or_else(|| {
            Error::usage(format!(
                "no finding {id} in this store; list_findings shows the ids"
            ))
        })?;
    let text = format!(
        "{}\nargument shapes: {}\nlast seen {}; windows of median {} turns; blast radius {}",
        summary(&finding),
        escape::to_json(&finding["args_shapes"]).unwrap_or_default(),
        terminal(&field(&finding, "last_seen")),
        number(&finding, "median_window_turns"),
        field(&finding, "blast_radius")
    );
    Ok(ok(json!({"finding": finding}), text))
}

// --- tools that run a command ---------------------------------------------

/// The relayed facts; isError unless the status is one of `fine`.
fn relayed(ran: &Ran, fine: &[i32], mut structured: Value, text: String) -> Value {
    structured["exit_status"] = json!(ran.status);
    structured["stdout"] = json!(ran.stdout);
    structured["stderr"] = json!(ran.stderr);
    let is_error = !fine.contains(&ran.status);
    json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": structured,
        "isError": is_error
    })
}

/// Text of a relayed command: stdout, then stderr.
fn both(ran: &Ran) -> String {
    let mut text = ran.stdout.clone();
    if !ran.stderr.is_empty() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&ran.stderr);
    }
    text.trim_end().to_owned()
}

/// A private scratch directory, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Scratch, Failure> {
        let dir =
            std::env::temp_dir().join(format!("mcpeval-serve-{}", uuid::Uuid::new_v4().simple()));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|e| Error::io(format_args!("cannot create {}", dir.display()), e))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `mcpeval-<sub>` for this store, in the workspace.
fn run(config: &Config, sub: &str, argv: &[OsString]) -> Result<Ran, Failure> {
    let ran = siblings::run(sub, &config.home, config.workspace.root(), argv)?;
    Ok(ran)
}

fn generate_manifest(config: &Config, args: &Map<String, Value>) -> Result<Value, Failure> {
    let finding = finding_id(args, "finding")?;
    let confirm = boolean(args, "confirm_read_only")?;
    let force = boolean(args, "force")?;
    let output = string(args, "output")?;
    // The output is checked before anything runs, and generate writes to
    // a private scratch file: only serve writes into the workspace, along
    // the path it checked (see workspace.rs).
    let target = output
        .as_deref()
        .map(|o| config.workspace.target(o, force))
        .transpose()?;
    let scratch = Scratch::new()?;
    let made = scratch.0.join(format!("{finding}.manifest.json"));
    let mut argv: Vec<OsString> = vec!["--finding".into(), finding.as_str().into()];
    if confirm {
        argv.push("--confirm-read-only".into());
    }
    match args.get("expect") {
        None | Some(Value::Null) => {}
        Some(expect @ Value::Object(_)) => {
            let file = scratch.0.join("expect.json");
            std::fs::write(&file, expect.to_string())
                .map_err(|e| Error::io(format_args!("cannot write {}", file.display()), e))?;
            argv.push("--expect".into());
            argv.push(file.into());
        }
        Some(_) => return Err(Failure::arguments("expect must be an object")),
    }
    argv.push("--output".into());
    argv.push(made.clone().into());
    let mut ran = run(config, "generate", &argv)?;
    let bytes = (ran.status == 0)
        .then(|| std::fs::read(&made).ok())
        .flatten();
    if let (Some(target), Some(bytes)) = (&target, &bytes) {
        target.install(bytes, force)?;
        // generate named the scratch file it wrote; the manifest now
        // lives at the target, and that is the path to tell.
        let (from, to) = (
            made.display().to_string(),
            target.shown.display().to_string(),
        );
        ran.stdout = ran.stdout.replace(&from, &to);
        ran.stderr = ran.stderr.replace(&from, &to);
    }
    let manifest = bytes.and_then(|b| serde_json::from_slice::<Value>(&b).ok());
    let mut text = both(&ran);
    if let Some(m) = &manifest {
        text.push_str("\n\n");
        text.push_str(&serde_json::to_string_pretty(m).unwrap_or_default());
    }
    let structured = json!({"manifest": manifest, "output": output});
    Ok(relayed(&ran, &[0], structured, text))
}

fn verify_finding(config: &Config, args: &Map<String, Value>) -> Result<Value, Failure> {
    let finding = finding_id(args, "finding")?;
    let case = string(args, "case")?.unwrap_or_else(|| finding.to_string());
    let manifest = required(args, "manifest")?;
    let command = strings(args, "command")?;
    if command.is_empty() {
        return Err(Failure::arguments(
            "command must name the server command and its arguments",
        ));
    }
    if !config.commands.permits(&command) {
        // The command came from the client: shown as JSON, escaped.
        return Err(Error::usage(format!(
            "the command {} is not allowed; nothing was run",
            serde_json::to_string(&command).unwrap_or_default(),
        ))
        .with_hint(format!(
            "verify_finding runs only a command that starts with one the user allowed \
             by starting serve with --allow-command 'CMD ARGS' (allowed now: {})",
            config.commands.describe()
        ))
        .into());
    }
    let mut argv: Vec<OsString> = vec![
        "--finding".into(),
        finding.as_str().into(),
        "--case".into(),
        case.into(),
        "--manifest".into(),
        manifest.into(),
        "--".into(),
    ];
    argv.extend(command.into_iter().map(OsString::from));
    let ran = run(config, "verify", &argv)?;
    // A red run (1) is a verdict, not a failure of the tool.
    Ok(relayed(&ran, &[0, 1], json!({}), both(&ran)))
}

fn annotate_call(config: &Config, args: &Map<String, Value>) -> Result<Value, Failure> {
    let kind = required(args, "kind")?;
    if Kind::parse(&kind).is_none() {
        return Err(Failure::arguments(format!(
            "kind {kind:?} is not one of {}",
            spelled_list(&Kind::ALL, Kind::as_str)
        )));
    }
    let note = required(args, "note")?;
    let mut argv: Vec<OsString> = Vec::new();
    if let Some(event) = string(args, "event_id")? {
        argv.extend(["--event-id".into(), event.into()]);
    }
    if let Some(session) = string(args, "session")? {
        argv.extend(["--session".into(), session.into()]);
    }
    match args.get("seq") {
        None | Some(Value::Null) => {}
        Some(Value::Number(n)) if n.as_u64().is_some() => {
            argv.extend(["--seq".into(), n.to_string().into()]);
        }
        Some(_) => return Err(Failure::arguments("seq must be a positive integer")),
    }
    argv.extend(["--kind".into(), kind.into(), "--note".into(), note.into()]);
    let ran = run(config, "annotate", &argv)?;
    let id = ran
        .stdout
        .trim()
        .parse::<i64>()
        .ok()
        .filter(|_| ran.status == 0);
    Ok(relayed(
        &ran,
        &[0],
        json!({"annotation_id": id}),
        both(&ran),
    ))
}

fn readiness(config: &Config, args: &Map<String, Value>) -> Result<Value, Failure> {
    let mut argv: Vec<OsString> = vec!["--format".into(), "json".into()];
    match args.get("days") {
        None | Some(Value::Null) => {}
        Some(Value::Number(n)) if n.as_u64().is_some() => {
            argv.extend(["--days".into(), n.to_string().into()]);
        }
        Some(_) => return Err(Failure::arguments("days must be an integer from 1 to 366")),
    }
    for server in strings(args, "server")? {
        argv.extend(["--server".into(), server.into()]);
    }
    let ran = run(config, "readiness", &argv)?;
    let report = (ran.status == 0)
        .then(|| serde_json::from_str::<Value>(&ran.stdout).ok())
        .flatten();
    let text = match &report {
        Some(r) => readiness_text(r),
        None => both(&ran),
    };
    Ok(relayed(&ran, &[0], json!({"report": report}), text))
}

/// One line per server of a readiness report, then one indented line per
/// verifying finding, which is shown but never a reason. The server and
/// tool names are quoted literals; the reasons, sentences that may hold a
/// tool name, are shown with every control character escaped, so nothing
/// starts a line.
fn readiness_text(report: &Value) -> String {
    let mut lines = Vec::new();
    for s in report["servers"].as_array().into_iter().flatten() {
        let reasons: Vec<_> = s["reasons"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(terminal)
            .collect();
        lines.push(format!(
            "{}: {} ({})",
            quoted(s["server"].as_str().unwrap_or("")),
            terminal(s["verdict"].as_str().unwrap_or("")),
            reasons.join("; ")
        ));
        for v in s["verifying"].as_array().into_iter().flatten() {
            lines.push(format!(
                "  verifying, not counted: {} finding {} on {}, streak {}/{GREENS_TO_CLOSE}",
                terminal(v["severity"].as_str().unwrap_or("")),
                terminal(v["id"].as_str().unwrap_or("")),
                quoted(v["tool"].as_str().unwrap_or("")),
                v["streak"].as_u64().unwrap_or(0),
            ));
        }
    }
    if lines.is_empty() {
        "no captured calls in these days and no open findings".to_owned()
    } else {
        lines.join("\n")
    }
}
