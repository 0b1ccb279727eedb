//! `mcpeval-report`: the page as a browser shows it. Each page is rendered
//! by headless Chromium (installed by `scripts/test-deps`): the DOM it
//! builds, the console's Content-Security-Policy complaints, and a
//! screenshot's pixels.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use assert_cmd::prelude::*;
use predicates::prelude::*;
use serde_json::Value;

use crate::records::{self, Rec};
use crate::support::{SYSTEM_PATH, Store, bin_dir, repo, text};
use crate::verify::Bench;

/// The seed corpus is charted as of this time: its last captured day is
/// the last day of the window.
const SEED_NOW: &str = "2026-10-31T12:00:00Z";

/// Journals written by `records` are on 2026-11-30.
const RECORDS_NOW: &str = "2026-11-30T12:00:00Z";

/// The policy the page must declare.
const CSP: &str = "default-src 'none'";

fn chromium() -> PathBuf {
    ["/usr/bin", "/usr/local/bin", "/bin"]
        .iter()
        .map(|d| Path::new(d).join("chromium"))
        .find(|p| p.exists())
        .expect("chromium is missing: run scripts/test-deps (it installs Debian's chromium)")
}

/// Runs headless Chromium on `page` with `extra` flags, in a private
/// profile and environment; returns its output and how long it took.
fn browse(scratch: &Path, page: &Path, extra: &[&str]) -> (Output, Duration) {
    let profile = scratch.join("chromium-profile");
    let started = Instant::now();
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .env_clear()
        .env("HOME", scratch)
        .env("PATH", SYSTEM_PATH)
        .env("LANG", "C.UTF-8")
        .output()
        .unwrap();
    let took = started.elapsed();
    assert!(out.status.success(), "chromium: {}", text(&out.stderr));
    (out, took)
}

/// The DOM Chromium built from `page`, and what its console said.
fn render(scratch: &Path, page: &Path) -> (String, String, Duration) {
    let (out, took) = browse(scratch, page, &["--dump-dom"]);
    (text(&out.stdout), text(&out.stderr), took)
}

/// The console lines in which the browser refused something the page
/// asked for under its policy.
fn csp_complaints(console: &str) -> Vec<&str> {
    console
        .lines()
        .filter(|l| l.contains("Content Security Policy") || l.contains("Refused to"))
        .collect()
}

/// A screenshot of `page`'s first `width`×`height` pixels as RGB triples.
fn screenshot(scratch: &Path, page: &Path, width: u32, height: u32) -> (PathBuf, Vec<[u8; 3]>) {
    let png = scratch.join("shot.png");
    browse(
        scratch,
        page,
        &[
            &format!("--screenshot={}", png.display()),
            &format!("--window-size={width},{height}"),
        ],
    );
    let mut decoder = png::Decoder::new(std::fs::File::open(&png).unwrap());
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let frame = reader.next_frame(&mut buf).unwrap();
    assert_eq!((frame.width, frame.height), (width, height));
    let channels = frame.color_type.samples();
    let pixels = buf[..frame.buffer_size()]
        .chunks(channels)
        .map(|p| match channels {
            1 | 2 => [p[0]; 3],
            _ => [p[0], p[1], p[2]],
        })
        .collect();
    (png, pixels)
}

/// The tags of `dom`, with every quoted attribute value emptied: what
/// is left is markup (elements and their attribute names), never text.
fn elements(dom: &str) -> String {
    let (mut out, mut in_tag, mut quote) = (String::new(), false, None);
    for c in dom.chars() {
        match (in_tag, quote) {
            (false, _) if c != '<' => continue,
            (false, _) => in_tag = true,
            (true, Some(q)) if c != q => continue,
            (true, Some(_)) => quote = None,
            (true, None) if c == '"' || c == '\'' => quote = Some(c),
            (true, None) if c == '>' => in_tag = false,
            _ => {}
        }
        out.push(c);
    }
    out
}

fn share(pixels: &[[u8; 3]], colour: [u8; 3]) -> f64 {
    pixels.iter().filter(|p| **p == colour).count() as f64 / pixels.len() as f64
}

/// Runs `mcpeval-report --output PAGE ARGS…` and returns the page.
fn report(store: &Store, args: &[&str]) -> (PathBuf, String) {
    let page = store.scratch().join("report.html");
    store
        .bin("mcpeval-report")
        .arg("--output")
        .arg(&page)
        .args(args)
        .assert()
        .success();
    let html = std::fs::read_to_string(&page).unwrap();
    (page, html)
}

fn succeed(store: &Store, bin: &str, args: &[&str]) -> String {
    let out = store.bin(bin).args(args).assert().success();
    text(&out.get_output().stdout)
}

/// The seed corpus in a fresh store, annotated as its labels say, then
/// indexed and promoted as of its labels' time.
fn seed_store() -> Store {
    let store = Store::new();
    let seed = repo().join("corpus/seed");
    let dir = store.home().join("journals");
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(seed.join("journals")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
    }
    let read = |name: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(seed.join(name)).unwrap()).unwrap()
    };
    for a in read("annotations.json").as_array().unwrap() {
        let id = a["event_id"].as_str().unwrap();
        let args = [
            "--event-id",
            id,
            "--kind",
            "false-success",
            "--note",
            "seed",
        ];
        succeed(&store, "mcpeval-annotate", &args);
    }
    let labels = read("labels.json");
    succeed(&store, "mcpeval-index", &[]);
    let as_of = labels["as_of"].as_str().unwrap();
    succeed(&store, "mcpeval-promote", &["--now", as_of]);
    store
}

/// One rate chart in a DOM: its server and tool (as escaped in the
/// attributes), the count it declares, and the points it draws.
#[derive(Debug, PartialEq)]
struct Chart {
    server: String,
    tool: String,
    declared: usize,
    drawn: usize,
}

fn attr(tag: &str, name: &str) -> String {
    let key = format!(" {name}=\"");
    let at = tag
        .find(&key)
        .unwrap_or_else(|| panic!("no {name} in {tag}"))
        + key.len();
    tag[at..at + tag[at..].find('"').unwrap()].to_owned()
}

fn charts(dom: &str) -> Vec<Chart> {
    dom.split("<svg class=\"rate-chart\"")
        .skip(1)
        .map(|chunk| {
            let svg = &chunk[..chunk.find("</svg>").unwrap()];
            let tag = &svg[..svg.find('>').unwrap()];
            Chart {
                server: attr(tag, "data-server"),
                tool: attr(tag, "data-tool"),
                declared: attr(tag, "data-points").parse().unwrap(),
                drawn: svg.matches("class=\"pt\"").count()
                    + svg.matches("class=\"pt over\"").count(),
            }
        })
        .collect()
}

/// The readiness the report must chart: (server, tool, days with calls).
fn expected_charts(store: &Store, now: &str) -> Vec<(String, String, usize)> {
    let out = succeed(
        store,
        "mcpeval-readiness",
        &["--format", "json", "--days", "30", "--now", now],
    );
    let r: Value = serde_json::from_str(&out).unwrap();
    let mut want = Vec::new();
    for s in r["servers"].as_array().unwrap() {
        for t in s["tools"].as_array().unwrap() {
            let days = t["daily"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["calls"].as_u64().unwrap() > 0)
                .count();
            want.push((
                s["server"].as_str().unwrap().to_owned(),
                t["tool"].as_str().unwrap().to_owned(),
                days,
            ));
        }
    }
    want
}

#[test]
fn the_seed_corpus_page_has_a_chart_per_tool_and_renders_under_its_policy() {
    let store = seed_store();
    let (page, html) = report(&store, &["--now", SEED_NOW]);
    let (dom, console, took) = render(store.scratch(), &page);

    // One chart per tool, each with a point per day that had calls.
    let want = expected_charts(&store, SEED_NOW);
    assert_eq!(want.len(), 24, "the seed corpus has 24 tools");
    let got = charts(&dom);
    let got_keys: Vec<(String, String, usize)> = got
        .iter()
        .map(|c| (c.server.clone(), c.tool.clone(), c.drawn))
        .collect();
    assert_eq!(got_keys, want);
    assert!(got.iter().all(|c| c.declared == c.drawn), "{got:#?}");
    assert!(want.iter().any(|w| w.2 > 10), "some tool has many points");

    // The page declares the policy, the browser kept it and complained
    // of nothing, and nothing on the page points outside it.
    assert!(
        dom.contains(&format!(
            "<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP};"
        )),
        "{}",
        &dom[..dom.len().min(600)]
    );
    assert_eq!(csp_complaints(&console), Vec::<&str>::new());
    assert!(!elements(&dom).contains("<script"));
    for outside in ["<script", "http:", "https:", "src=", "@import", "url("] {
        assert!(!html.contains(outside), "the page holds {outside:?}");
    }
    assert_eq!(
        dom.matches("<article class=\"finding\"").count(),
        serde_json::from_str::<Value>(&succeed(&store, "mcpeval-findings", &["--format", "json"]))
            .unwrap()["findings"]
            .as_array()
            .unwrap()
            .len()
    );

    // The screenshot is a page, styled: card and chart colours are there.
    let (png, pixels) = screenshot(store.scratch(), &page, 1000, 1400);
    let mut colours: Vec<[u8; 3]> = pixels.clone();
    colours.sort_unstable();
    colours.dedup();
    assert!(colours.len() > 50, "{} colours", colours.len());
    assert!(share(&pixels, [0xf5, 0xf5, 0xf2]) > 0.2, "server cards");
    assert!(share(&pixels, [0x00, 0x72, 0xb2]) > 0.0005, "chart points");
    if let Some(target) = std::env::var_os("MCPEVAL_REPORT_SCREENSHOT") {
        std::fs::copy(&png, target).unwrap();
    }

    let blank = store.scratch().join("blank.html");
    std::fs::write(&blank, "<!DOCTYPE html><title>blank</title>").unwrap();
    let (_, _, baseline) = render(store.scratch(), &blank);
    println!(
        "seed corpus report: {} bytes ({} KiB); headless Chromium loads it to the DOM in {:.2} s \
         (an empty page, the browser's own start-up: {:.2} s)",
        html.len(),
        html.len() / 1024,
        took.as_secs_f64(),
        baseline.as_secs_f64(),
    );
}

const HOSTILE_SERVER: &str =
    "<script>alert(1)</script>\"x' onmouseover='alert(2)\nline two\u{1b}[31m";
const HOSTILE_TOOL: &str = "<img src=x onerror=alert(3)>";

#[test]
fn a_hostile_server_name_shows_as_text() {
    let store = Store::new();
    let mut recs = Vec::new();
    for session in 1..=2 {
        for seq in 1..=6 {
            let rec = if seq % 2 == 0 {
                Rec::error(session * 100 + seq, session, seq, HOSTILE_TOOL, Some(1))
            } else {
                Rec::ok(session * 100 + seq, session, seq, HOSTILE_TOOL)
            };
            recs.push(rec.server(HOSTILE_SERVER));
        }
    }
    records::write(&store, 1, &records::lines(&recs));
    succeed(&store, "mcpeval-index", &[]);
    succeed(
        &store,
        "mcpeval-promote",
        &["--threshold", "0", "--now", RECORDS_NOW],
    );
    let (page, html) = report(&store, &["--now", RECORDS_NOW]);

    assert!(!html.contains('\u{1b}'), "no raw escape byte");
    for raw in [
        HOSTILE_SERVER,
        HOSTILE_TOOL,
        "<script",
        "<img",
        "line two\u{1b}",
    ] {
        assert!(!html.contains(raw), "the page holds {raw:?} raw");
    }
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;&quot;x&#39; onmouseover=&#39;alert(2)\\nline two\\u{1b}[31m"));

    let (dom, console, _) = render(store.scratch(), &page);
    assert_eq!(csp_complaints(&console), Vec::<&str>::new());
    let markup = elements(&dom);
    assert!(!markup.contains("<script"), "a script element in the DOM");
    assert!(!markup.contains("<img"), "an img element in the DOM");
    assert!(!markup.contains(" onmouseover=") && !markup.contains(" onerror="));
    // The name is text: it reads as written, in the heading and the table.
    assert!(dom.contains(
        "&lt;script&gt;alert(1)&lt;/script&gt;\"x' onmouseover='alert(2)\\nline two\\u{1b}[31m"
    ));
    assert!(dom.contains("&lt;img src=x onerror=alert(3)&gt;"));
    let got = charts(&dom);
    assert_eq!(got.len(), 1, "{got:#?}");
    assert_eq!(got[0].drawn, 1);
}

#[test]
fn the_history_shows_red_and_green_runs_and_the_reopening() {
    let bench = Bench::new();
    bench.red();
    bench.green();
    bench.red(); // verifying → open: a reopening
    bench.green();
    let store = &bench.store;

    let history: Value = serde_json::from_str(&succeed(
        store,
        "mcpeval-findings",
        &["--history", "--format", "json"],
    ))
    .unwrap();
    let entry = &history["history"][0];
    assert_eq!(entry["finding"], bench.finding.as_str());
    let results: Vec<&str> = entry["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["result"].as_str().unwrap())
        .collect();
    assert_eq!(results, ["red", "green", "red", "green"]);
    let events: Vec<(&str, &str, bool)> = entry["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["event"].as_str().unwrap(),
                e["to"].as_str().unwrap(),
                e["reopened"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        events,
        [
            ("promoted", "open", false),
            ("verified", "fix-claimed", false),
            ("verified", "verifying", false),
            ("verified", "open", true),
            ("verified", "verifying", false),
        ]
    );
    assert_eq!(
        (entry["state"].as_str(), entry["reopened"].as_u64()),
        (Some("verifying"), Some(1))
    );

    let (page, _) = report(store, &["--now", RECORDS_NOW]);
    let (dom, _, _) = render(store.scratch(), &page);
    let at = dom.find("<svg class=\"timeline\"").expect("a timeline");
    let svg = &dom[at..at + dom[at..].find("</svg>").unwrap()];
    let tag = &svg[..svg.find('>').unwrap()];
    assert_eq!(attr(tag, "data-finding"), bench.finding);
    assert_eq!(attr(tag, "data-runs"), "4");
    assert_eq!(attr(tag, "data-reopenings"), "1");
    assert_eq!(svg.matches("class=\"run green\"").count(), 2);
    assert_eq!(svg.matches("class=\"run red\"").count(), 2);
    assert_eq!(svg.matches("class=\"reopen\"").count(), 1);
    assert!(dom.contains("4 runs: 2 red, 2 green; reopened 1 time."));
}

/// After one green run the finding is verifying (and high, with its probe
/// attached): the server's card lists it apart, with its streak, never
/// among the open findings, and shows readiness's verdict, which that run
/// did not make worse.
#[test]
fn a_verifying_finding_is_shown_apart_from_the_open_ones() {
    let bench = Bench::new();
    bench.green();
    let out = bench
        .store
        .cmd("mcpeval-report")
        .args([
            "--output",
            "-",
            "--now",
            "2026-12-01T12:00:00Z",
            "--days",
            "3",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let page = text(&out.stdout);
    assert!(
        page.contains("· 1 finding, 0 open, 1 verifying</p>"),
        "{page}"
    );
    let card = &page[page.find("<section class=\"server\"").unwrap()..];
    let card = &card[..card.find("</section>").unwrap()];
    assert!(card.contains("<span class=\"verdict v-ready\">"), "{card}");
    assert!(
        card.contains(&format!(
            r##"<p class="verifying">Verifying, not counted: <a href="#{}">status <code class="shape">{{&quot;city&quot;:&quot;string&quot;,&quot;days&quot;:&quot;integer&quot;}}</code></a> <span class="sev sev-high">high</span>, streak 1/3</p>"##,
            bench.finding
        )),
        "{card}"
    );
    let open = &card[card.find("<p class=\"open\">").unwrap()..];
    let open = &open[..open.find("</p>").unwrap()];
    assert!(!open.contains("<a "), "no open finding is linked: {open}");
}

/// The `get-sum` findings of `seeded::near_duplicates`, most failures
/// first, as the page labels them.
const GET_SUM_LABELS: [&str; 3] = [
    "{&quot;a&quot;:&quot;string&quot;,&quot;b&quot;:&quot;number&quot;,…}",
    "{&quot;a&quot;:&quot;number&quot;,&quot;b&quot;:&quot;string&quot;,…}",
    "{&quot;a&quot;:&quot;number&quot;,…}",
];

/// Three findings of one tool: the server's card, the table and the
/// history name each with the part of its argument shape that differs,
/// and the history groups them under one heading for the tool.
#[test]
fn near_duplicate_findings_are_labelled_and_grouped_by_tool() {
    let store = crate::seeded::near_duplicates();
    let (_, html) = report(&store, &["--now", crate::seeded::NEAR_NOW]);
    let shape = |label: &str| format!(r#"<code class="shape">{label}</code>"#);
    let echo = shape("{&quot;message&quot;:&quot;string&quot;}");

    // The card: the open findings, a tool's side by side, each labelled.
    let open = &html[html.find("<p class=\"open\">").unwrap()..];
    let open = &open[..open.find("</p>").unwrap()];
    let links: Vec<&str> = open
        .split("<a href=\"#")
        .skip(1)
        .map(|a| &a[a.find('>').unwrap() + 1..a.find("</a>").unwrap()])
        .collect();
    let want: Vec<String> = GET_SUM_LABELS
        .iter()
        .map(|l| format!("get-sum {}", shape(l)))
        .chain([format!("echo {echo}")])
        .collect();
    assert_eq!(links, want, "{open}");

    // The table: a row per finding, ranked, with an arguments column.
    let table = &html[html.find("<tbody>").unwrap()..html.find("</tbody>").unwrap()];
    let cells: Vec<&str> = table
        .lines()
        .filter(|l| l.starts_with("<tr>"))
        .map(|row| {
            let at = row.find("</a></td><td>").unwrap() + "</a></td><td>".len();
            &row[at..at + row[at..].find("</td>").unwrap()]
        })
        .collect();
    let ranked = [
        shape(GET_SUM_LABELS[0]),
        echo.clone(),
        shape(GET_SUM_LABELS[1]),
        shape(GET_SUM_LABELS[2]),
    ];
    assert_eq!(cells, ranked, "{table}");

    // The history: one section per tool, one article per finding in it.
    let groups: Vec<&str> = html
        .split("<section class=\"tool-findings\">")
        .skip(1)
        .collect();
    assert_eq!(groups.len(), 2);
    for (group, (tool, labels)) in groups.iter().zip([
        (
            "get-sum",
            GET_SUM_LABELS.iter().map(|l| shape(l)).collect::<Vec<_>>(),
        ),
        ("echo", vec![echo.clone()]),
    ]) {
        assert!(
            group.starts_with(&format!(
                r#"<h4><span class="name">everything</span> / <span class="name">{tool}</span></h4>"#
            )),
            "{group}"
        );
        let heads: Vec<&str> = group
            .split("<h5>")
            .skip(1)
            .map(|h| &h[..h.find("</h5>").unwrap()])
            .collect();
        assert_eq!(heads.len(), labels.len(), "{group}");
        for (head, label) in heads.iter().zip(&labels) {
            assert!(head.ends_with(&format!(", arguments {label}")), "{head}");
        }
    }
}

/// On a store a few days old every chart spans the days with calls, not
/// the whole --days window with the points crowded at its right edge;
/// a window shorter than the data is kept as it is.
#[test]
fn the_charts_axis_fits_the_days_with_calls() {
    let store = crate::seeded::near_duplicates();
    let axis = |days: &str| -> Vec<(String, usize, Vec<String>)> {
        let (_, html) = report(&store, &["--now", crate::seeded::NEAR_NOW, "--days", days]);
        html.split("<svg class=\"rate-chart\"")
            .skip(1)
            .map(|chunk| {
                let svg = &chunk[..chunk.find("</svg>").unwrap()];
                let tag = &svg[..svg.find('>').unwrap()];
                let ticks: Vec<String> = svg
                    .split("<text class=\"tick\"")
                    .skip(1)
                    .map(|t| t[t.find('>').unwrap() + 1..t.find("</text>").unwrap()].to_owned())
                    .filter(|t| !t.ends_with('%'))
                    .collect();
                (
                    attr(tag, "data-tool"),
                    attr(tag, "data-days").parse().unwrap(),
                    ticks,
                )
            })
            .collect()
    };
    // Calls on 2026-11-28, 29 and 30: three days of the thirty.
    let fitted = axis("30");
    assert_eq!(fitted.len(), 2);
    for (tool, days, ticks) in &fitted {
        assert_eq!(*days, 3, "{tool}");
        assert_eq!(ticks, &["11-28", "11-29", "11-30"], "{tool}");
    }
    // Two days asked for: the window, as before.
    for (tool, days, ticks) in axis("2") {
        assert_eq!(days, 2, "{tool}");
        assert_eq!(ticks, ["11-29", "11-30"], "{tool}");
    }
}

#[test]
fn findings_history_is_json_only_and_reads_the_store() {
    let store = Store::new();
    for args in [&["--history"][..], &["--history", "--format", "md"]] {
        store
            .bin("mcpeval-findings")
            .args(args)
            .assert()
            .code(2)
            .stderr("mcpeval-findings: error: --history prints JSON only; add --format json\n");
    }
    store
        .bin("mcpeval-findings")
        .args(["--history", "--format", "json", "--from", "x.json"])
        .assert()
        .code(2);
}

#[test]
fn unavailable_evidence_is_status_3_with_the_siblings_message() {
    // A store that is there but was never indexed: the sibling says why.
    let store = Store::new();
    crate::support::private_dir(&store.home());
    let page = store.scratch().join("report.html");
    std::fs::write(&page, "the previous page").unwrap();
    store
        .bin("mcpeval-report")
        .arg("--output")
        .arg(&page)
        .assert()
        .code(3)
        .stderr(
            predicate::str::starts_with(
                "mcpeval-report: error: mcpeval-findings --format json exited with status 3; \
                 the report needs its JSON:\nmcpeval-findings: error: ",
            )
            .and(predicate::str::contains("index.db")),
        );
    assert_eq!(std::fs::read_to_string(&page).unwrap(), "the previous page");
    assert_eq!(
        std::fs::read_dir(store.scratch()).unwrap().count(),
        2,
        "the page and the store, no temporary file left"
    );
}

#[test]
fn siblings_are_found_beside_the_report_else_on_path() {
    let store = Bench::new().store;
    let alone = store.scratch().join("alone");
    std::fs::create_dir(&alone).unwrap();
    crate::support::copy_bin("mcpeval-report", &alone.join("mcpeval-report"));
    let run = |path: &str| {
        let mut cmd = Command::new(alone.join("mcpeval-report"));
        store.env(&mut cmd);
        cmd.env("PATH", path)
            .args(["--output", "-", "--now", RECORDS_NOW])
            .assert()
    };
    run(SYSTEM_PATH).code(3).stdout("").stderr(
        "mcpeval-report: error: mcpeval-findings is not installed beside mcpeval-report or on PATH; \
         the report is built from its JSON\n  hint: install the whole mcpeval suite, or put \
         mcpeval-findings on PATH\n",
    );
    // The plugin way: the siblings on PATH.
    run(&format!("{SYSTEM_PATH}:{}", bin_dir().display()))
        .success()
        .stdout(
            predicate::str::starts_with("<!DOCTYPE html>\n")
                .and(predicate::str::contains("class=\"rate-chart\"")),
        );
}

/// The element tree of a page, one opening tag a line, indented by depth,
/// with its id and class; the text, styles and scripts left out, and a run
/// of identical siblings written once with its count. A snapshot of it
/// shows a change to the page's structure without churning on figures.
fn outline(page: &str) -> String {
    const VOID: [&str; 8] = ["meta", "link", "br", "img", "input", "hr", "col", "wbr"];
    let mut lines: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut rest = page;
    while let Some(at) = rest.find('<') {
        rest = &rest[at + 1..];
        let end = rest.find('>').expect("a closed tag");
        let tag = &rest[..end];
        rest = &rest[end + 1..];
        if tag.starts_with('!') {
            continue;
        }
        if let Some(_closing) = tag.strip_prefix('/') {
            depth = depth.saturating_sub(1);
            continue;
        }
        let name: String = tag
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        let attr = |key: &str| {
            let start = tag.find(&format!(" {key}=\""))? + key.len() + 3;
            let len = tag[start..].find('"')?;
            Some(tag[start..start + len].to_owned())
        };
        let mut line = format!("{}{name}", "  ".repeat(depth));
        if let Some(id) = attr("id") {
            line.push_str(&format!(" #{id}"));
        }
        if let Some(class) = attr("class") {
            line.push_str(&format!(" .{}", class.replace(' ', ".")));
        }
        match lines.last_mut() {
            Some((last, n)) if *last == line => *n += 1,
            _ => lines.push((line, 1)),
        }
        if name == "style" || name == "script" {
            let close = format!("</{name}>");
            let end = rest.find(&close).expect("a closed block");
            rest = &rest[end + close.len()..];
        } else if !tag.ends_with('/') && !VOID.contains(&name.as_str()) {
            depth += 1;
        }
    }
    lines
        .into_iter()
        .map(|(line, n)| match n {
            1 => format!("{line}\n"),
            n => format!("{line} (x{n})\n"),
        })
        .collect()
}

#[test]
fn the_page_goes_to_stdout_or_whole_into_its_file() {
    let store = Bench::new().store;
    let out = store
        .cmd("mcpeval-report")
        .args(["--output", "-", "--now", RECORDS_NOW, "--days", "3"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let page = text(&out.stdout);
    assert!(page.starts_with("<!DOCTYPE html>\n") && page.ends_with("</html>\n"));
    assert!(page.contains("3 UTC days to 2026-11-30"));
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    insta::assert_snapshot!("report_outline", store.redact_ids(&outline(&page)));

    // A path that is not a regular file is written in place, not replaced.
    let out = store
        .cmd("mcpeval-report")
        .args([
            "--output",
            "/dev/stdout",
            "--now",
            RECORDS_NOW,
            "--days",
            "3",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), page);

    let dir = store.scratch().join("out");
    std::fs::create_dir(&dir).unwrap();
    let file = dir.join("r.html");
    std::fs::write(&file, "old").unwrap();
    let out = store
        .cmd("mcpeval-report")
        .arg("--output")
        .arg(&file)
        .args(["--now", RECORDS_NOW, "--days", "3"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), page);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    assert!(
        text(&out.stderr).starts_with(&format!(
            "mcpeval-report: wrote {}: 1 server, 1 tool chart, 1 finding (",
            file.display()
        )),
        "{}",
        text(&out.stderr)
    );

    for bad in [&["--days", "0"][..], &["--now", "yesterday"]] {
        store
            .bin("mcpeval-report")
            .args(["--output", "-"])
            .args(bad)
            .assert()
            .code(2)
            .stdout("");
    }
}
