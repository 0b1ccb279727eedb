//! Text meeting HTML: every name on the page passes through [`text`].
//!
//! Names come from servers and are hostile: markup, quotes, newlines,
//! terminal escapes, bidirectional overrides. Markup characters become
//! entities (safe in element content and in quoted attributes alike);
//! control and invisible formatting characters become visible escapes
//! such as `\u{1b}`, so a name can neither hide nor reorder what follows.

use std::fmt::{self, Write};

/// `value`, escaped for HTML element content and quoted attribute values.
pub fn text(value: &str) -> Escaped<'_> {
    Escaped(value)
}

/// A value that displays escaped.
pub struct Escaped<'a>(&'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            match c {
                '&' => f.write_str("&amp;")?,
                '<' => f.write_str("&lt;")?,
                '>' => f.write_str("&gt;")?,
                '"' => f.write_str("&quot;")?,
                '\'' => f.write_str("&#39;")?,
                c if hidden(c) => write!(f, "\\u{{{:x}}}", u32::from(c))?,
                c => f.write_char(c)?,
            }
        }
        Ok(())
    }
}

/// Control characters, and the formatting characters that are invisible
/// or reorder text (zero-width marks, bidirectional embeddings, isolates
/// and overrides, the byte-order mark).
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{00ad}' | '\u{061c}' | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}'
            | '\u{feff}'
            | '\u{fff9}'..='\u{fffb}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_quotes_and_controls_become_inert() {
        let hostile = "<script>alert(1)</script>\"'&\n\u{1b}[31m\u{202e}x";
        assert_eq!(
            text(hostile).to_string(),
            "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;\\u{a}\\u{1b}[31m\\u{202e}x"
        );
        assert_eq!(
            text("get_forecast · météo").to_string(),
            "get_forecast · météo"
        );
    }
}
