//! Which server commands `verify_finding` may start.
//!
//! A client of serve is an agent, and a command it names would run with
//! the user's rights, so nothing runs unless the user allowed it when
//! starting serve: `--allow-command 'python3 server.py'` (repeatable), or
//! `--allow-any-command` to opt out. A command is allowed when an allowed
//! argv is an exact prefix of it, word for word; nothing is resolved,
//! expanded or normalized (`python3` and `/usr/bin/python3` differ), so
//! the check can never be talked into a looser match than the user wrote.
//!
//! `verify_finding` takes a server command only. A URL form would need an
//! allowlist of its own (`--allow-url`, matched on the exact scheme, host,
//! port and path): reaching a URL acts with the user's network position as
//! surely as a command acts with their rights on the machine.

use shared::Error;
use shared::Result;

/// The server commands verify_finding may run.
#[derive(Debug, Clone)]
pub enum Allowlist {
    /// Only commands that start with one of these argvs.
    Only(Vec<Vec<String>>),
    /// Anything: the user opted out with `--allow-any-command`.
    Any,
}

impl Allowlist {
    /// Whether `argv` may run: some allowed argv is a prefix of it.
    pub fn permits(&self, argv: &[String]) -> bool {
        match self {
            Allowlist::Any => true,
            Allowlist::Only(allowed) => {
                allowed.iter().any(|a| !a.is_empty() && argv.starts_with(a))
            }
        }
    }

    /// The allowed commands as JSON arrays, for a refusal's text.
    pub fn describe(&self) -> String {
        match self {
            Allowlist::Any => "any command".to_owned(),
            Allowlist::Only(allowed) if allowed.is_empty() => "none".to_owned(),
            Allowlist::Only(allowed) => allowed
                .iter()
                .map(|a| serde_json::to_string(a).unwrap_or_default())
                .collect::<Vec<_>>()
                .join(", "),
        }
    }
}

/// One `--allow-command` value, split into its argv.
#[derive(Debug, Clone)]
pub struct AllowedCommand(pub Vec<String>);

/// Parses an `--allow-command` value (clap's value parser).
pub fn parse(value: &str) -> Result<AllowedCommand> {
    let words = split(value)?;
    if words.is_empty() || words[0].is_empty() {
        return Err(Error::usage(
            "it names no command; give the server command and its leading arguments, \
             e.g. 'python3 server.py'",
        ));
    }
    Ok(AllowedCommand(words))
}

/// Splits `value` into words as a POSIX shell would, without expanding
/// anything: blanks separate words; `'…'` keeps everything literally;
/// `"…"` keeps everything but `\"` and `\\`; outside quotes a backslash
/// keeps the next character. `$`, `*`, `~`, `;` and `|` are ordinary
/// characters, since no shell ever sees the command.
pub fn split(value: &str) -> Result<Vec<String>> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => words.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => return Err(Error::usage("a single quote (') is not closed")),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\')) => w.push(c),
                            Some(c) => {
                                w.push('\\');
                                w.push(c);
                            }
                            None => return Err(Error::usage("a double quote (\") is not closed")),
                        },
                        Some(c) => w.push(c),
                        None => return Err(Error::usage("a double quote (\") is not closed")),
                    }
                }
            }
            '\\' => match chars.next() {
                Some(c) => word.get_or_insert_with(String::new).push(c),
                None => return Err(Error::usage("it ends in a lone backslash")),
            },
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(value: &str) -> Vec<String> {
        split(value).unwrap()
    }

    #[test]
    fn splits_like_a_shell_without_expanding() {
        assert_eq!(words("python3 server.py"), ["python3", "server.py"]);
        assert_eq!(words("  a\t b \n"), ["a", "b"]);
        assert_eq!(words("'my server.py' x"), ["my server.py", "x"]);
        assert_eq!(words(r#""a \"b\" \\ \n""#), [r#"a "b" \ \n"#]);
        assert_eq!(words(r"a\ b c"), ["a b", "c"]);
        assert_eq!(words("pre'fix'ed ''"), ["prefixed", ""]);
        assert_eq!(words("$HOME ~ *.py ;|"), ["$HOME", "~", "*.py", ";|"]);
        assert!(split("'open").is_err());
        assert!(split("\"open").is_err());
        assert!(split("trailing\\").is_err());
        assert!(parse("   ").is_err());
        assert!(parse("''").is_err());
    }

    #[test]
    fn an_allowed_argv_must_be_an_exact_prefix() {
        let allow = Allowlist::Only(vec![words("python3 server.py")]);
        let argv = |s: &str| words(s);
        assert!(allow.permits(&argv("python3 server.py")));
        assert!(allow.permits(&argv("python3 server.py --port 1")));
        assert!(!allow.permits(&argv("python3")));
        assert!(!allow.permits(&argv("python3 server.py2")));
        assert!(!allow.permits(&argv("/usr/bin/python3 server.py")));
        assert!(!allow.permits(&argv("python3 -c print(1)")));
        assert!(!Allowlist::Only(Vec::new()).permits(&argv("true")));
        assert!(Allowlist::Any.permits(&argv("anything at all")));
    }
}
