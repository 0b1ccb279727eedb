//! The common journal line, read without serde: a current record laid out
//! exactly as capture writes it.
//!
//! Almost every line of a journal is one: no whitespace, its members in
//! capture's order, strings without escapes, numbers as plain integers and
//! an arguments shape already in canonical form. Such a line is read here
//! by matching that layout byte for byte and checking each value as the
//! contract's `validate()` does, which costs a fraction of serde's general
//! reading (parsing was most of a large load). Anything else (another
//! order, whitespace, an escape, a number serde reads differently, a
//! `contract` member, a value `validate()` refuses) is not read here but
//! handed to the full reader, which reads it or says why it is refused. So
//! this reader never refuses a line, and what it accepts the full reader
//! accepts with the same row (its tests hold the two to that).

use shared::id::{EventId, SessionToken, TemplateId};
use shared::record::{
    Channel, Columns, Origin, Outcome, SCHEMA_V1, Transport, Unknown, is_stored_time,
};

/// The row of `line`, when it is a current record in capture's own layout
/// with an outcome of `ok`, `error` or `unknown` and nothing the full
/// reader would rewrite; else `None`.
pub fn columns(line: &str) -> Option<Columns<'_>> {
    let mut r = Reader { text: line, at: 0 };
    r.expect("{\"schema\":\"")?;
    (r.string()? == SCHEMA_V1).then_some(())?;
    r.expect(",\"identity\":{\"event_id\":\"")?;
    let event_id = r.string().filter(|id| EventId::is_valid(id))?;
    r.expect(",\"session\":\"")?;
    let session = r.string().filter(|s| SessionToken::is_valid(s))?;
    r.expect(",\"seq\":")?;
    let seq = r.natural().filter(|&seq| seq > 0)?;
    r.expect("},\"origin\":\"")?;
    let origin = Origin::parse(r.string()?)?;
    r.expect(",\"transport\":\"")?;
    let transport = Transport::parse(r.string()?)?;
    r.expect(",\"server\":\"")?;
    let server = r.string().filter(|s| !s.is_empty())?;
    r.expect(",\"tool\":\"")?;
    let tool = r.string().filter(|s| !s.is_empty())?;
    r.expect(",\"started_at\":\"")?;
    let started_at = r.string().filter(|t| is_stored_time(t))?;
    r.expect(",\"duration_ms\":")?;
    let duration_ms = r.or_null(Reader::natural)?;
    r.expect(",\"advertised\":")?;
    let advertised = r.or_null(Reader::boolean)?;
    r.expect(",\"args_shape\":")?;
    let args_shape = r.shape()?;
    r.expect(",\"outcome\":\"")?;
    let outcome = Outcome::parse(r.string()?)?;
    let mut row = Columns {
        schema: 1,
        event_id: Some(event_id),
        session,
        seq,
        origin: origin.as_str(),
        transport: Some(transport.as_str()),
        server,
        tool,
        started_at,
        duration_ms,
        advertised,
        args_shape,
        outcome: outcome.as_str(),
        unknown: None,
        channel: None,
        code: None,
        template_id: None,
        retryable: None,
        contract_kept: None,
        contract_at: None,
        contract_keyword: None,
    };
    match outcome {
        Outcome::Ok => {}
        Outcome::Unknown => {
            r.expect(",\"unknown\":\"")?;
            row.unknown = Some(Unknown::parse(r.string()?)?.as_str());
        }
        Outcome::Error => {
            r.expect(",\"error\":{\"channel\":\"")?;
            row.channel = Some(Channel::parse(r.string()?)?.as_str());
            r.expect(",\"code\":")?;
            row.code = r.or_null(Reader::integer)?;
            r.expect(",\"template_id\":")?;
            row.template_id = r.or_null(|r| {
                r.expect("\"")?;
                r.string().filter(|t| TemplateId::is_valid(t))
            })?;
            r.expect(",\"retryable\":")?;
            row.retryable = r.or_null(Reader::boolean)?;
            r.expect("}")?;
        }
    }
    r.expect("}")?;
    (r.at == line.len()).then_some(row)
}

/// Containers an arguments shape may nest here; a deeper one is left to
/// the full reader (serde_json refuses past 128).
const MAX_DEPTH: usize = 64;

/// A cursor over the line; every method answers `None` where the text is
/// not what it reads.
struct Reader<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Reader<'a> {
    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes().get(self.at).copied()
    }

    /// `literal` comes next; reads past it.
    fn expect(&mut self, literal: &str) -> Option<()> {
        self.bytes()[self.at..]
            .starts_with(literal.as_bytes())
            .then(|| self.at += literal.len())
    }

    /// The rest of a string whose opening quote was read, and past its
    /// closing one: only a string with no escape and no control character
    /// (serde_json refuses those raw, and an escape would be rewritten).
    fn string(&mut self) -> Option<&'a str> {
        let rest = &self.bytes()[self.at..];
        let len = memchr::memchr2(b'"', b'\\', rest)?;
        if rest[len] == b'\\' || rest[..len].iter().any(|&b| b < 0x20) {
            return None;
        }
        let start = self.at;
        self.at += len + 1;
        Some(&self.text[start..start + len])
    }

    /// A non-negative integer written plainly: `0`, or up to 18 digits not
    /// starting with 0, which always fit an `i64`. A longer one, a sign, a
    /// fraction or an exponent is left to the full reader.
    fn natural(&mut self) -> Option<i64> {
        let digits = self.bytes()[self.at..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let text = &self.bytes()[self.at..self.at + digits];
        if digits == 0 || digits > 18 || (digits > 1 && text[0] == b'0') {
            return None;
        }
        self.at += digits;
        Some(text.iter().fold(0i64, |n, &d| n * 10 + i64::from(d - b'0')))
    }

    /// A [`natural`](Reader::natural) integer, or one with a minus sign
    /// (but not `-0`).
    fn integer(&mut self) -> Option<i64> {
        if self.peek() != Some(b'-') {
            return self.natural();
        }
        self.at += 1;
        self.natural().filter(|&n| n != 0).map(|n| -n)
    }

    fn boolean(&mut self) -> Option<bool> {
        if self.expect("true").is_some() {
            Some(true)
        } else {
            self.expect("false").map(|()| false)
        }
    }

    /// `null` as `Some(None)`, else what `read` reads.
    fn or_null<T>(&mut self, read: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        if self.expect("null").is_some() {
            return Some(None);
        }
        read(self).map(Some)
    }

    /// An arguments shape in canonical form, as its text: objects, arrays,
    /// strings and `true`, `false` or `null`, with no whitespace and every
    /// object's keys in strictly increasing byte order. Valid JSON that
    /// the full reader keeps as written.
    fn shape(&mut self) -> Option<&'a str> {
        let start = self.at;
        // For each open container: whether it is an object, and the last
        // key read in it (its range in the text).
        let mut open = [(false, None::<(usize, usize)>); MAX_DEPTH];
        let mut depth = 0;
        loop {
            // A value starts here.
            match self.peek()? {
                b'"' => {
                    self.at += 1;
                    self.string()?;
                }
                b't' => self.expect("true")?,
                b'f' => self.expect("false")?,
                b'n' => self.expect("null")?,
                first @ (b'{' | b'[') => {
                    self.at += 1;
                    let object = first == b'{';
                    let close = if object { b'}' } else { b']' };
                    if self.peek() == Some(close) {
                        self.at += 1;
                    } else {
                        if depth == MAX_DEPTH {
                            return None;
                        }
                        open[depth] = (object, None);
                        depth += 1;
                        if object {
                            self.key(&mut open[depth - 1].1)?;
                        }
                        continue;
                    }
                }
                _ => return None,
            }
            // A value ended: close what it ends, or go on to the next.
            loop {
                if depth == 0 {
                    return Some(&self.text[start..self.at]);
                }
                let object = open[depth - 1].0;
                match (self.peek()?, object) {
                    (b',', true) => {
                        self.at += 1;
                        self.key(&mut open[depth - 1].1)?;
                        break;
                    }
                    (b',', false) => {
                        self.at += 1;
                        break;
                    }
                    (b'}', true) | (b']', false) => {
                        self.at += 1;
                        depth -= 1;
                    }
                    _ => return None,
                }
            }
        }
    }

    /// A key and its colon, greater in byte order than `last`, which it
    /// becomes.
    fn key(&mut self, last: &mut Option<(usize, usize)>) -> Option<()> {
        self.expect("\"")?;
        let start = self.at;
        let key = self.string()?.as_bytes();
        if let Some((from, to)) = *last
            && key <= &self.bytes()[from..to]
        {
            return None;
        }
        *last = Some((start, start + key.len()));
        self.expect(":")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row::read_fully;

    const HEAD: &str = r#"{"schema":"mcpeval.call/1","identity":{"event_id":"01a19467-e80f-7652-a9a7-da3e6ac22cbc","session":"s-467008c7b209e3fe","seq":12},"origin":"capture","transport":"http","server":"weather","tool":"get_forecast","started_at":"2026-11-01T00:00:00.015Z","#;

    /// Lines in capture's layout, each of which this reader reads.
    fn plain_lines() -> Vec<String> {
        [
            r#""duration_ms":390,"advertised":true,"args_shape":{"*":"null","filters":{"lang":"string","safe":"boolean"},"ids":["integer"],"limit":"integer"},"outcome":"ok"}"#,
            r#""duration_ms":null,"advertised":null,"args_shape":{},"outcome":"ok"}"#,
            r#""duration_ms":0,"advertised":false,"args_shape":{"a":[{"b":"string","c":[]}],"d":[[]]},"outcome":"ok"}"#,
            r#""duration_ms":1302,"advertised":true,"args_shape":{"sql":"string"},"outcome":"error","error":{"channel":"tool","code":-32001,"template_id":"t-5ee0fc2d17b091b2","retryable":false}}"#,
            r#""duration_ms":7,"advertised":true,"args_shape":{},"outcome":"error","error":{"channel":"jsonrpc","code":null,"template_id":null,"retryable":null}}"#,
            r#""duration_ms":7,"advertised":true,"args_shape":{},"outcome":"error","error":{"channel":"tool","code":0,"template_id":"t-0123456789abcdef","retryable":true}}"#,
            r#""duration_ms":257,"advertised":true,"args_shape":{},"outcome":"unknown","unknown":"malformed"}"#,
        ]
        .iter()
        .enumerate()
        // Some with the first seq, so that an edit can make it 0.
        .map(|(i, tail)| match i % 2 {
            0 => format!("{HEAD}{tail}"),
            _ => format!("{HEAD}{tail}").replace(r#""seq":12"#, r#""seq":1"#),
        })
        .collect()
    }

    /// The row the full reader makes of `text`, compared with `row`.
    fn full_equals(text: &str, row: &Columns<'_>) -> Result<bool, String> {
        read_fully(text.as_bytes(), |full| full == row).map_err(|e| e.to_string())
    }

    #[test]
    fn reads_capture_lines_as_the_full_reader_does() {
        for line in plain_lines() {
            let row = columns(&line).unwrap_or_else(|| panic!("not read: {line}"));
            assert_eq!(full_equals(&line, &row), Ok(true), "{line}");
        }
    }

    #[test]
    fn leaves_other_lines_to_the_full_reader() {
        let contract = format!(
            r#"{HEAD}"duration_ms":1,"advertised":true,"args_shape":{{}},"outcome":"ok","contract":{{"kept":true}}}}"#
        );
        let escaped = plain_lines()[0].replace("get_forecast", r"get\u005fforecast");
        let spaced = plain_lines()[0].replace(r#""seq":12"#, r#""seq": 12"#);
        let unsorted =
            plain_lines()[0].replace(r#""ids":["integer"],"limit""#, r#""limit":"integer","ids""#);
        let upper = plain_lines()[0].replace("01a19467-e80f", "01A19467-E80F");
        for line in [contract, escaped, spaced, upper] {
            assert!(columns(&line).is_none(), "{line}");
            assert!(read_fully(line.as_bytes(), |_| ()).is_ok(), "{line}");
        }
        assert!(columns(&unsorted).is_none(), "{unsorted}");
    }

    /// Every line one edit away from a capture line (a character removed,
    /// replaced or inserted, from characters that matter to JSON and to
    /// the checks): whatever this reader reads, the full reader reads to
    /// the same row. Many edits make lines the full reader refuses, or
    /// reads to another row; none of them may be read here otherwise.
    #[test]
    fn every_edit_it_reads_the_full_reader_reads_the_same() {
        const CHARS: &[char] = &[
            '{', '}', '[', ']', '"', ',', ':', '\\', ' ', '\u{1}', '0', '1', '9', '-', '+', '.',
            'e', 'E', 't', 'f', 'n', 'u', 'l', 'x', 'A', 'a', 'Z', 'é',
        ];
        let (mut read, mut tried) = (0, 0);
        for line in plain_lines() {
            let chars: Vec<char> = line.chars().collect();
            let mut edits = Vec::new();
            for i in 0..=chars.len() {
                for &c in CHARS {
                    edits.push((i, 0, Some(c)));
                    if i < chars.len() {
                        edits.push((i, 1, Some(c)));
                    }
                }
                if i < chars.len() {
                    edits.push((i, 1, None));
                }
            }
            for (at, removed, inserted) in edits {
                let mut edited = chars.clone();
                edited.splice(at..at + removed, inserted);
                let text: String = edited.into_iter().collect();
                tried += 1;
                if let Some(row) = columns(&text) {
                    read += 1;
                    assert_eq!(full_equals(&text, &row), Ok(true), "{text}");
                }
            }
        }
        // The edits that keep a line in capture's layout (a digit of a
        // number, a letter of a name) are read here, so the test compares
        // something.
        assert!(read > 1000 && read < tried, "{read} of {tried} read");
    }
}
