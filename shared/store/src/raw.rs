//! Reading JSON without building a tree: the members of an object, a
//! string or a boolean, each borrowed from the text it was written in.
//!
//! Capture reads a few members of every message it relays; parsing each
//! message into a `serde_json::Value` allocated a node for every member and
//! a string for every key and text, most of it never looked at. Here the
//! members asked for come back as their JSON text, checked but not copied,
//! and read as far as they are needed. The answers are the ones a `Value`
//! would give: when a key repeats, its last member counts, as in a parsed
//! object, and text a parse into a `Value` refuses is refused here too
//! ([`object`], [`elements`]), though reading in place alone would let
//! some of it by.
//!
//! The text is read in one pass by [`Scan`], which checks the JSON grammar
//! as serde_json does when it skips a value (its tests hold the two to the
//! same answers): serde_json's own skipping, through its `Deserializer`,
//! took most of capture's time per message.

use std::borrow::Cow;

/// The members of the object `raw` named `names`, each `None` when absent;
/// `None` when `raw` is not an object. A member's text is as written,
/// `null` included. `raw` is part of a text [`object`] or [`elements`]
/// accepted, so it is not checked again.
pub fn members<'a, const N: usize>(raw: &'a str, names: [&str; N]) -> Option<Found<'a, N>> {
    read_within(raw, names, N, [], None, false).map(|(found, ..)| found)
}

/// [`members`] of the JSON text `text`: `None` when it is not one object
/// that parses into a `Value`.
pub fn object<'a, const N: usize>(text: &'a str, names: [&str; N]) -> Option<Found<'a, N>> {
    read_within(text, names, N, [], None, true).map(|(found, ..)| found)
}

/// [`object`], and in the same pass the members named `inner` of its
/// member `names[within]` when that is an object (all `None` when it is
/// not): a message's `params` or `result` read with the message, not read
/// again after it. When `inner[listed]` is an object, its members are
/// listed too ([`Entries`], empty when it is not): a request's arguments,
/// read once to be found and shaped.
pub fn object_within<'a, const N: usize, const M: usize>(
    text: &'a str,
    names: [&str; N],
    within: usize,
    inner: [&str; M],
    listed: Option<usize>,
) -> Option<(Found<'a, N>, Found<'a, M>, Entries<'a>)> {
    read_within(text, names, within, inner, listed, true)
}

/// The members found of the names asked for, in their order.
pub type Found<'a, const N: usize> = [Option<&'a str>; N];

/// The members of an object in the order written, each its key
/// (unescaped) and its value's text.
pub type Entries<'a> = Vec<(Cow<'a, str>, &'a str)>;

/// The members of [`object_within`], read where they are returned (a
/// message's are some two hundred bytes, not copied there after); when
/// `checked`, `None` for a text that does not parse into a `Value`.
#[inline(always)]
fn read_within<'a, const N: usize, const M: usize>(
    text: &'a str,
    names: [&str; N],
    within: usize,
    inner: [&str; M],
    listed: Option<usize>,
    checked: bool,
) -> Option<(Found<'a, N>, Found<'a, M>, Entries<'a>)> {
    let mut answer = Some(([None; N], [None; M], Vec::new()));
    let (found, members, entries) = answer.as_mut().expect("an answer, made above");
    let suspect = whole(text, |scan| {
        scan.members(|scan, key| {
            let key = key.text()?;
            let Some(i) = position(&names, &key) else {
                return scan.value_text().map(drop);
            };
            if i != within {
                found[i] = Some(scan.value_text()?);
                return Some(());
            }
            // A repeated key's last member counts, and so do its members.
            *members = [None; M];
            entries.clear();
            if M == 0 || scan.peek() != Some(b'{') {
                found[i] = Some(scan.value_text()?);
                return Some(());
            }
            let start = scan.at;
            scan.members(|scan, key| {
                let key = key.text()?;
                let Some(j) = position(&inner, &key) else {
                    return scan.value_text().map(drop);
                };
                if Some(j) != listed {
                    members[j] = Some(scan.value_text()?);
                    return Some(());
                }
                // Again, the last member listed counts.
                entries.clear();
                if scan.peek() != Some(b'{') {
                    members[j] = Some(scan.value_text()?);
                    return Some(());
                }
                let start = scan.at;
                scan.members(|scan, key| {
                    entries.push((key.text()?, scan.value_text()?));
                    Some(())
                })?;
                members[j] = Some(scan.since(start));
                Some(())
            })?;
            found[i] = Some(scan.since(start));
            Some(())
        })
    })?;
    if checked && suspect && !parses(text) {
        return None;
    }
    answer
}

/// Where `key` is among `names`. Names and keys are short: two words
/// from each end compared, not a call to compare bytes, for each name of
/// the key's length.
#[inline(always)]
fn position(names: &[&str], key: &str) -> Option<usize> {
    let key = key.as_bytes();
    names.iter().position(|name| {
        let name = name.as_bytes();
        name.len() == key.len() && same(name, key)
    })
}

/// Whether `a` and `b`, of the same length, hold the same bytes.
#[inline(always)]
fn same(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    let word = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().expect("eight"));
    let half = |s: &[u8], at: usize| u32::from_le_bytes(s[at..at + 4].try_into().expect("four"));
    match n {
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        4..=7 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        _ => a == b,
    }
}

/// Each member of the object `raw` in the order written, its key
/// unescaped; `None` when `raw` is not one object. `raw` is part of a text
/// [`object`] or [`elements`] accepted.
pub fn entries(raw: &str) -> Option<Entries<'_>> {
    let mut all = Vec::new();
    whole(raw, |scan| {
        scan.members(|scan, key| {
            all.push((key.text()?, scan.value_text()?));
            Some(())
        })
    })?;
    Some(all)
}

/// Each element of the array `text`, as written; `None` when it is not one
/// array that parses into a `Value`.
pub fn elements(text: &str) -> Option<Vec<&str>> {
    let mut all = Vec::new();
    let suspect = whole(text, |scan| {
        scan.elements(|element| {
            all.push(element);
            Some(())
        })
    })?;
    (!suspect || parses(text)).then_some(all)
}

/// The first element of the array `raw`, if it is an array with one. `raw`
/// is part of a text [`object`] or [`elements`] accepted.
pub fn first_element(raw: &str) -> Option<&str> {
    let mut first = None;
    whole(raw, |scan| {
        scan.elements(|element| {
            first = first.or(Some(element));
            Some(())
        })
    })?;
    first
}

/// Reads all of `text` with `read`, which starts at its first byte past
/// whitespace: `None` unless `read` reads it and only whitespace is left;
/// else whether the text is suspect: whether it showed, as it was read,
/// anything that may keep it from parsing into a `Value` ([`parses`]).
fn whole<'a>(text: &'a str, read: impl FnOnce(&mut Scan<'a>) -> Option<()>) -> Option<bool> {
    let mut scan = Scan::new(text);
    scan.space();
    read(&mut scan)?;
    scan.end()?;
    Some(scan.suspect || scan.opened >= SUSPECT_DEPTH)
}

/// Nesting this deep is parsed whole to decide whether it parses:
/// serde_json refuses a `Value` of 128 levels, and skipping a member it
/// counts none.
const SUSPECT_DEPTH: usize = 100;

/// A number with a run of more digits than this is parsed whole to decide
/// whether it parses: past 308 integer digits an `f64` is infinite, which
/// serde_json refuses in a `Value` and lets by in a member it skips.
const SUSPECT_DIGITS: usize = 300;

/// Whether the valid JSON text `text` also parses into a `Value`, asked
/// of a text [`Scan`] found suspect. Reading in place lets three things by
/// that a `Value` refuses: nesting past serde_json's limit, a number out
/// of an `f64`'s range, and a lone surrogate escape. The scan marks a text
/// that holds what may be one of them (many containers, an exponent, a
/// long run of digits, a `\uD…` escape); a pass over its bytes looks
/// closer (the depth, not the count, of its containers), and only then,
/// rarely, is the text parsed whole to decide.
fn parses(text: &str) -> bool {
    let bytes = text.as_bytes();
    let (mut depth, mut digits) = (0usize, 0usize);
    let mut suspect = false;
    let mut i = 0;
    while i < bytes.len() && !suspect {
        match bytes[i] {
            b'"' => {
                // Strings are most of a message: jump from escape to
                // escape to the closing quote.
                i += 1;
                while let Some(at) = memchr::memchr2(b'"', b'\\', &bytes[i..]) {
                    i += at;
                    if bytes[i] == b'"' {
                        break;
                    }
                    suspect |= bytes.get(i + 1) == Some(&b'u')
                        && matches!(bytes.get(i + 2), Some(b'd' | b'D'));
                    i += 2;
                    if i >= bytes.len() {
                        break;
                    }
                }
                digits = 0;
            }
            b'{' | b'[' => {
                depth += 1;
                suspect = depth >= SUSPECT_DEPTH;
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'0'..=b'9' => {
                digits += 1;
                suspect = digits > SUSPECT_DIGITS;
            }
            // An exponent follows a digit; the `e` of `true` and `false`
            // does not.
            b'e' | b'E' => suspect = digits > 0,
            _ => digits = 0,
        }
        i += 1;
    }
    !suspect || serde_json::from_str::<serde_json::Value>(text).is_ok()
}

/// `bytes` as text, if it is UTF-8. What capture reads is mostly ASCII,
/// told in a pass a block at a time; only other text is validated in full.
pub fn utf8(bytes: &[u8]) -> Option<&str> {
    if ascii(bytes) {
        // SAFETY: ASCII text is UTF-8.
        return Some(unsafe { std::str::from_utf8_unchecked(bytes) });
    }
    std::str::from_utf8(bytes).ok()
}

/// Whether every byte of `bytes` is ASCII: sixteen bytes looked at
/// together where the processor's vectors allow (the last sixteen
/// overlapping those before), else as the standard library does.
fn ascii(bytes: &[u8]) -> bool {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    if let Some(last) = bytes.len().checked_sub(16) {
        let mut high = 0;
        let mut at = 0;
        while at < last {
            high |= block_highs(&bytes[at..]);
            at += 16;
        }
        return high | block_highs(&bytes[last..]) == 0;
    }
    bytes.is_ascii()
}

/// The text of a JSON string (`None` when `raw` is not one), borrowed when
/// it holds no escape.
pub fn string(raw: &str) -> Option<Cow<'_, str>> {
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    if !inner.contains('\\') {
        // Valid JSON with no escape: the text between the quotes is the
        // string itself.
        return Some(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(raw).ok().map(Cow::Owned)
}

/// The boolean `raw` is, if it is one.
pub fn boolean(raw: &str) -> Option<bool> {
    match raw {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// Whether `raw` is `null`.
pub fn is_null(raw: &str) -> bool {
    raw == "null"
}

/// Whether `raw` is an object.
pub fn is_object(raw: &str) -> bool {
    raw.starts_with('{')
}

/// Where the first byte at or after `from` that ends a run of plain string
/// text lies (a quote, a backslash or a control character: the bytes JSON
/// escapes), if any. Sixteen bytes are looked at together where the
/// processor's vectors allow, else eight in a word: a message's strings
/// are short and many, and a byte at a time cost more than the rest of
/// reading them.
#[inline(always)]
pub(crate) fn stop(bytes: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    if let Some(last) = bytes.len().checked_sub(16) {
        while at <= last {
            let found = block_stops(&bytes[at..]);
            if found != 0 {
                return Some(at + found.trailing_zeros() as usize);
            }
            at += 16;
        }
        // Fewer than sixteen bytes are left: the text's last sixteen are
        // looked at, those before `at` left out (looked at already, or
        // not asked about).
        if at >= bytes.len() {
            return None;
        }
        let found = block_stops(&bytes[last..]) >> (at - last);
        return (found != 0).then(|| at + found.trailing_zeros() as usize);
    }
    while let Some(chunk) = bytes.get(at..at + 8) {
        let found = word_stops(u64::from_le_bytes(chunk.try_into().expect("eight bytes")));
        if found != 0 {
            return Some(at + found.trailing_zeros() as usize / 8);
        }
        at += 8;
    }
    let rest = bytes.get(at..)?;
    rest.iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .map(|i| at + i)
}

/// The high bit of each byte of `word` (read little-endian) that [`stop`]
/// stops at, by the classic tests for a zero byte and for a byte below a
/// bound: exact as to whether any byte is one, and as to the lowest that
/// is; past it a byte's bit may be set where it is not one.
#[inline(always)]
pub(crate) fn word_stops(word: u64) -> u64 {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    let below = |w: u64, bound: u64| w.wrapping_sub(ONES * bound) & !w & HIGHS;
    below(word ^ (ONES * u64::from(b'"')), 1)
        | below(word ^ (ONES * u64::from(b'\\')), 1)
        | below(word, 0x20)
}

/// A bit for each of the first sixteen bytes of `bytes` (at least
/// sixteen) that [`stop`] stops at, the first byte's the lowest: each byte
/// compared on its own, so every bit is exact.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn block_stops(bytes: &[u8]) -> u32 {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    let block = &bytes[..16];
    // SAFETY: the target has SSE2 (every x86-64 processor does), and
    // `block` is sixteen readable bytes, which the load takes at any
    // alignment.
    let found = unsafe {
        let block = _mm_loadu_si128(block.as_ptr().cast());
        let quote = _mm_cmpeq_epi8(block, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(block, _mm_set1_epi8(b'\\' as i8));
        // A control character is a byte no greater than its minimum
        // with 0x1f.
        let control = _mm_cmpeq_epi8(_mm_min_epu8(block, _mm_set1_epi8(0x1f)), block);
        _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control))
    };
    found as u32
}

/// A bit for each of the first sixteen bytes of `bytes` (at least
/// sixteen) that is not ASCII, the first byte's the lowest.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn block_highs(bytes: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_loadu_si128, _mm_movemask_epi8};
    let block = &bytes[..16];
    // SAFETY: as in `block_stops`.
    let found = unsafe { _mm_movemask_epi8(_mm_loadu_si128(block.as_ptr().cast())) };
    found as u32
}

/// The most containers [`Scan`] follows open at once. Past it the text is
/// refused: serde_json refuses a `Value` nested past 128 levels anyway.
const MAX_DEPTH: usize = 256;

/// A key as written, between its quotes.
struct Key<'a> {
    inner: &'a str,
    escaped: bool,
}

impl<'a> Key<'a> {
    /// The key's text, unescaped: `None` when serde_json would refuse it as
    /// a key (a lone surrogate escape).
    #[inline(always)]
    fn text(&self) -> Option<Cow<'a, str>> {
        if !self.escaped {
            return Some(Cow::Borrowed(self.inner));
        }
        let quoted = format!("\"{}\"", self.inner);
        serde_json::from_str::<String>(&quoted).ok().map(Cow::Owned)
    }
}

/// A cursor over JSON text that checks its grammar as it skips it, as
/// serde_json does: the whitespace of JSON alone, strings without raw
/// control characters and with known escapes, numbers without a leading
/// zero or a bare sign, point or exponent, no trailing comma, and nothing
/// after the value but whitespace ([`Scan::end`]). Every method answers
/// `None` at the first byte that is not so.
///
/// Its smallest steps (a byte, a run of whitespace, a key, a string) are
/// inlined where they are taken: a message is mostly short keys and
/// strings, and a call for each cost capture a twentieth of its
/// instructions.
struct Scan<'a> {
    text: &'a str,
    at: usize,
    /// How many containers were opened: their depth is at most this.
    opened: usize,
    /// Whether a number with an exponent or a long run of digits, or a
    /// `\uD…` escape, was read ([`parses`]).
    suspect: bool,
}

impl<'a> Scan<'a> {
    fn new(text: &'a str) -> Scan<'a> {
        Scan {
            text,
            at: 0,
            opened: 0,
            suspect: false,
        }
    }

    /// The text from `start` to the cursor.
    #[inline(always)]
    fn since(&self, start: usize) -> &'a str {
        self.between(start, self.at)
    }

    /// The text from `start` to `end`, two places the scan stopped at.
    /// Slicing checks each end is on a character's boundary; these are
    /// known to be. The cursor passes a byte that is not ASCII only by
    /// stepping over a whole string to its closing quote; any step that
    /// reads a single byte of another kind answers `None`, and nothing is
    /// sliced after it. So each place is the text's start, or follows or
    /// holds an ASCII byte.
    #[inline(always)]
    fn between(&self, start: usize, end: usize) -> &'a str {
        debug_assert!(start <= end && end <= self.text.len());
        debug_assert!(self.text.is_char_boundary(start) && self.text.is_char_boundary(end));
        // SAFETY: `start <= end <= len`, both on a character's boundary
        // (above): the slice is valid UTF-8 within the text.
        unsafe { self.text.get_unchecked(start..end) }
    }

    #[inline(always)]
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    #[inline(always)]
    fn next(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.at += 1;
        Some(byte)
    }

    /// Skips JSON whitespace. Most messages are compact: a byte past a
    /// space is told in one comparison.
    #[inline(always)]
    fn space(&mut self) {
        while let Some(byte @ ..=b' ') = self.peek() {
            if !matches!(byte, b' ' | b'\n' | b'\t' | b'\r') {
                return;
            }
            self.at += 1;
        }
    }

    /// Nothing but whitespace is left.
    fn end(&mut self) -> Option<()> {
        self.space();
        (self.at == self.text.len()).then_some(())
    }

    /// Calls `each` with the key of every member of the object at the
    /// cursor, and the cursor at the member's value, which `each` reads;
    /// leaves the cursor past the object.
    fn members(
        &mut self,
        mut each: impl FnMut(&mut Scan<'a>, Key<'a>) -> Option<()>,
    ) -> Option<()> {
        if self.open(b'{', b'}')? {
            return Some(());
        }
        loop {
            let key = self.key()?;
            self.space();
            each(self, key)?;
            self.space();
            match self.next()? {
                b',' => self.space(),
                b'}' => return Some(()),
                _ => return None,
            }
        }
    }

    /// Calls `each` with every element of the array at the cursor (after
    /// its whitespace), leaving the cursor past the array.
    fn elements(&mut self, mut each: impl FnMut(&'a str) -> Option<()>) -> Option<()> {
        if self.open(b'[', b']')? {
            return Some(());
        }
        loop {
            self.space();
            each(self.value_text()?)?;
            self.space();
            match self.next()? {
                b',' => {}
                b']' => return Some(()),
                _ => return None,
            }
        }
    }

    /// Reads a container's opening byte `open` and the whitespace after
    /// it; whether its closing `close` follows at once (read too).
    #[inline(always)]
    fn open(&mut self, open: u8, close: u8) -> Option<bool> {
        self.expect(open)?;
        self.opened += 1;
        self.space();
        let empty = self.peek() == Some(close);
        self.at += usize::from(empty);
        Some(empty)
    }

    /// Skips one value, the cursor at its first byte, and returns its text.
    /// A string, most of a message's values, is skipped here, without
    /// setting up to follow containers.
    fn value_text(&mut self) -> Option<&'a str> {
        let start = self.at;
        if self.peek() == Some(b'"') {
            self.at += 1;
            self.string()?;
        } else {
            self.value()?;
        }
        Some(self.since(start))
    }

    #[inline(always)]
    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.next()? == byte).then_some(())
    }

    /// A key and its colon, the cursor at its opening quote.
    #[inline(always)]
    fn key(&mut self) -> Option<Key<'a>> {
        self.expect(b'"')?;
        let start = self.at;
        let escaped = self.string()?;
        let inner = self.between(start, self.at - 1);
        self.space();
        self.expect(b':')?;
        Some(Key { inner, escaped })
    }

    /// Skips one value, the cursor at its first byte. Containers are
    /// followed with a stack of bits (set for an object), not by
    /// recursion: a peer's nesting cannot exhaust the thread's stack.
    fn value(&mut self) -> Option<()> {
        let mut open = [0u64; MAX_DEPTH / 64];
        let mut depth = 0usize;
        loop {
            // A value starts here.
            match self.next()? {
                b'"' => {
                    self.string()?;
                }
                first @ (b'{' | b'[') => {
                    self.opened += 1;
                    self.space();
                    let close = if first == b'{' { b'}' } else { b']' };
                    if self.peek() == Some(close) {
                        self.at += 1;
                    } else {
                        if depth == MAX_DEPTH {
                            return None;
                        }
                        let bit = 1u64 << (depth % 64);
                        match first {
                            b'{' => open[depth / 64] |= bit,
                            _ => open[depth / 64] &= !bit,
                        }
                        depth += 1;
                        if first == b'{' {
                            self.key()?;
                        }
                        self.space();
                        continue;
                    }
                }
                b't' => self.literal("rue")?,
                b'f' => self.literal("alse")?,
                b'n' => self.literal("ull")?,
                first @ (b'-' | b'0'..=b'9') => self.number(first)?,
                _ => return None,
            }
            // A value ended: close what it ends, or go on to the next.
            loop {
                if depth == 0 {
                    return Some(());
                }
                let object = open[(depth - 1) / 64] & (1u64 << ((depth - 1) % 64)) != 0;
                self.space();
                match (self.next()?, object) {
                    (b',', true) => {
                        self.space();
                        self.key()?;
                        self.space();
                        break;
                    }
                    (b',', false) => {
                        self.space();
                        break;
                    }
                    (b'}', true) | (b']', false) => depth -= 1,
                    _ => return None,
                }
            }
        }
    }

    /// Skips the rest of a string, the cursor past its opening quote;
    /// whether it held an escape.
    #[inline(always)]
    fn string(&mut self) -> Option<bool> {
        let bytes = self.text.as_bytes();
        let mut escaped = false;
        loop {
            self.at = stop(bytes, self.at)?;
            let byte = bytes[self.at];
            self.at += 1;
            match byte {
                b'"' => return Some(escaped),
                b'\\' => {
                    escaped = true;
                    match self.next()? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                        b'u' => {
                            let hex = bytes.get(self.at..self.at + 4)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return None;
                            }
                            // Perhaps half of a surrogate pair.
                            self.suspect |= hex[0] | 0x20 == b'd';
                            self.at += 4;
                        }
                        _ => return None,
                    }
                }
                // A raw control character.
                _ => return None,
            }
        }
    }

    fn literal(&mut self, rest: &str) -> Option<()> {
        let found = self.text.as_bytes().get(self.at..self.at + rest.len())?;
        self.at += rest.len();
        (found == rest.as_bytes()).then_some(())
    }

    /// Skips the rest of a number whose first byte, `first`, was read.
    fn number(&mut self, first: u8) -> Option<()> {
        let first = match first {
            b'-' => self.next()?,
            digit => digit,
        };
        match first {
            // One leading zero at most.
            b'0' if self.peek().is_some_and(|b| b.is_ascii_digit()) => return None,
            b'0' => {}
            b'1'..=b'9' => {
                let run = self.digits() + 1;
                self.suspect |= run > SUSPECT_DIGITS;
            }
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            self.some_digits()?;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.suspect = true;
            self.at += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.at += 1;
            }
            self.some_digits()?;
        }
        Some(())
    }

    /// Skips a run of digits; how many there were.
    fn digits(&mut self) -> usize {
        let start = self.at;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
        self.at - start
    }

    /// At least one digit.
    fn some_digits(&mut self) -> Option<()> {
        let run = self.digits();
        self.suspect |= run > SUSPECT_DIGITS;
        (run > 0).then_some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
    use serde_json::Value;
    use serde_json::value::RawValue;
    use std::fmt;

    #[test]
    fn text_is_told_ascii_a_block_at_a_time_as_a_byte_at_a_time() {
        for len in 0..50 {
            let plain = vec![b'~'; len];
            assert!(ascii(&plain), "{len}");
            for at in 0..len {
                for high in [0x80, 0xc3, 0xff] {
                    let mut bytes = plain.clone();
                    bytes[at] = high;
                    assert!(!ascii(&bytes), "{len} bytes, {high:#x} at {at}");
                }
            }
        }
        assert_eq!(utf8("é and e".as_bytes()), Some("é and e"));
        assert_eq!(utf8(b"\xff and more than sixteen bytes"), None);
    }

    #[test]
    fn names_are_told_apart_by_every_byte() {
        for len in 0..=20 {
            let name: Vec<u8> = (0..len).map(|i| b'a' + i as u8).collect();
            assert!(same(&name, &name.clone()));
            for at in 0..len {
                let mut other = name.clone();
                other[at] ^= 0x20;
                assert!(!same(&name, &other), "{len} bytes, byte {at}");
            }
        }
        let names = ["id", "method", "params", "result", "error"];
        assert_eq!(position(&names, "result"), Some(3));
        assert_eq!(position(&names, "resulT"), None);
        assert_eq!(position(&names, "ids"), None);
        assert_eq!(position(&[""], ""), Some(0));
    }

    #[test]
    fn members_answer_as_a_parsed_object_would() {
        let text = r#"{"id":1,"m\u0065thod":"a","params":{"x":[1,{"y":2}]},"id":"two","z":null}"#;
        let [id, method, params, z, none] =
            object(text, ["id", "method", "params", "z", "none"]).unwrap();
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(
            id.unwrap(),
            value["id"].to_string(),
            "the last of a repeated key"
        );
        assert_eq!(string(method.unwrap()).as_deref(), Some("a"));
        assert_eq!(params.unwrap(), r#"{"x":[1,{"y":2}]}"#);
        assert!(is_null(z.unwrap()));
        assert!(none.is_none());
        for not_one in ["[1]", "1", "\"s\"", "{", "{} x", "{\"a\":}", ""] {
            assert!(object(not_one, ["a"]).is_none(), "{not_one}");
        }
        assert!(members("[{}]", ["a"]).is_none());
        assert_eq!(first_element(" [ 7 , {} ] "), Some("7"));
        assert_eq!(first_element("[]"), None);
        let all = entries(r#"{"b\u0061":1, "a" : [2] }"#).unwrap();
        assert_eq!(
            all,
            [(Cow::Borrowed("ba"), "1"), (Cow::Borrowed("a"), "[2]")]
        );
    }

    #[test]
    fn text_a_value_refuses_is_refused() {
        let nested = |n: usize| format!("{{\"a\":{}1{}}}", "[".repeat(n), "]".repeat(n));
        let digits = |n: usize| format!("{{\"a\":{}}}", "9".repeat(n));
        let cases = [
            nested(90),
            nested(126),
            nested(127),
            nested(200),
            nested(300),
            nested(100_000),
            digits(300),
            digits(308),
            digits(309),
            digits(400),
            format!("{{\"a\":0.{}}}", "9".repeat(400)),
            r#"{"a":1e308,"b":[true,false]}"#.to_owned(),
            r#"{"a":1e309}"#.to_owned(),
            r#"{"a":-2.5E+400}"#.to_owned(),
            r#"{"a":1e-400}"#.to_owned(),
            r#"{"a":"\ud83d\ude00"}"#.to_owned(),
            r#"{"a":"\ud800"}"#.to_owned(),
            r#"{"\uDC00":1}"#.to_owned(),
            r#"{"a":"\ud7ff\u00e9"}"#.to_owned(),
            r#"{"a":"1e999","true":"\\udead"}"#.to_owned(),
            r#"{"a":[1E400]}"#.to_owned(),
            r#"{"a":"x","b":-0e-9999}"#.to_owned(),
        ];
        for text in &cases {
            let value = serde_json::from_str::<Value>(text).is_ok();
            assert_eq!(object(text, ["a"]).is_some(), value, "{text}");
            // What a `Value` refuses, the scan refuses or finds suspect.
            let suspect = whole(text, |scan| scan.value());
            assert!(value || suspect != Some(false), "{text}");
            let batch = format!("[{text}]");
            let value = serde_json::from_str::<Value>(&batch).is_ok();
            assert_eq!(elements(&batch).is_some(), value, "[{text}]");
        }
    }

    #[test]
    fn strings_and_booleans() {
        assert_eq!(string(r#""plain""#).unwrap(), Cow::Borrowed("plain"));
        assert_eq!(string(r#""a\nb\u00e9""#).unwrap(), "a\nb\u{e9}");
        assert_eq!(string("7"), None);
        assert_eq!((boolean("true"), boolean("0")), (Some(true), None));
        assert_eq!(elements("[1, {\"a\":2} ,\"x\"]").unwrap().len(), 3);
        assert!(elements("{}").is_none());
    }

    #[test]
    fn the_block_and_word_looks_find_the_first_byte_a_string_stops_at() {
        // Lengths past two blocks and a word: a block, a word and the last
        // few bytes each answer alone somewhere.
        let plain = |b: u8| b >= 0x20 && b != b'"' && b != b'\\';
        for len in 0..42 {
            for at in 0..=len {
                for special in [
                    b'"', b'\\', 0x00, 0x1f, 0x20, 0x21, 0x5b, 0x7f, 0x80, 0xa0, 0xff,
                ] {
                    for later in [b'a', b'"', 0x01] {
                        let mut bytes = vec![b'a'; len];
                        if at < len {
                            bytes[at] = special;
                            for b in &mut bytes[at + 1..] {
                                *b = later;
                            }
                        }
                        for from in 0..=len {
                            let naive = bytes[from..]
                                .iter()
                                .position(|&b| !plain(b))
                                .map(|i| from + i);
                            assert_eq!(stop(&bytes, from), naive, "{bytes:?} from {from}");
                        }
                    }
                }
            }
        }
    }

    /// What serde_json answers for [`read_within`]: the members named, read
    /// through its `Deserializer` (as capture read them before [`Scan`]).
    fn serde_find<'a, const N: usize>(
        text: &'a str,
        names: [&str; N],
    ) -> Option<[Option<&'a str>; N]> {
        struct Members<'n, const N: usize>([&'n str; N]);
        impl<'de, const N: usize> Visitor<'de> for Members<'_, N> {
            type Value = [Option<&'de str>; N];
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut found = [None; N];
                while let Some(at) = map.next_key_seed(Name(&self.0))? {
                    match at {
                        Some(i) => found[i] = Some(map.next_value::<&'de RawValue>()?.get()),
                        None => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(found)
            }
        }
        struct Name<'a, 'n>(&'a [&'n str]);
        impl<'de> DeserializeSeed<'de> for Name<'_, '_> {
            type Value = Option<usize>;
            fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
                de.deserialize_str(self)
            }
        }
        impl<'de> Visitor<'de> for Name<'_, '_> {
            type Value = Option<usize>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
                Ok(self.0.iter().position(|name| *name == key))
            }
        }
        if !text
            .trim_start_matches([' ', '\n', '\t', '\r'])
            .starts_with('{')
        {
            return None;
        }
        let mut de = serde_json::Deserializer::from_str(text);
        let found = de.deserialize_map(Members(names)).ok()?;
        de.end().ok()?;
        Some(found)
    }

    /// Every text one edit away from a message: each byte dropped, each
    /// byte replaced by (or preceded by) one of the bytes JSON's grammar
    /// turns on, and every prefix.
    fn edits(text: &str) -> Vec<String> {
        const BYTES: &[u8] = b"{}[],:\"\\ \t\n0123456789-+.eEtrufalsn\x01x/";
        let bytes = text.as_bytes();
        let mut out = Vec::new();
        let mut push = |edited: Vec<u8>| {
            if let Ok(edited) = String::from_utf8(edited) {
                out.push(edited);
            }
        };
        for i in 0..=bytes.len() {
            push(bytes[..i].to_vec());
            for &b in BYTES {
                let mut inserted = bytes.to_vec();
                inserted.insert(i, b);
                push(inserted);
                if i < bytes.len() {
                    let mut replaced = bytes.to_vec();
                    replaced[i] = b;
                    push(replaced);
                }
            }
            if i < bytes.len() {
                let mut dropped = bytes.to_vec();
                dropped.remove(i);
                push(dropped);
            }
        }
        out
    }

    #[test]
    fn the_scan_answers_as_serde_json_on_every_edit_of_a_message() {
        let messages = [
            r#"{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"get_forecast","arguments":{"city":"Paris","days":3,"fail":false}}}"#,
            r#"{"jsonrpc":"2.0","id":"a\"b","result":{"content":[{"type":"text","text":"no \u00e9 for 'x'"}],"isError":true}}"#,
            r#" { "id" : -0.5e+3 , "m\u0065thod" : [ null , true , false , { } , [ ] , "" ] , "id" : 10 } "#,
            r#"{"error":{"code":-32602,"message":"bad\/\b\f\n\r\t","data":[1.0E-2,0,-1]},"id":null}"#,
            r#"{"params":{"name":"a","x":{"name":1}},"result":[{"type":2}],"params":{"arguments":{},"name":"b"}}"#,
            r#"{"params":{"arguments":{"a":1,"a":[2]},"name":"t","arguments":{"b\u0061":"x","c":{"d":1}}}}"#,
            r#"{"params":{"arguments":{"a":1},"x":2,"arguments":"s"},"id":1}"#,
        ];
        let mut checked = 0;
        for message in messages {
            for text in edits(message) {
                let names = ["id", "method", "params", "result", "error"];
                let found = members(&text, names);
                assert_eq!(found, serde_find(&text, names), "{text:?}");
                // Members of members, read in the same pass, are the ones
                // read after it.
                let inner = ["name", "arguments", "isError", "type", "code", "x"];
                for at in 0..names.len() {
                    let within = found.map(|found| {
                        found[at]
                            .and_then(|m| members(m, inner))
                            .unwrap_or_default()
                    });
                    assert_eq!(
                        read_within(&text, names, at, inner, None, false)
                            .map(|(_, within, _)| within),
                        within,
                        "{text:?}"
                    );
                    // So are the members of one of those, listed.
                    for listed in 0..inner.len() {
                        let entries = within.map(|within| {
                            within[listed]
                                .filter(|m| is_object(m))
                                .and_then(entries)
                                .unwrap_or_default()
                        });
                        assert_eq!(
                            read_within(&text, names, at, inner, Some(listed), false)
                                .map(|(_, _, listed)| listed),
                            entries,
                            "{text:?}"
                        );
                    }
                }
                let value = serde_json::from_str::<Value>(&text).is_ok();
                assert_eq!(object(&text, names).is_some(), value, "{text:?}");
                let batch = format!("[{text},{text}]");
                let value = serde_json::from_str::<Vec<&RawValue>>(&batch);
                let value = value.map(|all| all.iter().map(|r| r.get()).collect::<Vec<_>>());
                // Every element, without the check a `Value` adds.
                let mut all = Vec::new();
                let ours = whole(&batch, |scan| {
                    scan.elements(|e| {
                        all.push(e);
                        Some(())
                    })
                })
                .map(|_| all);
                assert_eq!(ours, value.ok(), "{batch:?}");
                checked += 1;
            }
        }
        assert!(checked > 10_000, "{checked} texts");
    }
}
