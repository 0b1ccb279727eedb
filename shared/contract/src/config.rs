//! `config.json`: the user's settings: `promotion_threshold`,
//! `require_witnessed` (closures need a red run first) and `database_url`
//! (the team store).
//!
//! Unknown keys are errors naming the key, so a typo never silently falls
//! back to the default.

use std::fs;
use std::io::ErrorKind;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::home::Home;

/// Settings read from `config.json`; every field is optional.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Config {
    /// Minimum promotion score, finite and ≥ 0.
    pub promotion_threshold: Option<f64>,
    /// The team database (SPEC §11), a connection string or URL without a
    /// password: passwords come from `PGPASSWORD` or `~/.pgpass`.
    pub database_url: Option<String>,
    /// A streak closes a finding only when a red run of its case against
    /// its target came first (a witnessed closure, SPEC §7 rule 6).
    pub require_witnessed: bool,
}

impl Config {
    /// Reads the store's `config.json`; a missing file is the default.
    pub fn load(home: &Home) -> Result<Config> {
        let path = home.config();
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == ErrorKind::NotFound => return Ok(Config::default()),
            Err(err) => {
                return Err(Error::io(format_args!("cannot read {}", path), err));
            }
        };
        Config::parse(&text).map_err(|why| Error::rejected(path.to_string()).with_source(why))
    }

    /// Parses the text of a config file; the error says what is wrong.
    pub fn parse(text: &str) -> Result<Config> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| Error::rejected("not valid JSON").with_source(e))?;
        let Value::Object(map) = value else {
            return Err(Error::rejected(
                "must be a JSON object like {\"promotion_threshold\": 0.15}",
            ));
        };
        let mut config = Config::default();
        for (key, value) in map {
            match key.as_str() {
                "promotion_threshold" => {
                    let t = value.as_f64().ok_or_else(|| {
                        Error::rejected(format!(
                            "promotion_threshold must be a number, not {value}"
                        ))
                    })?;
                    check_threshold(t).map_err(|why| {
                        Error::rejected(format!("promotion_threshold {}", why.message()))
                    })?;
                    config.promotion_threshold = Some(t);
                }
                "database_url" => {
                    let Value::String(url) = value else {
                        return Err(Error::rejected(format!(
                            "database_url must be a string, not {value}"
                        )));
                    };
                    config.database_url = Some(url);
                }
                "require_witnessed" => {
                    config.require_witnessed = value.as_bool().ok_or_else(|| {
                        Error::rejected(format!(
                            "require_witnessed must be true or false, not {value}"
                        ))
                    })?;
                }
                other => {
                    return Err(Error::rejected(format!(
                        "unknown key \"{}\" (known: promotion_threshold, require_witnessed, \
                         database_url)",
                        crate::escape::terminal(other)
                    )));
                }
            }
        }
        Ok(config)
    }
}

/// A threshold must be finite and non-negative (a usage error: a bad
/// threshold flag).
pub fn check_threshold(t: f64) -> Result<()> {
    if !t.is_finite() {
        Err(Error::usage(format!("{t} is not finite")))
    } else if t < 0.0 {
        Err(Error::usage(format!("{t} is negative; use a number ≥ 0")))
    } else {
        Ok(())
    }
}

/// The store's team database as text, and where that text came from:
/// `--database` › `MCPEVAL_DATABASE_URL` › `database_url` in
/// `config.json`. Only the text: reaching the database is the team
/// crate's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatabaseUrl {
    /// The connection string or URL.
    pub text: String,
    /// Where it was given, for messages ("--database", …).
    pub source: String,
    /// Whether the user gave it now (a flag or the environment) rather
    /// than the store's settings.
    pub from_user: bool,
}

/// The store's team database, if it names one (see [`DatabaseUrl`]).
pub fn database_url(home: &Home) -> Result<Option<DatabaseUrl>> {
    let given = |text: &str, source: &str| DatabaseUrl {
        text: text.to_owned(),
        source: source.to_owned(),
        from_user: true,
    };
    if let Some(url) = home.database_flag() {
        return Ok(Some(given(url, "--database")));
    }
    if let Some(url) = std::env::var_os(crate::DATABASE_ENV).filter(|v| !v.is_empty()) {
        let url = url
            .into_string()
            .map_err(|_| Error::usage(format!("{} is not valid UTF-8", crate::DATABASE_ENV)))?;
        return Ok(Some(given(&url, crate::DATABASE_ENV)));
    }
    Ok(Config::load(home)?.database_url.map(|text| DatabaseUrl {
        text,
        source: format!("database_url in {}", home.config()),
        from_user: false,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_threshold() {
        let c = Config::parse(r#"{"promotion_threshold": 0.15}"#).unwrap();
        assert_eq!(c.promotion_threshold, Some(0.15));
    }

    #[test]
    fn reads_require_witnessed() {
        assert!(!Config::parse("{}").unwrap().require_witnessed);
        let c = Config::parse(r#"{"require_witnessed": true}"#).unwrap();
        assert!(c.require_witnessed);
        let e = Config::parse(r#"{"require_witnessed": "yes"}"#).unwrap_err();
        assert!(e.message().contains("true or false"), "{e}");
    }

    #[test]
    fn names_unknown_key() {
        let e = Config::parse(r#"{"promotion_treshold": 0.15}"#).unwrap_err();
        assert!(e.message().contains("\"promotion_treshold\""), "{e}");
    }

    #[test]
    fn refuses_negative_and_non_numbers() {
        assert!(
            Config::parse(r#"{"promotion_threshold": -1}"#)
                .unwrap_err()
                .message()
                .contains("negative")
        );
        assert!(Config::parse(r#"{"promotion_threshold": "x"}"#).is_err());
        assert!(Config::parse("[]").is_err());
        assert!(Config::parse(r#"{"promotion_threshold": 1e999}"#).is_err());
    }
}
