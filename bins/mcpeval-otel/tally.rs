//! What a run did, counted, and the summary it ends with.

use serde::Serialize;

use crate::span::{Read, Skipped};

/// Counts over a whole run: `--format json` prints them as they are.
#[derive(Debug, Default, Clone, Serialize)]
pub struct Tally {
    /// Requests (or import lines) accepted.
    pub requests: u64,
    /// Requests refused whole (malformed, too large, not loopback, …).
    pub refused: u64,
    /// Spans received in accepted requests.
    pub spans: u64,
    /// `tools/call` spans among them.
    pub tool_calls: u64,
    /// Records appended to the journal.
    pub journaled: u64,
    /// Spans dropped because the other end's span of the same request
    /// made (or will make) the record.
    pub paired: u64,
    /// `tools/call` spans without a tool name.
    pub no_tool: u64,
    /// `tools/call` spans without a trace id or session id.
    pub no_session: u64,
    /// `tools/call` spans without a start time.
    pub no_time: u64,
    /// Client spans journaled early because too many were held.
    pub held_out: u64,
    /// Session counters forgotten to keep the number bounded.
    pub sessions_forgotten: u64,
    /// The journal file written, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub journal: Option<String>,
}

impl Tally {
    /// Counts what one request held.
    pub fn read(&mut self, spans: usize, read: &Read) {
        self.requests += 1;
        self.spans += spans as u64;
        self.tool_calls += (read.calls.len() + read.skipped.len()) as u64;
        for skipped in &read.skipped {
            match skipped {
                Skipped::NoTool => self.no_tool += 1,
                Skipped::NoSession => self.no_session += 1,
                Skipped::NoTime => self.no_time += 1,
            }
        }
    }

    /// `tools/call` spans that could not be read.
    pub fn unreadable(&self) -> u64 {
        self.no_tool + self.no_session + self.no_time
    }

    /// The warnings a run ends with, one line each.
    pub fn warnings(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if self.no_tool > 0 {
            lines.push(format!("{} tools/call span(s) named no tool (gen_ai.tool.name, or a span name \"tools/call NAME\"); they were not journaled", self.no_tool));
        }
        if self.no_session > 0 {
            lines.push(format!("{} tools/call span(s) had neither mcp.session.id nor a valid trace id; they were not journaled", self.no_session));
        }
        if self.no_time > 0 {
            lines.push(format!(
                "{} tools/call span(s) had no start time; they were not journaled",
                self.no_time
            ));
        }
        if self.held_out > 0 {
            lines.push(format!("{} client span(s) were journaled before their server span could come, to hold at most {} at once", self.held_out, crate::limits::MAX_HELD));
        }
        if self.sessions_forgotten > 0 {
            lines.push(format!("{} session(s) were forgotten to track at most {} at once; a later call of one starts its turns again at 1", self.sessions_forgotten, crate::limits::MAX_SESSIONS));
        }
        if self.refused > 0 {
            lines.push(format!(
                "{} request(s) were refused whole; nothing of them was journaled",
                self.refused
            ));
        }
        lines
    }

    /// The one line for people.
    pub fn line(&self) -> String {
        format!(
            "journaled {} tool call(s) from {} span(s) in {} request(s) ({} tools/call span(s), {} paired with the other end's)",
            self.journaled, self.spans, self.requests, self.tool_calls, self.paired
        )
    }
}

/// Ends a run: its warnings on stderr, then the summary: one JSON object
/// on stdout with `--format json`, else one line on stderr.
pub fn report(tally: &Tally, format: cli::Format) -> shared::Result<()> {
    use std::io::Write;
    for line in tally.warnings() {
        cli::warn(crate::PROGRAM, format_args!("{line}"));
    }
    match format {
        cli::Format::Json => {
            let mut out = std::io::stdout().lock();
            let text = serde_json::to_string(tally).expect("a tally serializes");
            writeln!(out, "{text}")?;
            out.flush()?;
        }
        cli::Format::Text => eprintln!("{}: {}", crate::PROGRAM, tally.line()),
    }
    Ok(())
}
