//! What the index says about an annotation's target right now.
//!
//! Only reads `index.db`, and only to inform: the annotation is already
//! stored, so an index that is missing or unreadable is reported, never an
//! error.

use shared::home::Home;
use store::index_db::{self, Link};
use store::lifecycle::Target;

/// The rest of the line after `annotation N stored`.
pub fn describe(home: &Home, target: &Target) -> String {
    let next = "the next `mcpeval index`";
    if !home.index_db().exists() {
        return format!(" unlinked: there is no index yet; {next} links it");
    }
    let found = index_db::open_complete(home).and_then(|conn| {
        let db = home.index_db();
        let link = index_db::resolve(&conn, db.as_std_path(), target)?;
        let place = match link {
            Link::Linked(call) => conn
                .query_row(
                    "SELECT j.name, c.line, c.server, c.tool FROM calls c
                     JOIN journals j ON j.id = c.journal_id WHERE c.id = ?1",
                    [call],
                    |row| {
                        Ok(format!(
                            "{}/{} at {}:{}",
                            row.get::<_, String>(2)?,
                            row.get::<_, String>(3)?,
                            row.get::<_, String>(0)?,
                            row.get::<_, i64>(1)?
                        ))
                    },
                )
                .map_err(|e| store::db::sql_error(&db, e))?,
            Link::Unknown | Link::Ambiguous => String::new(),
        };
        Ok((link, place))
    });
    match found {
        Ok((Link::Linked(_), place)) => {
            format!(" and linked to the call {place}; {next} records the link for promote")
        }
        Ok((Link::Unknown, _)) => {
            format!(
                " unlinked: no indexed call has {target}; {next} links it once that call is indexed"
            )
        }
        Ok((Link::Ambiguous, _)) => format!(
            " unlinked: several indexed calls have {target}, and legacy coordinates must identify one call; {next} resolves it again"
        ),
        Err(err) => format!(
            " unlinked: the index cannot be read ({}); {next} links it",
            err.message()
        ),
    }
}
