//! The parse-only floor: read journals and parse every line with
//! serde_json, storing nothing.
//!
//! It runs as a child (this binary with `--floor`), so its time and peak
//! memory are measured exactly like the index's. It reads the way the index
//! reads (large buffered reads, lines split with memchr), so the difference
//! between the two is what the index does beyond parsing.

use std::fs::File;
use std::io::Read;

use serde::de::IgnoredAny;

/// What each line is parsed into.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// The journal's own record type, `shared::record::Call`: what any
    /// reader of the journal with serde_json does, and the ratio's baseline.
    Records,
    /// Syntax only (`IgnoredAny`), the least serde_json can do.
    Syntax,
}

impl Depth {
    pub fn arg(self) -> &'static str {
        match self {
            Depth::Records => "records",
            Depth::Syntax => "syntax",
        }
    }
}

/// `--floor DEPTH FILE…`: parses every line; prints how many there were.
pub fn main(args: &[String]) {
    let depth = match args.first().map(String::as_str) {
        Some("records") => Depth::Records,
        Some("syntax") => Depth::Syntax,
        other => panic!("--floor records|syntax FILE…, not {other:?}"),
    };
    let mut buf = vec![0u8; 1 << 20];
    let mut lines = 0u64;
    for path in &args[1..] {
        let mut file = File::open(path).expect("journal");
        let mut pending = 0;
        loop {
            let n = file.read(&mut buf[pending..]).expect("read");
            if n == 0 {
                break;
            }
            let end = pending + n;
            let mut start = 0;
            for at in memchr::memchr_iter(b'\n', &buf[..end]) {
                parse(depth, &buf[start..at]);
                lines += 1;
                start = at + 1;
            }
            buf.copy_within(start..end, 0);
            pending = end - start;
        }
    }
    println!("{lines}");
}

fn parse(depth: Depth, line: &[u8]) {
    let ok = match depth {
        Depth::Records => serde_json::from_slice::<shared::record::Call>(line).is_ok(),
        Depth::Syntax => serde_json::from_slice::<IgnoredAny>(line).is_ok(),
    };
    assert!(ok, "unparsable line: {}", String::from_utf8_lossy(line));
}
