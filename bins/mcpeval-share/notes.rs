//! The annotation notes on shared calls: the one prose the envelope may
//! carry, and only when asked. Read straight from lifecycle.db's
//! `annotations` table; nothing else of lifecycle.db is read here.

use std::collections::HashSet;

use shared::Result;
use shared::home::Home;
use shared::record::Record;
use store::db::sql_error;
use store::envelope::Note;

/// The call `note` is about, as people name it (in this store's tokens).
pub fn target(note: &Note) -> String {
    match (&note.event_id, &note.session, note.seq) {
        (Some(id), _, _) => format!("event id {id}"),
        (None, Some(s), Some(seq)) => format!("session {s} seq {seq}"),
        _ => "an unknown call".into(),
    }
}

/// The notes whose call is among `records`, oldest first.
pub fn on(home: &Home, records: &[Record]) -> Result<Vec<Note>> {
    let Some(conn) = store::lifecycle::open_if_present(home)? else {
        return Ok(Vec::new());
    };
    let events: HashSet<&str> = records.iter().filter_map(Record::event_id).collect();
    let coords: HashSet<(&str, u64)> = records.iter().map(|r| (r.session(), r.seq())).collect();
    let path = home.lifecycle_db();
    let fail = |e| sql_error(&path, e);
    let mut stmt = conn
        .prepare(
            "SELECT kind, created_at, event_id, session, seq, note FROM annotations ORDER BY id",
        )
        .map_err(fail)?;
    let rows = stmt
        .query_map([], |r| {
            Ok(Note {
                kind: r.get(0)?,
                created_at: r.get(1)?,
                event_id: r.get(2)?,
                session: r.get(3)?,
                seq: r.get::<_, Option<i64>>(4)?.map(|s| s.max(0) as u64),
                note: r.get(5)?,
            })
        })
        .map_err(fail)?;
    let mut out = Vec::new();
    for note in rows {
        let note = note.map_err(fail)?;
        let shared_call = match (&note.event_id, &note.session, note.seq) {
            (Some(id), _, _) => events.contains(id.as_str()),
            (None, Some(s), Some(seq)) => coords.contains(&(s.as_str(), seq)),
            _ => false,
        };
        if shared_call {
            out.push(note);
        }
    }
    Ok(out)
}
