//! Enums spelled once: [`spelled!`] declares an enum together with the one
//! text of each variant, and derives from that text its serde names, its
//! `as_str` (for SQL columns and messages) and its parse. No other table of
//! the same names may exist; a new variant is one new line.

/// Declares `enum Name { Variant = "text", … }` with serde, `as_str`,
/// `parse`, `ALL`, `Display` and `FromStr` all taken from the texts given.
/// The crate that uses it depends on serde (with `derive`).
#[macro_export]
macro_rules! spelled {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(serde::Serialize, serde::Deserialize)]
        $vis enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant),+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: [$name; [$($text),+].len()] = [$($name::$variant),+];

            /// The variant's one spelling, as serde writes it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// The variant spelled `text`, if any.
            pub fn parse(text: &str) -> Option<$name> {
                match text {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = ();

            fn from_str(text: &str) -> Result<$name, ()> {
                $name::parse(text).ok_or(())
            }
        }
    };
}

pub(crate) use crate::spelled;

#[cfg(test)]
mod tests {
    use crate::finding::DefectClass;
    use crate::finding::State;
    use crate::probe_result::Reason;
    use crate::record::Outcome;

    /// serde, `as_str` and `parse` agree on every variant, and a text that
    /// names none is refused by both.
    fn agree<T>(all: &[T], as_str: fn(T) -> &'static str, parse: fn(&str) -> Option<T>)
    where
        T: Copy + PartialEq + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
    {
        for &v in all {
            let text = as_str(v);
            assert_eq!(serde_json::to_value(v).unwrap(), text);
            assert_eq!(serde_json::from_value::<T>(text.into()).unwrap(), v);
            assert_eq!(parse(text), Some(v));
        }
        assert_eq!(parse("Open"), None);
        assert!(serde_json::from_value::<T>("Open".into()).is_err());
    }

    #[test]
    fn every_spelling_is_the_same_everywhere() {
        agree(&State::ALL, State::as_str, State::parse);
        agree(&Reason::ALL, Reason::as_str, Reason::parse);
        agree(&DefectClass::ALL, DefectClass::as_str, DefectClass::parse);
        agree(&Outcome::ALL, Outcome::as_str, Outcome::parse);
        assert_eq!(State::FixClaimed.to_string(), "fix-claimed");
        assert_eq!(
            State::ALL.map(State::as_str),
            ["open", "fix-claimed", "verifying", "closed"]
        );
    }
}
