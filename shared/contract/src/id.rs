//! Typed identifiers, checked once where they enter.
//!
//! Every id the suite hands around — a finding, a session token, an error
//! template, a call's event, a verification run — has one fixed form. A
//! value of these types has been checked against that form, so it can be
//! put into a file name, a path, a query or a message without another
//! look: a `FindingId` can never be `../x`. Ids read back from a database,
//! a share file, a manifest or a probe result are as untrusted as any
//! other input and are parsed into these types at the edge; nothing here
//! may offer a way to build one without the check.
//!
//! The types deref to `&str` (read only), so code that only reads an id
//! treats it as the string it is.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Why a text is not an id of the wanted kind. It never holds the text
/// itself: the caller decides whether (and how escaped) to show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdError {
    kind: &'static str,
    form: &'static str,
}

impl IdError {
    /// What was expected, e.g. `finding id`.
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// The form such an id has, e.g. `"finding-" and 16 lower-case hex digits`.
    pub fn form(&self) -> &'static str {
        self.form
    }
}

impl fmt::Display for IdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not a {}: a {} is {}", self.kind, self.kind, self.form)
    }
}

impl std::error::Error for IdError {}

/// How many characters of an untrusted text [`shown`] keeps.
const SHOWN_CHARS: usize = 48;

/// An untrusted text made safe to print in a message: in double quotes,
/// with quotes, backslashes and every character that is not printable
/// ASCII escaped (`\u{202e}`), cut to a bounded length. No control
/// character, bidirectional override or line break gets through.
pub fn shown(text: &str) -> String {
    let mut out = String::from("\"");
    for (i, c) in text.chars().enumerate() {
        if i == SHOWN_CHARS {
            out.push_str("\"…");
            return out;
        }
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            _ => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
        }
    }
    out.push('"');
    out
}

/// Parses the value of a command-line flag such as `--finding`; a value
/// without the form is a usage error (status 2) that shows it escaped.
pub fn parse_flag<T: FromStr<Err = IdError>>(flag: &str, value: &str) -> crate::Result<T> {
    value.parse().map_err(|err: IdError| {
        crate::Error::usage(format!(
            "invalid {flag} {}: a {} is {}",
            shown(value),
            err.kind(),
            err.form()
        ))
    })
}

/// An id kind of the form `prefix` and 16 lower-case hex digits (a salted
/// hash of the store's).
pub trait Prefixed {
    /// The prefix, e.g. `s-`.
    const PREFIX: &'static str;

    /// Whether `text` has the form: the one check of this kind, which a
    /// reader that keeps borrowed text may call without building the id.
    fn is_valid(text: &str) -> bool {
        is_hex16(text, Self::PREFIX)
    }

    /// The number the 16 hex digits spell, when `text` has the form: a
    /// compact key for a reader that only compares ids.
    fn number(text: &str) -> Option<u64> {
        if Self::is_valid(text) {
            u64::from_str_radix(&text[Self::PREFIX.len()..], 16).ok()
        } else {
            None
        }
    }
}

/// `prefix` followed by exactly 16 lower-case hex digits.
fn is_hex16(text: &str, prefix: &str) -> bool {
    text.strip_prefix(prefix).is_some_and(|hex| {
        hex.len() == 16 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// A UUID in its canonical text: lower-case, hyphenated (8-4-4-4-12).
fn is_uuid(text: &str) -> bool {
    text.len() == 36
        && text.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => matches!(b, b'0'..=b'9' | b'a'..=b'f'),
        })
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $kind:literal, $form:expr, |$text:ident| $check:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(String);

        impl $name {
            /// What an id of this kind is called in messages.
            pub const KIND: &'static str = $kind;
            /// The form every id of this kind has.
            pub const FORM: &'static str = $form;

            /// Whether `text` has the form, without building the id (for a
            /// reader that keeps borrowed text).
            pub fn is_valid($text: &str) -> bool {
                $check
            }

            /// Checks `text` and, when it has the form, takes it as an id.
            pub fn parse(text: &str) -> Result<$name, IdError> {
                if $name::is_valid(text) {
                    Ok($name(text.to_owned()))
                } else {
                    Err(IdError {
                        kind: $kind,
                        form: $form,
                    })
                }
            }

            /// The id's text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The id's text, owned.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl FromStr for $name {
            type Err = IdError;

            fn from_str(text: &str) -> Result<$name, IdError> {
                $name::parse(text)
            }
        }

        impl TryFrom<String> for $name {
            type Error = IdError;

            fn try_from(text: String) -> Result<$name, IdError> {
                $name::parse(&text)
            }
        }

        impl Deref for $name {
            type Target = str;

            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        // Hash and Eq agree with `str`'s, so maps keyed by an id can be
        // looked up with a plain `&str`.
        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        /// Deserializing checks the form: a bad id in JSON is an error
        /// (naming the field, with `serde_path_to_error`), never a value.
        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<$name, D::Error> {
                let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
                $name::parse(&text).map_err(serde::de::Error::custom)
            }
        }

    };
}

/// An id that is a prefix and 16 lower-case hex digits (a salted hash):
/// the [`id_type!`] and its [`Prefixed`] impl from one place.
macro_rules! prefixed_id {
    ($(#[$doc:meta])* $name:ident, $what:literal, $prefix:literal) => {
        id_type!(
            $(#[$doc])*
            $name,
            $what,
            concat!("\"", $prefix, "\" and 16 lower-case hex digits"),
            |text| is_hex16(text, $prefix)
        );

        impl Prefixed for $name {
            const PREFIX: &'static str = $prefix;
        }

        impl $name {
            /// The id whose digits are `hex`, when `hex` is 16 lower-case
            /// hex digits (the store makes them as salted hashes).
            pub fn from_hex16(hex: &str) -> Option<$name> {
                $name::parse(&format!("{}{hex}", $prefix)).ok()
            }
        }
    };
}

prefixed_id!(
    /// A finding of this store: `finding-` and 16 lower-case hex digits
    /// (a salted hash of the group's key, made by the store).
    FindingId,
    "finding id",
    "finding-"
);

prefixed_id!(
    /// A capture session's salted token: `s-` and 16 lower-case hex digits.
    SessionToken,
    "session token",
    "s-"
);

prefixed_id!(
    /// An error template's salted id: `t-` and 16 lower-case hex digits.
    TemplateId,
    "template id",
    "t-"
);

prefixed_id!(
    /// A credit binding's fingerprint: `b-` and 16 lower-case hex digits
    /// (made by the store).
    BindingId,
    "binding",
    "b-"
);

prefixed_id!(
    /// A case definition's fingerprint: `case-` and 16 lower-case hex
    /// digits, salted, over the case, its manifest version, timeout and
    /// sandbox declaration (made by the store).
    DefinitionId,
    "case definition",
    "case-"
);

prefixed_id!(
    /// A target's fingerprint: `target-` and 16 lower-case hex digits,
    /// salted, over a command and its arguments as written, or an
    /// endpoint's URL and headers, and never the bytes behind them (see
    /// the store's `binding`).
    TargetId,
    "target",
    "target-"
);

id_type!(
    /// One captured call's `identity.event_id`: a UUID, lower-case and
    /// hyphenated.
    EventId,
    "event id",
    "a lower-case hyphenated UUID",
    |text| is_uuid(text)
);

id_type!(
    /// One probe or verification run: a UUID, lower-case and hyphenated.
    RunId,
    "run id",
    "a lower-case hyphenated UUID",
    |text| is_uuid(text)
);

impl EventId {
    /// A UUID as an event id, in its canonical text.
    pub fn from_uuid(uuid: uuid::Uuid) -> EventId {
        EventId(uuid.hyphenated().to_string())
    }
}

impl RunId {
    /// A UUID as a run id, in its canonical text.
    pub fn from_uuid(uuid: uuid::Uuid) -> RunId {
        RunId(uuid.hyphenated().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finding_ids_have_one_form() {
        let id = FindingId::parse("finding-0123456789abcdef").unwrap();
        assert_eq!(id.as_str(), "finding-0123456789abcdef");
        assert_eq!(id, "finding-0123456789abcdef");
        for bad in [
            "",
            "finding-",
            "finding-0123456789ABCDEF",
            "finding-0123456789abcde",
            "finding-0123456789abcdef0",
            "finding-0123456789abcdeg",
            "../../x",
            "finding-0123/../../../tmp/pwn",
            "finding-0123456789abcdef/",
            "finding-0123456789abcdef\n",
            "s-0123456789abcdef",
        ] {
            assert!(FindingId::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn tokens_and_uuids() {
        assert!(SessionToken::parse("s-0123456789abcdef").is_ok());
        assert!(SessionToken::parse("t-0123456789abcdef").is_err());
        assert!(TemplateId::parse("t-0123456789abcdef").is_ok());
        assert!(TemplateId::parse("t-0123456789abcdef ").is_err());
        assert!(BindingId::is_valid("b-0123456789abcdef"));
        assert!(!BindingId::is_valid("b-0123456789ABCDEF"));
        assert_eq!(SessionToken::number("s-00000000000000ff"), Some(255));
        assert_eq!(SessionToken::number("t-00000000000000ff"), None);
        let uuid = "6f1c2a3b-4d5e-4f60-8a7b-9c8d7e6f5a4b";
        assert!(EventId::parse(uuid).is_ok());
        assert!(RunId::parse(uuid).is_ok());
        for bad in [
            "6F1C2A3B-4D5E-4F60-8A7B-9C8D7E6F5A4B",
            "6f1c2a3b4d5e4f608a7b9c8d7e6f5a4b",
            "{6f1c2a3b-4d5e-4f60-8a7b-9c8d7e6f5a4b}",
            "6f1c2a3b-4d5e-4f60-8a7b-9c8d7e6f5a4",
            "6f1c2a3b-4d5e-4f60-8a7b_9c8d7e6f5a4b",
        ] {
            assert!(EventId::parse(bad).is_err(), "{bad}");
        }
        let fresh = RunId::from_uuid(uuid::Uuid::new_v4());
        assert!(RunId::parse(&fresh).is_ok(), "{fresh}");
        let upper = uuid::Uuid::parse_str("6F1C2A3B-4D5E-4F60-8A7B-9C8D7E6F5A4B").unwrap();
        assert_eq!(EventId::from_uuid(upper), uuid);
    }

    #[test]
    fn json_is_checked_on_the_way_in() {
        #[derive(Debug, Deserialize, Serialize)]
        struct Case {
            finding: FindingId,
        }
        let good: Case = serde_json::from_str(r#"{"finding":"finding-0123456789abcdef"}"#).unwrap();
        assert_eq!(
            serde_json::to_string(&good).unwrap(),
            r#"{"finding":"finding-0123456789abcdef"}"#
        );
        let text = r#"{"finding":"../../escape"}"#;
        let de = &mut serde_json::Deserializer::from_str(text);
        let err = serde_path_to_error::deserialize::<_, Case>(de).unwrap_err();
        assert_eq!(err.path().to_string(), "finding");
        assert!(err.to_string().contains("not a finding id"), "{err}");
        assert!(!err.to_string().contains("escape"), "{err}");
        // Escaped JSON strings are checked after unescaping.
        let escaped = r#"{"finding":"finding-0123456789abcde\u0066"}"#;
        assert!(serde_json::from_str::<Case>(escaped).is_ok());
    }

    #[test]
    fn maps_keyed_by_ids_take_plain_strings() {
        let mut map = std::collections::HashMap::new();
        map.insert(FindingId::parse("finding-0123456789abcdef").unwrap(), 1);
        assert_eq!(map.get("finding-0123456789abcdef"), Some(&1));
    }

    #[test]
    fn shown_escapes_and_bounds() {
        assert_eq!(shown("../../x"), "\"../../x\"");
        assert_eq!(shown("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(
            shown("x\n\u{1b}[31m\u{202e}"),
            r#""x\u{a}\u{1b}[31m\u{202e}""#
        );
        let long = shown(&"a".repeat(100));
        assert_eq!(long, format!("\"{}\"…", "a".repeat(SHOWN_CHARS)));
    }
}
