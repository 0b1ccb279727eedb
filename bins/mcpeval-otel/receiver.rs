//! One request's way into the journal, the same from the network, a file
//! and the benches: read the spans, count them, journal the calls.

use std::time::Instant;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use shared::error::Result;
use shared::home::Home;
use store::journal::Writer;
use store::salt::Salt;

use crate::journaler::Journaler;
use crate::span;
use crate::tally::Tally;

/// The salt, the fixed server name and the journal of one run.
#[derive(Debug)]
pub struct Receiver {
    salt: Salt,
    server: Option<String>,
    journaler: Journaler,
}

/// What became of one request's spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Taken {
    /// `tools/call` spans that could not be read (no tool, no session, no
    /// time): the OTLP partial success's rejected spans.
    pub rejected: u64,
}

impl Receiver {
    /// A receiver journaling into `home`, whose salt it creates if needed.
    pub fn open(home: &Home, server: Option<String>) -> Result<Receiver> {
        let salt = Salt::load_or_create(home)?;
        let writer = Writer::new(home)?;
        Ok(Receiver::new(salt, writer, server))
    }

    /// A receiver with its salt and writer given.
    pub fn new(salt: Salt, writer: Writer, server: Option<String>) -> Receiver {
        Receiver {
            salt,
            server,
            journaler: Journaler::new(writer),
        }
    }

    /// Journals the tool calls of one request.
    pub fn take(&mut self, request: &ExportTraceServiceRequest, now: Instant) -> Result<Taken> {
        let read = span::read(request, &self.salt, self.server.as_deref());
        let rejected = read.skipped.len() as u64;
        self.journaler
            .tally
            .read(crate::decode::spans(request), &read);
        self.journaler.take(read.calls, now)?;
        Ok(Taken { rejected })
    }

    /// Journals the client spans held since before `deadline`.
    pub fn expire(&mut self, deadline: Instant) -> Result<usize> {
        self.journaler.expire(deadline)
    }

    /// Counts a request refused whole.
    pub fn refused(&mut self) {
        self.journaler.tally.refused += 1;
    }

    /// Journals every span still held and returns what the run did.
    pub fn finish(&mut self) -> Result<Tally> {
        self.journaler.finish()?;
        let mut tally = self.journaler.tally.clone();
        tally.journal = self.journaler.journal().map(|p| p.display().to_string());
        Ok(tally)
    }
}
