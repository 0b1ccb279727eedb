//! An incremental decoder of `text/event-stream` bodies: how Streamable
//! HTTP carries JSON-RPC messages. Capture observes copies of the bytes it
//! relays with it; the probe client reads its response streams with it.
//!
//! It follows the WHATWG event-stream rules that matter to a reader of
//! `data:`: lines end in CRLF, LF or CR (also split across chunks), a
//! leading BOM is dropped, `:` lines are comments, one space after the
//! colon is stripped, multi-line data is joined with `\n`, and a blank line
//! dispatches. It never buffers more than one event, and only decodes: what
//! the data means is the caller's business.
//!
//! It also keeps the two fields a reader needs to resume a broken stream:
//! the last event id (an `id` field without NUL sets it, an empty one
//! clears it; it takes effect when its event is dispatched, data or not)
//! and the reconnection time (a `retry` field of ASCII digits only, in
//! milliseconds; any other value is ignored).

/// An event's data longer than this is not decoded unless a decoder is
/// given another limit ([`Decoder::with_limit`]).
pub const MAX_EVENT: usize = 64 * 1024 * 1024;

/// What one chunk of the stream completed.
#[derive(Debug, PartialEq, Eq)]
pub enum Item {
    /// The joined `data` of a dispatched event.
    Data(Vec<u8>),
    /// An event too large to observe.
    Oversized,
}

/// Decoder state between chunks.
#[derive(Debug)]
pub struct Decoder {
    /// Bytes of the current, unfinished line.
    line: Vec<u8>,
    /// The data buffer of the event being built.
    data: Vec<u8>,
    /// Whether the event has any `data` field yet.
    has_data: bool,
    /// The last chunk ended in CR: a LF starting the next one ends nothing.
    after_cr: bool,
    /// Still at the start of the stream, where a BOM may stand.
    at_start: bool,
    /// The current event grew past `limit`; drop it at dispatch.
    oversized: bool,
    /// The longest line or event data held, in bytes.
    limit: usize,
    /// The id an `id` field set since the last dispatch.
    id_buffer: Option<Vec<u8>>,
    /// The last event id of a dispatched event, if any `id` field came.
    last_id: Option<Vec<u8>>,
    /// The last valid `retry` value, in milliseconds.
    retry: Option<u64>,
}

impl Default for Decoder {
    fn default() -> Decoder {
        Decoder::new()
    }
}

impl Decoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Decoder {
        Decoder::with_limit(MAX_EVENT)
    }

    /// A decoder that holds at most `limit` bytes of a line or of an
    /// event's data; a longer event is reported as [`Item::Oversized`].
    pub fn with_limit(limit: usize) -> Decoder {
        Decoder {
            line: Vec::new(),
            data: Vec::new(),
            has_data: false,
            after_cr: false,
            at_start: true,
            oversized: false,
            limit,
            id_buffer: None,
            last_id: None,
            retry: None,
        }
    }

    /// The last event id this stream set, as of its last dispatched event:
    /// `None` when no `id` field came, empty when one cleared it. A reader
    /// resuming the stream sends it as `Last-Event-ID` unless it is empty.
    pub fn last_event_id(&self) -> Option<&[u8]> {
        self.last_id.as_deref()
    }

    /// The reconnection time the stream asked for with `retry`, in
    /// milliseconds (the last valid one), if it asked.
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// The bytes of memory the decoder holds between chunks: its line and
    /// data buffers and the ids it keeps. A caller that bounds what it
    /// holds across many streams weighs each decoder by this.
    pub fn held(&self) -> usize {
        self.line.capacity()
            + self.data.capacity()
            + self.id_buffer.as_ref().map_or(0, Vec::capacity)
            + self.last_id.as_ref().map_or(0, Vec::capacity)
    }

    /// Feeds one chunk and calls `emit` for every event it completed.
    pub fn feed(&mut self, mut chunk: &[u8], emit: &mut impl FnMut(Item)) {
        if self.at_start {
            // The BOM may itself arrive split; wait for three bytes.
            let have = [self.line.as_slice(), chunk].concat();
            if have.len() < 3 && b"\xEF\xBB\xBF".starts_with(&have) {
                self.line = have;
                return;
            }
            self.at_start = false;
            self.line.clear();
            let rest = have.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&have);
            return self.lines(rest, emit);
        }
        if self.after_cr && chunk.first() == Some(&b'\n') {
            chunk = &chunk[1..];
        }
        self.after_cr = false;
        self.lines(chunk, emit);
    }

    fn lines(&mut self, mut rest: &[u8], emit: &mut impl FnMut(Item)) {
        while let Some(pos) = memchr::memchr2(b'\n', b'\r', rest) {
            let line = std::mem::take(&mut self.line);
            if line.is_empty() {
                self.line_done(&rest[..pos], emit);
            } else {
                let mut whole = line;
                whole.extend_from_slice(&rest[..pos]);
                self.line_done(&whole, emit);
            }
            if rest[pos] == b'\r' {
                match rest.get(pos + 1) {
                    Some(b'\n') => rest = &rest[pos + 2..],
                    Some(_) => rest = &rest[pos + 1..],
                    None => {
                        self.after_cr = true;
                        rest = &[];
                    }
                }
            } else {
                rest = &rest[pos + 1..];
            }
        }
        if self.line.len() + rest.len() > self.limit {
            self.oversized = true;
            self.line.clear();
        } else {
            self.line.extend_from_slice(rest);
        }
    }

    fn line_done(&mut self, line: &[u8], emit: &mut impl FnMut(Item)) {
        if line.is_empty() {
            return self.dispatch(emit);
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match field {
            b"id" if !value.contains(&0) => {
                self.id_buffer = Some(value.to_vec());
                return;
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                // Too many digits to be a wait anyone means: the longest.
                let ms = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
                self.retry = Some(ms.unwrap_or(u64::MAX));
                return;
            }
            _ => {}
        }
        if field != b"data" || self.oversized {
            return;
        }
        if self.data.len() + value.len() + 1 > self.limit {
            self.oversized = true;
            self.data = Vec::new();
            return;
        }
        if self.has_data {
            self.data.push(b'\n');
        }
        self.has_data = true;
        self.data.extend_from_slice(value);
    }

    fn dispatch(&mut self, emit: &mut impl FnMut(Item)) {
        if let Some(id) = self.id_buffer.take() {
            // Later events without an `id` field keep this one.
            self.last_id = Some(id);
        }
        if std::mem::take(&mut self.oversized) {
            emit(Item::Oversized);
        } else if self.has_data {
            emit(Item::Data(std::mem::take(&mut self.data)));
        }
        self.data.clear();
        self.has_data = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(chunks: &[&[u8]]) -> Vec<Item> {
        let mut d = Decoder::new();
        let mut out = Vec::new();
        for c in chunks {
            d.feed(c, &mut |i| out.push(i));
        }
        out
    }

    fn data(s: &str) -> Item {
        Item::Data(s.as_bytes().to_vec())
    }

    #[test]
    fn joins_multi_line_data_and_skips_comments() {
        let stream =
            b": hello\nid: 1\nevent: message\ndata: {\"a\":\ndata:1}\n\n: keepalive\n\ndata\n\n";
        assert_eq!(decode(&[stream]), [data("{\"a\":\n1}"), data("")]);
    }

    #[test]
    fn every_line_ending_and_split_anywhere() {
        let stream = b"\xEF\xBB\xBFdata: x\r\ndata:  y\rdata:z\n\r\ndata: last\r\r";
        let want = [data("x\n y\nz"), data("last")];
        assert_eq!(decode(&[stream]), want);
        for cut in 0..stream.len() {
            let (a, b) = stream.split_at(cut);
            assert_eq!(decode(&[a, b]), want, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(decode(&bytes), want);
    }

    #[test]
    fn an_unfinished_event_is_not_dispatched() {
        assert_eq!(decode(&[b"data: {}\n"]), []);
        assert_eq!(decode(&[b"id: 4\n\n"]), [], "no data, no event");
    }

    #[test]
    fn an_event_past_the_limit_is_dropped_whole() {
        let mut d = Decoder::with_limit(8);
        let mut out = Vec::new();
        let stream: &[u8] = b"data: 12345\ndata: 678\n\ndata: one-long-line\n\ndata: ok\n\n";
        for piece in stream.chunks(3) {
            d.feed(piece, &mut |i| out.push(i));
        }
        assert_eq!(out, [Item::Oversized, Item::Oversized, data("ok")]);
        assert!(d.line.capacity() <= 16 && d.data.capacity() <= 16);
    }

    fn fields(chunks: &[&[u8]]) -> (Option<Vec<u8>>, Option<u64>) {
        let mut d = Decoder::new();
        for c in chunks {
            d.feed(c, &mut |_| {});
        }
        (d.last_event_id().map(<[u8]>::to_vec), d.retry())
    }

    #[test]
    fn ids_take_effect_when_their_event_is_dispatched() {
        let id = |s: &str| Some(s.as_bytes().to_vec());
        assert_eq!(fields(&[b"data: x\n\n"]), (None, None));
        // A priming event: an id and empty data.
        assert_eq!(fields(&[b"id: event-1\ndata: \n\n"]), (id("event-1"), None));
        assert_eq!(fields(&[b"id: 7\n\n"]), (id("7"), None), "no data");
        assert_eq!(fields(&[b"id: 7\n\nid: 8\ndata: x\n"]), (id("7"), None));
        assert_eq!(
            fields(&[b"id: 7\n\ndata: later\n\n"]),
            (id("7"), None),
            "the id stays for events without one"
        );
        assert_eq!(fields(&[b"id: 7\n\nid\n\n"]), (id(""), None), "cleared");
        assert_eq!(
            fields(&[b"id: 7\n\nid: a\0b\n\n"]),
            (id("7"), None),
            "an id with NUL is ignored"
        );
        assert_eq!(fields(&[b"id:  x \n\n"]), (id(" x "), None));
        let split: Vec<&[u8]> = b"i\x64: e-2\r\n\r\n".chunks(1).collect();
        assert_eq!(fields(&split), (id("e-2"), None));
    }

    #[test]
    fn retry_takes_digits_only() {
        assert_eq!(fields(&[b"retry: 500\n"]), (None, Some(500)), "at once");
        assert_eq!(fields(&[b"retry: 500\nretry: 20\n\n"]).1, Some(20));
        for bad in [
            &b"retry: 5s\n"[..],
            b"retry: -1\n",
            b"retry:\n",
            b"retry: 1.5\n",
        ] {
            assert_eq!(fields(&[b"retry: 9\n", bad]).1, Some(9), "{bad:?}");
        }
        assert_eq!(
            fields(&[b"retry: 99999999999999999999999\n"]).1,
            Some(u64::MAX)
        );
        assert_eq!(
            fields(&[b"retry:  5\n"]).1,
            None,
            "a second space is a value"
        );
        assert_eq!(
            decode(&[b"id: 1\nretry: 500\ndata: {}\n\n"]),
            [data("{}")],
            "neither is data"
        );
    }
}
