//! Journal lines rebuilt from `index.db`'s `calls` rows, as a store that
//! receives another machine's rows does it, index to exactly those rows
//! and to the same findings.

use std::fs;

use rusqlite::types::Value as Sql;
use rusqlite::{Connection, OpenFlags};
use serde_json::json;
use shared::record::{Columns, line_from_columns};

use crate::dump;
use crate::records::{Rec, event, legacy, template, write};
use crate::support::{Store, private_dir, repo, text};

/// The promotion time every store is promoted at.
const FIXED: &str = "2026-12-07T07:00:02.123Z";

/// A `calls` row read back, owning its text.
struct Row {
    journal: String,
    line: i64,
    schema: i64,
    event_id: Option<String>,
    session: String,
    seq: i64,
    origin: String,
    transport: Option<String>,
    server: String,
    tool: String,
    started_at: String,
    duration_ms: Option<i64>,
    advertised: Option<bool>,
    args_shape: String,
    outcome: String,
    unknown: Option<String>,
    channel: Option<String>,
    code: Option<i64>,
    template_id: Option<String>,
    retryable: Option<bool>,
    contract_kept: Option<bool>,
    contract_at: Option<String>,
    contract_keyword: Option<String>,
}

impl Row {
    fn columns(&self) -> Columns<'_> {
        Columns {
            schema: self.schema,
            event_id: self.event_id.as_deref(),
            session: &self.session,
            seq: self.seq,
            origin: &self.origin,
            transport: self.transport.as_deref(),
            server: &self.server,
            tool: &self.tool,
            started_at: &self.started_at,
            duration_ms: self.duration_ms,
            advertised: self.advertised,
            args_shape: &self.args_shape,
            outcome: &self.outcome,
            unknown: self.unknown.as_deref(),
            channel: self.channel.as_deref(),
            code: self.code,
            template_id: self.template_id.as_deref(),
            retryable: self.retryable,
            contract_kept: self.contract_kept,
            contract_at: self.contract_at.as_deref(),
            contract_keyword: self.contract_keyword.as_deref(),
        }
    }
}

fn open(store: &Store) -> Connection {
    Connection::open_with_flags(
        store.home().join("index.db"),
        OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap()
}

/// Every calls row with its journal's name, in `id` order.
fn rows(store: &Store) -> Vec<Row> {
    let db = open(store);
    let mut stmt = db.prepare(&dump::calls_query()).unwrap();
    stmt.query_map([], |r| {
        Ok(Row {
            journal: r.get(0)?,
            line: r.get(1)?,
            schema: r.get(2)?,
            event_id: r.get(3)?,
            session: r.get(4)?,
            seq: r.get(5)?,
            origin: r.get(6)?,
            transport: r.get(7)?,
            server: r.get(8)?,
            tool: r.get(9)?,
            started_at: r.get(10)?,
            duration_ms: r.get(11)?,
            advertised: r.get(12)?,
            args_shape: r.get(13)?,
            outcome: r.get(14)?,
            unknown: r.get(15)?,
            channel: r.get(16)?,
            code: r.get(17)?,
            template_id: r.get(18)?,
            retryable: r.get(19)?,
            contract_kept: r.get(20)?,
            contract_at: r.get(21)?,
            contract_keyword: r.get(22)?,
        })
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

/// The whole calls table, every column, in `id` order.
fn calls_table(store: &Store) -> (Vec<String>, Vec<Vec<Sql>>) {
    let db = open(store);
    let mut stmt = db.prepare("SELECT * FROM calls ORDER BY id").unwrap();
    let names: Vec<String> = stmt.column_names().iter().map(|n| n.to_string()).collect();
    let width = names.len();
    let table = stmt
        .query_map([], |r| (0..width).map(|i| r.get::<_, Sql>(i)).collect())
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    (names, table)
}

fn ok(store: &Store, args: &[&str]) -> String {
    let out = store.cmd("mcpeval").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "mcpeval {args:?}: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// Indexes `store` and promotes it at [`FIXED`]; returns the findings JSON.
fn index_promote_findings(store: &Store) -> String {
    ok(store, &["index"]);
    ok(store, &["promote", "--now", FIXED]);
    ok(store, &["findings", "--format", "json"])
}

/// Current records the seed corpus lacks: probe calls, unanswered and
/// malformed outcomes, errors without code or template, unknown
/// advertisement, and fields the index rewrites into its stored form (an
/// upper-case event id, a time zone offset, unsorted shape keys).
fn current_extras() -> String {
    let mut lines = String::new();
    let mut probe = Rec::error(9001, 9001, 1, "forecast", None).probe();
    probe.0["error"]["retryable"] = json!(true);
    probe.0["advertised"] = json!(null);
    lines += &probe.line();
    lines += &Rec::unanswered(9002, 9001, 2, "forecast").line();
    let mut malformed = Rec::ok(9003, 9001, 3, "alerts");
    malformed.0["outcome"] = json!("unknown");
    malformed.0["unknown"] = json!("malformed");
    malformed.0["transport"] = json!("http");
    lines += &malformed.line();
    let mut jsonrpc = Rec::error(9004, 9002, 1, "route", Some(77)).server("maps");
    jsonrpc.0["error"]["channel"] = json!("jsonrpc");
    jsonrpc.0["error"]["code"] = json!(-32602);
    jsonrpc.0["error"]["retryable"] = json!(null);
    lines += &jsonrpc.line();
    // As some writer spelled them: the index stores them rewritten.
    let rewritten = Rec::error(9005, 9002, 2, "route", Some(77))
        .server("maps")
        .line()
        .replace(&event(9005), &event(9005).to_uppercase())
        .replace("T07:00:02.123Z", "T08:00:02.123+01:00")
        .replace(
            r#"{"city":"string","days":"integer"}"#,
            r#"{ "days": "integer", "city": "string", "opts": {"z": ["null"], "a": "boolean"} }"#,
        );
    assert!(rewritten.contains("+01:00") && rewritten.contains("6F1C2A3B"));
    lines += &rewritten;
    lines += &Rec::ok(9006, 9002, 3, "route").server("maps").line();
    lines
}

/// Legacy records of every kind legacy capture wrote, a session of them
/// failing twice in a row so that they make a window, and one with a
/// time stamp in another form.
fn legacy_records() -> String {
    let mut lines = String::new();
    for s in [9101, 9102] {
        lines += &legacy(s, 1, "weather", "forecast", "error", Some(-32603));
        lines += &legacy(s, 2, "weather", "forecast", "error", None);
        lines += &legacy(s, 3, "weather", "forecast", "ok", None);
        lines += &legacy(s, 4, "weather", "alerts", "unknown", None);
    }
    let mut full: serde_json::Value =
        serde_json::from_str(&legacy(9103, 1, "maps", "route", "error", Some(-32602))).unwrap();
    full["template_id"] = json!(template(78));
    full["retryable"] = json!(false);
    full["ts"] = json!("2026-11-30T08:00:00+01:00");
    full["args_shape"] = json!({"from": "string", "stops": ["string"]});
    lines += &format!("{full}\n");
    let mut retry = full.clone();
    retry["seq"] = json!(2);
    retry["retryable"] = json!(true);
    retry["err_code"] = json!(null);
    lines += &format!("{retry}\n");
    lines
}

#[test]
fn journal_lines_rebuilt_from_index_rows_index_to_the_same_rows() {
    // Store A: the bundled seed corpus, and records it does not have.
    let a = Store::new();
    let journals = a.home().join("journals");
    private_dir(&journals);
    for entry in fs::read_dir(repo().join("corpus/seed/journals")).unwrap() {
        let path = entry.unwrap().path();
        fs::copy(&path, journals.join(path.file_name().unwrap())).unwrap();
    }
    write(&a, 1, &current_extras());
    write(&a, 2, &legacy_records());
    let mixed = format!(
        "{}{}",
        legacy(9201, 1, "jobs", "list_jobs", "error", Some(-1)),
        Rec::error(9202, 9202, 1, "list_jobs", Some(79))
            .server("jobs")
            .line()
    );
    write(&a, 3, &mixed);
    let findings_a = index_promote_findings(&a);

    // Store B: each journal of A written back from A's rows, line for line.
    let rows = rows(&a);
    let b = Store::new();
    let rebuilt = b.home().join("journals");
    private_dir(&rebuilt);
    let mut files: Vec<(String, String)> = Vec::new();
    let mut schemas = [0usize; 2];
    for row in &rows {
        if files.last().is_none_or(|(name, _)| *name != row.journal) {
            files.push((row.journal.clone(), String::new()));
        }
        let (name, text) = files.last_mut().unwrap();
        assert_eq!(
            row.line,
            text.lines().count() as i64 + 1,
            "{name}: a line of A was not indexed"
        );
        let line = line_from_columns(&row.columns())
            .unwrap_or_else(|e| panic!("{name} line {}: {e}", row.line));
        assert!(!line.contains('\n'));
        text.push_str(&line);
        text.push('\n');
        schemas[row.schema as usize] += 1;
    }
    assert!(schemas[0] >= 10 && schemas[1] > 8000, "{schemas:?}");
    let mut names: Vec<String> = fs::read_dir(&journals)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".jsonl"))
        .collect();
    names.sort();
    assert_eq!(
        files.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>(),
        names,
        "every journal of A has rows"
    );
    for (name, rebuilt_text) in &files {
        let original = fs::read_to_string(journals.join(name)).unwrap();
        assert_eq!(
            original.lines().count(),
            rebuilt_text.lines().count(),
            "{name}: every line of A is a row"
        );
        fs::write(rebuilt.join(name), rebuilt_text).unwrap();
    }
    // The same salt, so that finding ids agree.
    fs::copy(a.home().join(".salt"), b.home().join(".salt")).unwrap();
    let findings_b = index_promote_findings(&b);

    let (names_a, table_a) = calls_table(&a);
    let (names_b, table_b) = calls_table(&b);
    assert_eq!(names_a, names_b);
    assert_eq!(names_a.len(), 22, "{names_a:?}");
    assert_eq!(table_a.len(), table_b.len(), "calls rows");
    for (ra, rb) in table_a.iter().zip(&table_b) {
        for ((name, va), vb) in names_a.iter().zip(ra).zip(rb) {
            assert_eq!(va, vb, "column {name} of calls row {:?}", ra[0]);
        }
    }

    // Everything but when each store was promoted (the clock, not `--now`).
    let listed = |json: &str| {
        let mut value: serde_json::Value = serde_json::from_str(json).unwrap();
        let promoted_at = value.as_object_mut().unwrap().remove("promoted_at");
        assert!(promoted_at.is_some_and(|t| t.is_string()), "{json}");
        value
    };
    let (listed_a, listed_b) = (listed(&findings_a), listed(&findings_b));
    assert!(
        listed_a["findings"].as_array().unwrap().len() >= 5,
        "{findings_a}"
    );
    assert_eq!(listed_a, listed_b, "findings of A and B");
}
