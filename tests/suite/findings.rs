//! `mcpeval-findings` for people and agents: near-duplicate findings of
//! one tool (one per error template, which is never shown) told apart by
//! the part of their argument shapes that differs, and grouped under one
//! heading per tool in md.

use crate::seeded::{near_duplicates, ok};

/// The labels of the three `get-sum` findings, most failures first: the
/// key every one shares (`round`) is left out as `…`.
const LABELS: [&str; 3] = [
    r#"{"a":"string","b":"number",…}"#,
    r#"{"a":"number","b":"string",…}"#,
    r#"{"a":"number",…}"#,
];

#[test]
fn near_duplicate_findings_are_told_apart_in_md_and_grouped_by_tool() {
    let store = near_duplicates();
    let md = ok(&store, "mcpeval-findings", &["--format", "md"]);
    // The table: a row per finding, ranked, each get-sum row with its label.
    let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| medium")).collect();
    assert_eq!(rows.len(), 4, "{md}");
    let get_sum: Vec<&str> = rows
        .iter()
        .copied()
        .filter(|r| r.contains("| `everything` / `get-sum` |"))
        .collect();
    for (row, label) in get_sum.iter().zip(LABELS) {
        assert!(row.contains(&format!("| `{label}` |")), "{row}");
    }
    assert!(
        rows[1].contains("| `everything` / `echo` | `{\"message\":\"string\"}` |"),
        "a tool alone keeps its whole shape: {}",
        rows[1]
    );
    // The sections: one heading per tool, in the order of its best
    // finding, and under it one per finding, each named by its label.
    let headings: Vec<&str> = md.lines().filter(|l| l.starts_with("##")).collect();
    let want = [
        "## `everything` / `get-sum`".to_owned(),
        format!(": invalid-arguments, arguments `{}`", LABELS[0]),
        format!(": invalid-arguments, arguments `{}`", LABELS[1]),
        format!(": invalid-arguments, arguments `{}`", LABELS[2]),
        "## `everything` / `echo`".to_owned(),
        ": internal-error, arguments `{\"message\":\"string\"}`".to_owned(),
    ];
    assert_eq!(headings.len(), want.len(), "{headings:#?}");
    for (got, want) in headings.iter().zip(&want) {
        if want.starts_with("## ") {
            assert_eq!(got, want);
        } else {
            assert!(
                got.starts_with("### `finding-") && got.ends_with(want.as_str()),
                "{got}"
            );
        }
    }
    insta::assert_snapshot!("near_duplicates_md", store.redact_ids(&md));
}

#[test]
fn near_duplicate_findings_are_told_apart_in_the_agent_format() {
    let store = near_duplicates();
    let agent = ok(&store, "mcpeval-findings", &["--format", "agent"]);
    let first: Vec<&str> = agent
        .lines()
        .filter(|l| {
            l.split_once(". ")
                .is_some_and(|(n, _)| n.parse::<u32>().is_ok())
        })
        .collect();
    assert_eq!(first.len(), 4, "{agent}");
    let labelled: Vec<&str> = first
        .iter()
        .filter(|l| l.contains("[invalid-arguments;"))
        .map(|l| l.split_once("] arguments ").unwrap().1)
        .collect();
    assert_eq!(labelled, LABELS, "{agent}");
    insta::assert_snapshot!("near_duplicates_agent", store.redact_ids(&agent));
}
