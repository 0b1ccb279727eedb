//! Names that GitHub-flavoured markdown would turn into links, mentions,
//! issue references, emphasis, HTML or extra table columns, through every
//! markdown the suite writes (`findings --format md`, `readiness --format
//! md`, the issue files of `export-issues`), rendered by a real GFM
//! renderer (cmark-gfm, the one github.com is built on): no link comes out
//! at all, and every name is the text of a `<code>` element, which GitHub
//! never links, mentions or references from.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::records::{self, Rec};
use crate::seeded::{ok, set_state};
use crate::support::{Deps, Store, repo, text};

/// Server names: a bare domain (GFM's `www.` autolink), raw HTML, and a
/// markdown link with code, a pipe, emphasis and underscores.
const SERVERS: [&str; 3] = [
    "www.evil-beacon.example",
    "<a href=\"http://e.example/s\">x</a>",
    "[x](http://e.example/l) `tick` | *b* _u_",
];

/// Tool names: an e-mail autolink, a mention, an issue reference, runs of
/// backticks, escaped and bare pipes, emphasis and strikethrough, a link, a
/// bare URL, an image tag, math and entities, a leading backtick, and the
/// other references GitHub makes (`GH-12`, `owner/repo#34`, a commit SHA).
const TOOLS: [&str; 12] = [
    "x@evil.example",
    "@octocat",
    "see #1234 now",
    "a`b``c",
    "pipe|name\\|x",
    "*bold* __u__ ~~s~~",
    "[x](http://e.example/t)",
    "https://evil.example/x",
    "<img src=x onerror=alert(1)>",
    "$\\sqrt{2}$ &amp; &#x41;",
    "` lead",
    "GH-12 owner/repo#34 1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b",
];

/// Argument keys as a shape carries them (declared keys are kept as is).
fn shape() -> Value {
    json!({"[k](http://e.example/k)": "string", "@octocat": "integer", "www.e.example": "boolean"})
}

/// Pieces of the names that must never be outside a `<code>` element.
const FRAGMENTS: [&str; 9] = [
    "evil",
    "e.example",
    "octocat",
    "1234",
    "onerror",
    "sqrt",
    "tick",
    "GH-12",
    "1a2b3c4d",
];

/// A store with a failing tool of each hostile name, on the servers in
/// turn, failing in two sessions, indexed and promoted.
fn hostile_markdown_store() -> Store {
    let store = Store::new();
    let mut recs = Vec::new();
    let mut event = 0;
    for (i, tool) in TOOLS.iter().enumerate() {
        let server = SERVERS[i % SERVERS.len()];
        for session in 1..=2 {
            for ok in [false, true] {
                event += 1;
                let seq = event;
                let mut rec = if ok {
                    Rec::ok(event, session, seq, tool)
                } else {
                    Rec::error(event, session, seq, tool, Some(1))
                };
                rec.0["args_shape"] = shape();
                recs.push(rec.server(server));
            }
        }
    }
    records::write(&store, 1, &records::lines(&recs));
    ok(&store, "mcpeval-index", &[]);
    ok(&store, "mcpeval-promote", &["--threshold", "0"]);
    // One finding verifying, so readiness shows its line apart.
    let json: Value =
        serde_json::from_str(&ok(&store, "mcpeval-findings", &["--format", "json"])).unwrap();
    let verifying = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["tool"] == "see #1234 now")
        .unwrap();
    set_state(&store, verifying["id"].as_str().unwrap(), "verifying");
    store
}

/// What cmark-gfm made of one markdown file.
struct Rendered {
    file: String,
    elements: Vec<String>,
    code: Vec<String>,
    text: String,
    html: String,
}

/// Renders each file with `tests/clients/gfm_render.py`.
fn render(files: &[PathBuf]) -> Vec<Rendered> {
    let out = Command::new(Deps::python())
        .arg(repo().join("tests/clients/gfm_render.py"))
        .args(files)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_owned())
            .collect()
    };
    text(&out.stdout)
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).unwrap();
            Rendered {
                file: v["file"].as_str().unwrap().to_owned(),
                elements: strings(&v["elements"]),
                code: strings(&v["code"]),
                text: strings(&v["text"]).join("\u{0}"),
                html: v["html"].as_str().unwrap().to_owned(),
            }
        })
        .collect()
}

/// Asserts `doc` has no link and no element a name could have made, that
/// no piece of a name is outside a code element, and that each of `names`
/// is the whole text of one.
fn names_only_as_code(doc: &Rendered, names: &[&str]) {
    let what = &doc.file;
    for tag in ["a", "img", "script", "del"] {
        assert!(
            !doc.elements.iter().any(|e| e == tag),
            "{what}: a <{tag}> element:\n{}",
            doc.html
        );
    }
    for piece in FRAGMENTS {
        assert!(
            !doc.text.contains(piece),
            "{what}: {piece:?} outside <code>: {:?}\n{}",
            doc.text,
            doc.html
        );
    }
    for name in names {
        assert!(
            doc.code.iter().any(|c| c == name),
            "{what}: {name:?} is not the text of a <code>: {:?}\n{}",
            doc.code,
            doc.html
        );
    }
}

fn write(store: &Store, name: &str, content: &str) -> PathBuf {
    let path = store.scratch().join(name);
    std::fs::write(&path, content).unwrap();
    path
}

fn file_name(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

#[test]
fn hostile_names_are_code_in_every_markdown_rendering() {
    let store = hostile_markdown_store();
    let mut files = vec![
        write(
            &store,
            "findings.md",
            &ok(&store, "mcpeval-findings", &["--format", "md"]),
        ),
        write(
            &store,
            "readiness.md",
            &ok(
                &store,
                "mcpeval-readiness",
                &[
                    "--format",
                    "md",
                    "--days",
                    "2",
                    "--now",
                    "2026-11-30T12:00:00Z",
                ],
            ),
        ),
    ];
    let dir = store.scratch().join("issues");
    ok(
        &store,
        "mcpeval-export-issues",
        &["--dir", dir.to_str().unwrap()],
    );
    let mut issues: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    issues.sort();
    assert_eq!(issues.len(), TOOLS.len());
    files.extend(issues);

    let docs = render(&files);
    assert_eq!(docs.len(), files.len());
    let all: Vec<&str> = SERVERS.iter().chain(&TOOLS).copied().collect();
    for doc in &docs {
        let names: Vec<&str> = match file_name(Path::new(&doc.file)).as_str() {
            // Every server and tool: in the table, the headings, the
            // reasons.
            "findings.md" | "readiness.md" => all.clone(),
            // An issue names its own tool and server (in its title).
            _ => {
                let i = TOOLS
                    .iter()
                    .position(|t| doc.code.iter().any(|c| c == t))
                    .unwrap_or_else(|| panic!("{}: no tool in code\n{}", doc.file, doc.html));
                vec![TOOLS[i], SERVERS[i % SERVERS.len()]]
            }
        };
        names_only_as_code(doc, &names);
    }
    // The argument shape's keys are code too, in the findings and issues.
    let findings = &docs[0];
    assert!(
        findings
            .code
            .iter()
            .any(|c| c.contains("\"[k](http://e.example/k)\":\"string\"")),
        "{}",
        findings.html
    );
    // Each finding's argument-shape label (its shape, cut) is code too:
    // in the table, in its heading and in each issue's title.
    let label = "{\"@octocat\":\"integer\",\"[k](http://e.example/k)\"…";
    let labels = |doc: &Rendered| doc.code.iter().filter(|c| *c == label).count();
    assert_eq!(labels(findings), 2 * TOOLS.len(), "{}", findings.html);
    assert!(docs[2..].iter().all(|d| labels(d) == 1), "{}", docs[2].html);
    // The verifying finding's line names its tool as code too.
    let readiness = &docs[1];
    assert!(
        readiness
            .html
            .contains("Verifying, not counted against the verdict:")
            && readiness
                .html
                .contains("on <code>see #1234 now</code>: verifying"),
        "{}",
        readiness.html
    );
    // The tables kept their columns: cmark-gfm drops cells past the
    // header's count, which would cut a name, so each row's names are
    // whole (checked above) and in the server / tool column.
    assert!(
        findings.html.contains(
            "<td><code>www.evil-beacon.example</code> / <code>x@evil.example</code></td>"
        ),
        "{}",
        findings.html
    );
}
