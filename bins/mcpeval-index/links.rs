//! Annotation links: which indexed call each `lifecycle.db` annotation is
//! about, resolved again whenever the calls or the annotations change.
//!
//! Unknown and ambiguous targets are stored with their status and no call,
//! so they can never influence a finding. Notes are never read here.

use std::path::Path;

use rusqlite::Connection;
use shared::error::Result;
use store::index_db::{self, Link};
use store::lifecycle::Annotation;

use crate::schema;

/// Replaces every stored link with a fresh resolution of `annotations`.
pub fn relink(conn: &Connection, db: &Path, annotations: &[Annotation]) -> Result<()> {
    let fail = schema::fail(db);
    conn.execute("DELETE FROM annotation_links", [])
        .map_err(&fail)?;
    let mut insert = conn
        .prepare("INSERT INTO annotation_links(annotation_id, kind, status, call_id) VALUES (?1, ?2, ?3, ?4)")
        .map_err(&fail)?;
    for a in annotations {
        let link = index_db::resolve(conn, db, &a.target)?;
        let call = match link {
            Link::Linked(id) => Some(id),
            Link::Unknown | Link::Ambiguous => None,
        };
        insert
            .execute((a.id, a.kind.as_str(), link.status(), call))
            .map_err(&fail)?;
    }
    Ok(())
}
