//! Telling when a streamed JSON body holds a whole object or array.
//!
//! A JSON response is observed as soon as its last byte has arrived and
//! before that byte is forwarded, so the observer sees it before the client
//! can react to it (a `tools/list` result before the call it informs). The
//! end is found by counting brackets outside strings, a few instructions a
//! byte; it never validates or parses: that is the observer's job.

/// Bracket depth of a JSON text read so far.
#[derive(Debug, Default)]
pub struct Scanner {
    depth: u32,
    in_string: bool,
    escaped: bool,
    started: bool,
    complete: bool,
}

impl Scanner {
    /// Feeds the next bytes; true once the top-level object or array closed.
    pub fn feed(&mut self, bytes: &[u8]) -> bool {
        if self.complete {
            return true;
        }
        for &b in bytes {
            if self.in_string {
                match b {
                    _ if self.escaped => self.escaped = false,
                    b'\\' => self.escaped = true,
                    b'"' => self.in_string = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' => {
                    self.started = true;
                    self.depth += 1;
                }
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.started && self.depth == 0 {
                        self.complete = true;
                        return true;
                    }
                }
                _ => {}
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_end_across_chunks_and_strings() {
        let text = br#" {"a": "}]\"{", "b": [1, {"c": "\\"}]} "#;
        let end = text.iter().rposition(|&b| b == b'}').unwrap();
        for cut in 0..text.len() {
            let mut s = Scanner::default();
            let first = s.feed(&text[..cut]);
            assert_eq!(first, cut > end, "cut {cut}");
            assert!(s.feed(&text[cut..]), "cut {cut}");
        }
        let mut s = Scanner::default();
        assert!(!s.feed(b"\"just a string\""));
        assert!(s.feed(b"[]"));
    }
}
