//! Command-line flags of `mcpeval-annotate`, checked into a [`Config`].

use clap::{ArgGroup, Parser};
use cli::StoreArgs;
use shared::Error;
use shared::Result;
use shared::home::Home;
use store::lifecycle::{self, Kind, Target};

/// Add a bounded human observation to a captured call.
#[derive(Debug, Parser)]
#[command(
    name = "mcpeval-annotate",
    version,
    about = "Add a bounded human observation to a captured call",
    long_about = "Add a bounded human observation to a captured call.\n\n\
Name the call by its identity.event_id, copied from the journal, or, for \
legacy mcpeval.call/0 records, by --session and --seq; give exactly one of \
the two forms. The annotation is stored durably in <MCPEVAL_HOME>/lifecycle.db \
and its id is printed on stdout.\n\n\
`mcpeval index` links annotations to calls: an event id when exactly one \
indexed call has it; legacy coordinates only when exactly one indexed call \
across every server and capture has them. Unknown or ambiguous targets stay \
stored but unlinked and change no finding; every later index run resolves \
them again, so an annotation may be recorded before its call is indexed. \
A stderr line says whether the target identifies one indexed call now.\n\n\
Successful calls annotated false-success form their own findings once they \
recur; repeated annotations of one call count once. The note is prose kept \
only in lifecycle.db, never in findings or exports. It is limited to 240 \
characters without control characters, but it is not redacted: never put \
credentials, private paths, customer identifiers or raw payload fragments \
in it.",
    after_help = cli::footer(
        "Examples:\n  \
mcpeval annotate --event-id 6f1c2a3b-4d5e-4f60-8a7b-9c8d7e6f5a4b \\\n    \
--kind workaround --note \"Used the documented alternate tool\"\n  \
mcpeval annotate --session s-1a2b3c4d5e6f7a8b --seq 4 \\\n    \
--kind false-success --note \"Reported the booking as made; none was\"\n  \
mcpeval index    # records the link for mcpeval promote"
    ),
    group(ArgGroup::new("target").required(true).args(["event_id", "session"]))
)]
pub struct Args {
    #[command(flatten)]
    pub store: StoreArgs,

    /// The call's identity.event_id (a UUID) from the journal
    #[arg(long, value_name = "UUID")]
    pub event_id: Option<String>,

    /// Legacy target: the call's session token (s- and 16 hex digits); needs --seq
    #[arg(long, value_name = "TOKEN", requires = "seq")]
    pub session: Option<String>,

    /// Legacy target: the call's turn within --session (1 or more)
    #[arg(
        long,
        value_name = "N",
        requires = "session",
        conflicts_with = "event_id"
    )]
    pub seq: Option<u64>,

    /// What the observation is
    #[arg(long, value_enum, value_name = "KIND")]
    pub kind: KindArg,

    /// The observation: at most 240 characters, no control characters; not redacted
    #[arg(long, value_name = "TEXT")]
    pub note: String,
}

/// `--kind`: what an annotation says, as the store spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KindArg {
    /// The call reported success but did not do what was asked
    FalseSuccess,
    /// The agent had to work around the tool
    Workaround,
    /// The error text pointed the agent the wrong way
    MisleadingError,
    /// The call took too long
    Slow,
    /// Anything else worth a note
    Other,
}

impl From<KindArg> for Kind {
    fn from(kind: KindArg) -> Kind {
        match kind {
            KindArg::FalseSuccess => Kind::FalseSuccess,
            KindArg::Workaround => Kind::Workaround,
            KindArg::MisleadingError => Kind::MisleadingError,
            KindArg::Slow => Kind::Slow,
            KindArg::Other => Kind::Other,
        }
    }
}

/// A checked annotation, ready to store.
#[derive(Debug)]
pub struct Config {
    pub home: Home,
    pub target: Target,
    pub kind: Kind,
    pub note: String,
}

impl Args {
    pub fn into_config(self) -> Result<Config> {
        let target = match (&self.event_id, &self.session, self.seq) {
            (Some(id), None, None) => Target::event_id(id),
            (None, Some(session), Some(seq)) => Target::coordinates(session, seq),
            _ => Err(Error::usage(
                "give either --event-id UUID or --session TOKEN --seq N",
            )),
        }
        .map_err(|msg| Error::usage(format!("{msg}; nothing was stored")))?;
        lifecycle::check_note(&self.note)
            .map_err(|msg| Error::usage(format!("--note: {msg}; nothing was stored")))?;
        Ok(Config {
            home: self.store.resolve()?,
            target,
            kind: self.kind.into(),
            note: self.note,
        })
    }
}

#[cfg(test)]
mod tests {
    use clap::ValueEnum;

    use super::*;

    /// `--kind` takes each kind by the store's one spelling, and no other.
    #[test]
    fn kinds_are_spelled_as_the_store_spells_them() {
        let named: Vec<String> = KindArg::value_variants()
            .iter()
            .map(|k| k.to_possible_value().unwrap().get_name().to_owned())
            .collect();
        assert_eq!(named, Kind::ALL.map(|k| k.as_str().to_owned()));
        for &k in KindArg::value_variants() {
            let name = k.to_possible_value().unwrap().get_name().to_owned();
            assert_eq!(Kind::from(k).as_str(), name);
        }
    }
}
