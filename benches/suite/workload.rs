//! Deterministic journals shaped like real capture output.
//!
//! A fixed seed gives the same bytes on every machine, so two runs of the
//! bench index the same workload. The shape follows what capture writes
//! (field order, canonical args shapes, millisecond UTC stamps) and what a
//! busy store holds: several servers with a handful of tools each, sessions
//! of a few to a hundred calls interleaved in long-running journals that
//! rotate near 64 MiB, about one call in ten failing under a few recurring
//! templates, a sprinkle of malformed and unanswered calls, and probe
//! traffic. Nothing here may read the clock or the environment.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// A small, fast, well-mixed generator (SplitMix64); the workloads need
/// reproducibility, not cryptographic quality.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }

    /// True with probability `per_mille / 1000`.
    pub fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }
}

const SERVERS: [&str; 6] = [
    "weather",
    "search",
    "files",
    "github",
    "calendar",
    "warehouse",
];
const VERBS: [&str; 8] = [
    "get", "list", "create", "update", "delete", "search", "fetch", "run",
];
const NOUNS: [&str; 8] = [
    "forecast", "page", "file", "issue", "event", "query", "report", "item",
];
/// Argument shapes as capture stores them: keys sorted, scalars typed.
const SHAPES: [&str; 8] = [
    r#"{"city":"string","days":"integer"}"#,
    r#"{"filters":{"lang":"string","safe":"boolean"},"limit":"integer","query":"string"}"#,
    r#"{"path":"string"}"#,
    r#"{}"#,
    r#"{"ids":["integer"],"opts":{"deep":"boolean","mode":"string"}}"#,
    r#"{"params":["string"],"sql":"string","timeout_ms":"integer"}"#,
    r#"{"body":"string","labels":["string"],"repo":"string","title":"string"}"#,
    r#"{"end":"string","start":"string","tz":"null"}"#,
];
/// JSON-RPC error codes seen in the wild, `None` for tool errors without one.
const CODES: [Option<i64>; 5] = [None, Some(-32602), Some(-32603), Some(-32001), Some(-32601)];

struct Template {
    id: String,
    code: Option<i64>,
    jsonrpc: bool,
    retryable: Option<bool>,
}

struct Tool {
    name: String,
    shapes: Vec<&'static str>,
    /// Failures per thousand calls.
    failure: u64,
    templates: Vec<Template>,
}

struct Session {
    token: String,
    server: usize,
    seq: u64,
    left: u64,
    probe: bool,
    transport: &'static str,
    /// Whether a tools/list was seen (else `advertised` is null).
    listed: bool,
}

/// Writes journals, one record at a time, in a reproducible order.
pub struct Generator {
    rng: Rng,
    tools: Vec<Vec<Tool>>,
    active: Vec<Session>,
    /// Milliseconds since the epoch of the next call.
    clock: i64,
    line: Vec<u8>,
}

/// Sessions in flight at once: a long-running capture interleaves them.
const CONCURRENT: usize = 12;

impl Generator {
    pub fn new(seed: u64) -> Generator {
        let mut rng = Rng::new(seed);
        let mut tools = Vec::new();
        for server in 0..SERVERS.len() {
            let mut list = Vec::new();
            for t in 0..8 {
                let name = format!(
                    "{}_{}",
                    VERBS[(t + server) % VERBS.len()],
                    NOUNS[(t * 3 + server) % NOUNS.len()]
                );
                let shapes = (0..1 + rng.below(3))
                    .map(|_| SHAPES[rng.below(SHAPES.len() as u64) as usize])
                    .collect();
                let failure = [5, 20, 60, 150, 400][rng.below(5) as usize];
                let templates = (0..1 + rng.below(4))
                    .map(|_| {
                        let code = CODES[rng.below(CODES.len() as u64) as usize];
                        Template {
                            id: format!("t-{:016x}", rng.next()),
                            jsonrpc: code.is_some() && rng.chance(500),
                            code,
                            retryable: [None, Some(true), Some(false)][rng.below(3) as usize],
                        }
                    })
                    .collect();
                list.push(Tool {
                    name,
                    shapes,
                    failure,
                    templates,
                });
            }
            tools.push(list);
        }
        Generator {
            rng,
            tools,
            active: Vec::new(),
            // 2026-11-01T00:00:00Z
            clock: 1_793_491_200_000,
            line: Vec::with_capacity(512),
        }
    }

    /// Writes journals of about `file_bytes` each into `dir` until at least
    /// `calls` records and `bytes` bytes are written; returns the files.
    pub fn journals(
        &mut self,
        dir: &Path,
        calls: u64,
        bytes: u64,
        file_bytes: u64,
    ) -> std::io::Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir)?;
        let mut files = Vec::new();
        let (mut written, mut total) = (0u64, 0u64);
        while written < calls || total < bytes {
            let path = dir.join(self.file_name());
            let mut out = BufWriter::with_capacity(1 << 20, File::create(&path)?);
            let mut size = 0u64;
            while size < file_bytes && (written < calls || total < bytes) {
                let line = self.record();
                out.write_all(line)?;
                size += line.len() as u64;
                total += line.len() as u64;
                written += 1;
            }
            out.flush()?;
            files.push(path);
        }
        Ok(files)
    }

    /// Appends `calls` more records to the journal at `path`.
    pub fn append(&mut self, path: &Path, calls: u64) -> std::io::Result<u64> {
        let mut out =
            BufWriter::with_capacity(1 << 20, OpenOptions::new().append(true).open(path)?);
        let mut size = 0;
        for _ in 0..calls {
            let line = self.record();
            out.write_all(line)?;
            size += line.len() as u64;
        }
        out.flush()?;
        Ok(size)
    }

    /// A journal name for the current clock: `YYYYMMDDTHHMMSS.fffZ-xxxxxxxx.jsonl`.
    fn file_name(&mut self) -> String {
        let (date, time, millis) = civil(self.clock);
        let compact = |s: &str| s.replace(['-', ':'], "");
        format!(
            "{}T{}.{millis:03}Z-{:08x}.jsonl",
            compact(&date),
            compact(&time),
            self.rng.next() as u32
        )
    }

    /// The next record, with its newline.
    fn record(&mut self) -> &[u8] {
        while self.active.len() < CONCURRENT {
            let session = self.session();
            self.active.push(session);
        }
        let at = self.rng.below(self.active.len() as u64) as usize;
        self.clock += 1 + self.rng.below(40) as i64;
        let rng = &mut self.rng;
        let s = &mut self.active[at];
        s.seq += 1;
        s.left -= 1;
        let tools = &self.tools[s.server];
        // Skewed: the first tools of a server get most of the traffic.
        let tool = &tools[(rng.below(8) * rng.below(8) / 7) as usize];
        let (date, time, millis) = civil(self.clock);
        let event = uuid_v7(self.clock, rng);
        let line = &mut self.line;
        line.clear();
        let _ = write!(
            line,
            r#"{{"schema":"mcpeval.call/1","identity":{{"event_id":"{event}","session":"{}","seq":{}}},"origin":"{}","transport":"{}","server":"{}","tool":"{}","started_at":"{date}T{time}.{millis:03}Z""#,
            s.token,
            s.seq,
            if s.probe { "probe" } else { "capture" },
            s.transport,
            SERVERS[s.server],
            tool.name,
        );
        let shape = tool.shapes[rng.below(tool.shapes.len() as u64) as usize];
        let advertised = match (s.listed, rng.chance(10)) {
            (false, _) => "null",
            (true, true) => "false",
            (true, false) => "true",
        };
        let roll = rng.below(1000);
        if roll < 3 {
            let _ = write!(
                line,
                r#","duration_ms":{},"advertised":{advertised},"args_shape":{shape},"outcome":"unknown","unknown":"malformed"}}"#,
                rng.below(500)
            );
        } else if roll < 5 {
            let _ = write!(
                line,
                r#","duration_ms":null,"advertised":{advertised},"args_shape":{shape},"outcome":"unknown","unknown":"unanswered"}}"#,
            );
        } else if rng.chance(tool.failure) {
            let t = &tool.templates[rng.below(tool.templates.len() as u64) as usize];
            let code = t.code.map_or("null".to_owned(), |c| c.to_string());
            let retryable = t
                .retryable
                .map_or("null", |r| if r { "true" } else { "false" });
            let _ = write!(
                line,
                r#","duration_ms":{},"advertised":{advertised},"args_shape":{shape},"outcome":"error","error":{{"channel":"{}","code":{code},"template_id":"{}","retryable":{retryable}}}}}"#,
                rng.below(2000),
                if t.jsonrpc { "jsonrpc" } else { "tool" },
                t.id,
            );
        } else {
            let _ = write!(
                line,
                r#","duration_ms":{},"advertised":{advertised},"args_shape":{shape},"outcome":"ok"}}"#,
                rng.below(800)
            );
        }
        line.push(b'\n');
        if self.active[at].left == 0 {
            self.active.swap_remove(at);
        }
        &self.line
    }

    fn session(&mut self) -> Session {
        let rng = &mut self.rng;
        let longest = rng.below(200) + 1;
        Session {
            token: format!("s-{:016x}", rng.next()),
            server: rng.below(SERVERS.len() as u64) as usize,
            seq: 0,
            // Mostly short sessions, some long ones: 50 calls on average.
            left: 1 + rng.below(longest),
            probe: rng.chance(20),
            transport: if rng.chance(300) { "http" } else { "stdio" },
            listed: rng.chance(900),
        }
    }
}

/// A time-ordered version-7 UUID for `ms` since the epoch, as capture
/// writes them, in its lower-case hyphenated form.
fn uuid_v7(ms: i64, rng: &mut Rng) -> String {
    let (a, b) = (rng.next(), rng.next());
    let b = (b & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000;
    let ms = ms as u64 & 0xffff_ffff_ffff;
    format!(
        "{:08x}-{:04x}-7{:03x}-{:04x}-{:012x}",
        ms >> 16,
        ms & 0xffff,
        a & 0x0fff,
        b >> 48,
        b & 0xffff_ffff_ffff
    )
}

/// UTC `("YYYY-MM-DD", "HH:MM:SS", millis)` of milliseconds since the epoch
/// (Howard Hinnant's civil-from-days).
fn civil(ms: i64) -> (String, String, i64) {
    let (days, rest) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let secs = rest / 1000;
    (
        format!("{year:04}-{month:02}-{day:02}"),
        format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60),
        rest % 1000,
    )
}

/// Lines in `files`, read in small pieces: a full run's journals hold
/// over a GB.
pub fn count_lines(files: &[PathBuf]) -> u64 {
    let mut buf = vec![0u8; 256 * 1024];
    let mut lines = 0;
    for f in files {
        let mut file = File::open(f).expect("journal");
        loop {
            let n = file.read(&mut buf).expect("read journal");
            if n == 0 {
                break;
            }
            lines += memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
        }
    }
    lines
}

/// One session of `calls` failed calls spread round-robin over `tools`
/// tools (each with its own template) and never recovered: every group's
/// window spans every other tool's failures. Written to `path`.
pub fn failure_window(path: &Path, calls: u64, tools: u64) -> std::io::Result<()> {
    let mut rng = Rng::new(tools);
    let mut out = BufWriter::new(File::create(path)?);
    for seq in 1..=calls {
        let tool = (seq - 1) % tools;
        let (date, time, millis) = civil(1_793_000_000_000 + seq as i64 * 10);
        writeln!(
            out,
            r#"{{"schema":"mcpeval.call/1","identity":{{"event_id":"{}","session":"s-00000000000000a1","seq":{seq}}},"origin":"capture","transport":"stdio","server":"warehouse","tool":"tool_{tool:05}","started_at":"{date}T{time}.{millis:03}Z","duration_ms":3,"advertised":true,"args_shape":{{}},"outcome":"error","error":{{"channel":"tool","code":null,"template_id":"t-{tool:016x}","retryable":false}}}}"#,
            uuid_v7(1_793_000_000_000 + seq as i64 * 10, &mut rng)
        )?;
    }
    out.flush()
}
