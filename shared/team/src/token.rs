//! The upload token: how a copied store is told apart (SPEC §11).
//!
//! A store is known to the team by its id (`store-id`). Copy the store's
//! directory to another machine and two machines upload as one store:
//! each upload would replace the other's journals. So every upload sets
//! a new random token in `mcpeval.stores.upload_token` and the store
//! keeps it (`upload-token`); an upload that finds a token there that
//! this store never set was made by another machine under this id, and
//! is refused (status 6) before anything is written.
//!
//! The file is written before the commit with both the old and the new
//! token, and after it with the new one alone, so a run killed in between
//! is never taken for a copy. Runs of one machine take turns: the caller
//! holds this machine's team lock.

use std::fs;

use shared::error::{Error, Result};
use shared::home::Home;

/// `upload-token`, beside `store-id`.
fn path(own: &Home) -> camino::Utf8PathBuf {
    own.own().root().join("upload-token")
}

/// The tokens this store may have set: the last one, and while an upload
/// is under way, the one it is setting.
pub fn read(own: &Home) -> Result<Vec<String>> {
    let path = path(own);
    match fs::read_to_string(&path) {
        Ok(text) => Ok(text.split_whitespace().map(str::to_owned).collect()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(err) => Err(Error::io(format_args!("cannot read {path}"), err)),
    }
}

/// Replaces the file's tokens with `tokens`.
pub fn write(own: &Home, tokens: &[&str]) -> Result<()> {
    let text: String = tokens.iter().map(|t| format!("{t}\n")).collect();
    shared::atomic_file::write(path(own).as_std_path(), text.as_bytes(), 0o600)
}

/// A new token.
pub fn fresh() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Refuses an upload when the database's token for this store is one
/// this store never set (see the module's comment).
pub fn check(own: &Home, theirs: Option<&str>, store: &str, shown: &str) -> Result<()> {
    let Some(theirs) = theirs else {
        return Ok(());
    };
    if read(own)?.iter().any(|t| t == theirs) {
        return Ok(());
    }
    let own = own.own();
    Err(Error::refused(format!(
        "another machine uploads to the team database {shown} as this store (store id {store}, in {}): this store or that one is a copy of the other; nothing was uploaded",
        own.store_id()
    ))
    .with_hint(format!(
        "give the copy an id of its own: on the copy, delete {} and {}, and move out of its journals/ the journals it was copied with (the other machine uploads those); then run `mcpeval index` there",
        own.store_id(),
        path(&own)
    )))
}
