//! The fuzz targets (`fuzz/targets.rs`) on stable Rust: each runs its
//! committed corpus and every regression input, then mutations of them
//! from a seeded generator for `MCPEVAL_FUZZ_SECONDS` (2 by default, so CI
//! spends about six seconds on all six across two cores). cargo fuzz runs
//! the same bodies with coverage guidance: `scripts/fuzz`.
//!
//! A failure prints the seed and the input, and leaves the input in the
//! scratch directory it names; add it under `fuzz/regressions/TARGET/`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use mcpeval_testkit::fuzz as targets;

/// Tokens that move structured input somewhere interesting.
const TOKENS: &[&[u8]] = &[
    b"\"",
    b"{",
    b"}",
    b"[",
    b"]",
    b":",
    b",",
    b"\n",
    b">",
    b"null",
    b"\"\"",
    b"-1",
    b"1e999",
    b"18446744073709551616",
    b"~0",
    b"~1",
    b"/",
    b"\\u0000",
    b"\\ud800",
    b"0",
    b"true",
    b"\"tools/call\"",
    b"\"name\"",
    b"\"isError\"",
    b"\"<fill:string>\"",
    b"\"outcome\"",
    b"\"schema\"",
    "é".as_bytes(),
    b"\xff",
];

/// xorshift64*: small, seeded, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, input: &mut Vec<u8>, pool: &[Vec<u8>]) {
    for _ in 0..=rng.below(4) {
        let at = rng.below(input.len() + 1);
        match rng.below(7) {
            0 if !input.is_empty() => {
                let i = rng.below(input.len());
                input[i] ^= 1 << rng.below(8);
            }
            1 if !input.is_empty() => {
                let i = rng.below(input.len());
                input[i] = rng.next() as u8;
            }
            2 => {
                let token = TOKENS[rng.below(TOKENS.len())];
                input.splice(at..at, token.iter().copied());
            }
            3 if !input.is_empty() => {
                let end = (at + 1 + rng.below(16)).min(input.len());
                input.drain(at.min(end)..end);
            }
            4 if !input.is_empty() => {
                let start = rng.below(input.len());
                let end = (start + 1 + rng.below(64)).min(input.len());
                let copy = input[start..end].to_vec();
                input.splice(at..at, copy);
            }
            5 => {
                let other = &pool[rng.below(pool.len())];
                let from = rng.below(other.len() + 1);
                input.truncate(at);
                input.extend_from_slice(&other[from..]);
            }
            _ => {
                // A long run, for limits and truncation at boundaries.
                let byte = *TOKENS[rng.below(TOKENS.len())].first().unwrap_or(&b'a');
                input.splice(at..at, std::iter::repeat_n(byte, rng.below(70_000)));
            }
        }
    }
}

fn inputs(dir: &Path) -> Vec<Vec<u8>> {
    let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    files.iter().map(|f| std::fs::read(f).unwrap()).collect()
}

fn seconds() -> u64 {
    std::env::var("MCPEVAL_FUZZ_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2)
}

fn fuzz(name: &str) {
    let target = targets::ALL.iter().find(|t| t.0 == name).unwrap().1;
    let root = crate::support::repo().join("fuzz");
    let mut pool = inputs(&root.join("corpus").join(name));
    pool.extend(inputs(&root.join("regressions").join(name)));
    assert!(!pool.is_empty(), "no corpus for {name}");
    let seed = std::env::var("MCPEVAL_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    let mut rng = Rng(seed);
    let run = |input: &[u8]| {
        if std::panic::catch_unwind(|| target(input)).is_err() {
            let file = std::env::temp_dir().join(format!("mcpeval-fuzz-{name}-{seed}"));
            std::fs::write(&file, input).unwrap();
            panic!(
                "fuzz target {name} failed (MCPEVAL_FUZZ_SEED={seed}) on {:?}; input saved to {}",
                String::from_utf8_lossy(&input[..input.len().min(400)]),
                file.display()
            );
        }
    };
    for input in &pool {
        run(input);
    }
    let deadline = Instant::now() + Duration::from_secs(seconds());
    let mut runs = 0u64;
    while Instant::now() < deadline {
        let mut input = pool[rng.below(pool.len())].clone();
        mutate(&mut rng, &mut input, &pool);
        run(&input);
        runs += 1;
    }
    eprintln!("fuzz {name}: {runs} inputs, seed {seed}");
}

#[test]
fn fuzz_record() {
    fuzz("record");
}

#[test]
fn fuzz_template() {
    fuzz("template");
}

#[test]
fn fuzz_manifest() {
    fuzz("manifest");
}

#[test]
fn fuzz_expect() {
    fuzz("expect");
}

#[test]
fn fuzz_classify() {
    fuzz("classify");
}

#[test]
fn fuzz_observe() {
    fuzz("observe");
}
