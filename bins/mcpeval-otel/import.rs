//! `--import FILE|-`: OTLP JSON as a Collector's file exporter writes it,
//! one `ExportTraceServiceRequest` a line, gzip-compressed or not.
//!
//! Refuse and keep: every line is decoded once to check it before any
//! record is written, so a malformed line (named by its number) leaves the
//! store as it was. Standard input is read once, so it is first copied to
//! a private file in the store, read twice and removed.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, Read, Seek};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::time::Instant;

use shared::Error;
use shared::Result;
use shared::file_arg::Input;
use shared::home::Home;
use shared::lines::{BoundedLines, Line};

use crate::decode::{self, Encoding, Refused};
use crate::limits::MAX_DECODED;
use crate::receiver::Receiver;
use crate::tally::Tally;

/// Imports `input` into `home`'s journals.
pub fn run(home: &Home, server: Option<String>, input: &Input) -> Result<Tally> {
    let spool = match input {
        Input::Stdin => Some(Spool::from_stdin(home)?),
        Input::Path(_) => None,
    };
    let open = || -> Result<File> {
        match &spool {
            Some(spool) => {
                let mut file = spool
                    .file
                    .try_clone()
                    .map_err(|e| Error::io("cannot read the copy of standard input", e))?;
                file.rewind()
                    .map_err(|e| Error::io("cannot read the copy of standard input", e))?;
                Ok(file)
            }
            None => {
                let path = input.path().expect("a path");
                File::open(path).map_err(|err| match err.kind() {
                    io::ErrorKind::NotFound => {
                        Error::rejected(format!("{}: no such file", path.display()))
                            .with_hint("check the path given, or give - to read standard input")
                    }
                    _ => Error::io(format_args!("cannot read {input}"), err),
                })
            }
        }
    };
    // First pass: every line must decode.
    each_line(open()?, input, |_, _| Ok(()))?;
    // Second pass: journal.
    let mut receiver = Receiver::open(home, server)?;
    each_line(open()?, input, |request, _| {
        receiver.take(&request, Instant::now()).map(|_| ())
    })?;
    receiver.finish()
}

/// Calls `take` with each non-blank line's request and its number.
fn each_line(
    file: File,
    input: &Input,
    mut take: impl FnMut(
        opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest,
        u64,
    ) -> Result<()>,
) -> Result<()> {
    let mut reader: Box<dyn Read> = Box::new(BufReader::new(file));
    let mut magic = [0u8; 2];
    let mut head = Vec::new();
    let n = reader
        .read(&mut magic)
        .map_err(|e| Error::io(format_args!("cannot read {input}"), e))?;
    head.extend_from_slice(&magic[..n]);
    let whole = io::Cursor::new(head).chain(reader);
    let reader: Box<dyn Read> = if n == 2 && magic == [0x1f, 0x8b] {
        Box::new(flate2::read::MultiGzDecoder::new(whole))
    } else {
        Box::new(whole)
    };
    let mut lines = BoundedLines::new(reader, MAX_DECODED).with_last_line();
    let mut number = 0u64;
    loop {
        number += 1;
        let line = lines
            .next_line()
            .map_err(|e| Error::io(format_args!("cannot read {input} at line {number}"), e))?;
        let request = match line {
            None => return Ok(()),
            Some(Line::Oversized(len)) => {
                return Err(Error::rejected(format!(
                    "{input}:{number}: the line is {len} bytes, over the {} MiB one request may hold; nothing was journaled",
                    MAX_DECODED >> 20
                ))
                .with_hint("split the file's batches smaller"));
            }
            Some(Line::Complete(bytes)) if bytes.iter().all(u8::is_ascii_whitespace) => continue,
            Some(Line::Complete(bytes)) => decode::request(bytes, Encoding::Json),
        };
        match request {
            Ok(request) => take(request, number)?,
            Err(Refused::TooLarge(why) | Refused::Malformed(why)) => {
                return Err(Error::rejected(format!("{input}:{number}: {why}; nothing was journaled"))
                    .with_hint("each line must be one OTLP ExportTraceServiceRequest in JSON, as a Collector's file exporter writes"));
            }
        }
    }
}

/// Standard input copied to a private file in the store, removed on drop.
struct Spool {
    path: PathBuf,
    file: File,
}

impl Spool {
    fn from_stdin(home: &Home) -> Result<Spool> {
        let home = home.own();
        store::dir::ensure(&home)?;
        let path = home
            .root()
            .as_std_path()
            .join(format!(".otel-import-{}", uuid::Uuid::new_v4().simple()));
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| Error::io(format_args!("cannot create {}", path.display()), e))?;
        let spool = Spool {
            path,
            file: file
                .try_clone()
                .map_err(|e| Error::io("cannot copy standard input", e))?,
        };
        io::copy(&mut io::stdin().lock(), &mut file)
            .map_err(|e| Error::io("cannot copy standard input", e))?;
        Ok(spool)
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}
