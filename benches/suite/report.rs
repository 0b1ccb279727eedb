//! The printed result: the machine, the tools, and one table row per figure
//! with our time, the baseline's, their ratio and the target.
//!
//! The table is Markdown, so a run's output can go into docs/performance.md as is.

use std::process::Command;
use std::time::Duration;

use crate::store::Tools;

/// One figure.
pub struct Row {
    pub figure: String,
    pub ours: String,
    pub baseline: String,
    pub ratio: String,
    pub target: String,
    /// Whether the target is met; `None` when the figure has no target.
    pub met: Option<bool>,
}

pub struct Table {
    quick: bool,
    load: String,
    tools: Vec<String>,
    rows: Vec<Row>,
    notes: Vec<String>,
}

impl Table {
    pub fn new(quick: bool) -> Table {
        Table {
            quick,
            // The load when the bench started: other work shares the machine.
            load: read("/proc/loadavg")
                .split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" "),
            tools: Vec::new(),
            rows: Vec::new(),
            notes: Vec::new(),
        }
    }

    pub fn describe_tools(&mut self, tools: &Tools) {
        let version = |program: &std::path::Path, arg: &str| {
            Command::new(program)
                .arg(arg)
                .output()
                .ok()
                .and_then(|o| String::from_utf8(o.stdout).ok())
                .and_then(|s| s.lines().next().map(str::to_owned))
                .unwrap_or_else(|| "unknown version".into())
        };
        let mut line = |name: &str, path: Option<&std::path::Path>| {
            self.tools.push(match path {
                Some(p) => format!("{name}: {} ({})", p.display(), version(p, "--version")),
                None => format!("{name}: not found (its baseline is skipped)"),
            })
        };
        line("sha256sum", Some(&tools.sha256sum));
        line("jq", tools.jq.as_deref());
        line("sqlite3", tools.sqlite3.as_deref());
    }

    pub fn push(&mut self, row: Row) {
        self.rows.push(row);
    }

    pub fn note(&mut self, note: String) {
        self.notes.push(note);
    }

    pub fn print(&self) {
        println!();
        println!(
            "mcpeval bench{}, {} UTC",
            if self.quick {
                " (quick: small sizes, figures are not meaningful)"
            } else {
                ""
            },
            jiff::Timestamp::now().strftime("%Y-%m-%d %H:%M")
        );
        println!("machine: {}", machine());
        println!("load average at start: {}", self.load);
        for tool in &self.tools {
            println!("{tool}");
        }
        println!();
        // A quick run's small sizes say nothing about the targets, so it
        // marks none as met or missed: a test log shows no false alarm.
        if self.quick {
            println!("| figure | ours | baseline (same run) | ratio | target |");
            println!("| --- | ---: | ---: | ---: | ---: |");
        } else {
            println!("| figure | ours | baseline (same run) | ratio | target | met |");
            println!("| --- | ---: | ---: | ---: | ---: | :---: |");
        }
        for r in &self.rows {
            let met = match (self.quick, r.met) {
                (true, _) => "",
                (false, Some(true)) => " yes |",
                (false, Some(false)) => " **no** |",
                (false, None) => "  |",
            };
            println!(
                "| {} | {} | {} | {} | {} |{met}",
                r.figure, r.ours, r.baseline, r.ratio, r.target
            );
        }
        println!();
        for note in &self.notes {
            println!("- {note}");
        }
    }
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// CPU model, cores, memory, kernel and whether SHA-256 instructions exist.
fn machine() -> String {
    let cpuinfo = read("/proc/cpuinfo");
    let field = |name: &str| {
        cpuinfo
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_owned())
    };
    let model = field("model name").unwrap_or_else(|| "unknown CPU".into());
    let flags = field("flags")
        .or_else(|| field("Features"))
        .unwrap_or_default();
    let sha = flags
        .split_whitespace()
        .any(|f| f == "sha_ni" || f == "sha2");
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let memory = read("/proc/meminfo")
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or("unknown memory".into(), |kib| bytes(kib * 1024));
    format!(
        "{model}, {cores} cores, {memory} RAM, Linux {}, SHA-256 instructions: {}",
        read("/proc/sys/kernel/osrelease").trim(),
        if sha { "yes" } else { "no" }
    )
}

/// A duration at a readable scale.
pub fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 1e-3 {
        format!("{:.1} µs", s * 1e6)
    } else if s < 1.0 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}

/// Calls per second.
pub fn rate(per_s: f64) -> String {
    format!("{:.0}k calls/s", per_s / 1e3)
}

/// Bytes in decimal units.
pub fn bytes(n: u64) -> String {
    let n = n as f64;
    if n >= 1e9 {
        format!("{:.2} GB", n / 1e9)
    } else {
        format!("{:.0} MB", n / 1e6)
    }
}

/// `1,000,000`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `ours / baseline` as `1.23×`.
pub fn times(ours: Duration, baseline: Duration) -> String {
    format!("{:.2}×", ours.as_secs_f64() / baseline.as_secs_f64())
}
