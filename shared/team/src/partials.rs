//! Every store's partial aggregates (`store::partial`) in the database:
//! replaced by `index` beside the store's calls, merged by `promote` in
//! SQL, so promote reads a few rows per group and day instead of every
//! pooled call.
//!
//! The merge is exact when no (session, server) pair is in two stores and
//! every store that uploaded calls uploaded its aggregates too (a store
//! last indexed by an earlier release has none); [`merged`] says when it
//! is not, and promote then reads the calls as before. False-success
//! groups rest on the team's annotations, not on one store's calls: their
//! calls are looked up among the pooled calls, only when the team has
//! such annotations.

use std::collections::BTreeMap;

use postgres::Transaction;
use postgres::types::ToSql;

use shared::error::Result;
use shared::finding::Kind;
use store::fault;
use store::lifecycle::{self, Annotation, Target};
use store::partial::{Annotated, Calls, Detail, Failures, GroupKey, Partials, What};

use super::{column, is_traffic, pg_error};

/// Replaces the store's aggregates with `partials`, in the upload's
/// transaction, and marks the store as having them.
pub fn replace(
    tx: &mut Transaction<'_>,
    shown: &str,
    store: &str,
    partials: &Partials,
) -> Result<()> {
    for table in [
        "part_calls",
        "part_failures",
        "part_details",
        "part_streams",
    ] {
        insert(
            tx,
            shown,
            &format!("DELETE FROM mcpeval.{table} WHERE store_id = $1"),
            &[&store],
        )?;
    }

    let c = &partials.calls;
    let text = |f: fn(&Calls) -> &str| c.iter().map(f).collect::<Vec<_>>();
    let calls: Vec<i64> = c.iter().map(|c| c.calls).collect();
    insert(
        tx,
        shown,
        "INSERT INTO mcpeval.part_calls(store_id, server, tool, day, calls)
         SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[])",
        &[
            &store,
            &text(|c| &c.server),
            &text(|c| &c.tool),
            &text(|c| &c.day),
            &calls,
        ],
    )?;

    let f = &partials.failures;
    let text = |g: fn(&Failures) -> &str| f.iter().map(g).collect::<Vec<_>>();
    let int = |g: fn(&Failures) -> i64| f.iter().map(g).collect::<Vec<_>>();
    let templates: Vec<Option<&str>> = f.iter().map(|f| f.group.template_id.as_deref()).collect();
    insert(
        tx,
        shown,
        "INSERT INTO mcpeval.part_failures(store_id, kind, server, tool, template_id, day,
             failures, first_seen, last_seen, retryable_true, retryable_false,
             retryable_unreported, unadvertised)
         SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
             $7::bigint[], $8::text[], $9::text[], $10::bigint[], $11::bigint[], $12::bigint[],
             $13::bigint[])",
        &[
            &store,
            &text(|f| f.group.kind.as_str()),
            &text(|f| &f.group.server),
            &text(|f| &f.group.tool),
            &templates,
            &text(|f| &f.day),
            &int(|f| f.failures),
            &text(|f| &f.first_seen),
            &text(|f| &f.last_seen),
            &int(|f| f.retryable_true),
            &int(|f| f.retryable_false),
            &int(|f| f.retryable_unreported),
            &int(|f| f.unadvertised),
        ],
    )?;

    let d = &partials.details;
    let text = |g: fn(&Detail) -> &str| d.iter().map(g).collect::<Vec<_>>();
    let templates: Vec<Option<&str>> = d.iter().map(|d| d.group.template_id.as_deref()).collect();
    let n: Vec<i64> = d.iter().map(|d| d.n).collect();
    insert(
        tx,
        shown,
        "INSERT INTO mcpeval.part_details(store_id, kind, server, tool, template_id, what,
             value, n)
         SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
             $7::text[], $8::bigint[])",
        &[
            &store,
            &text(|d| d.group.kind.as_str()),
            &text(|d| &d.group.server),
            &text(|d| &d.group.tool),
            &templates,
            &text(|d| d.what.as_str()),
            &text(|d| &d.value),
            &n,
        ],
    )?;

    let s = &partials.streams;
    let sessions: Vec<&str> = s.iter().map(|s| s.0.as_str()).collect();
    let servers: Vec<&str> = s.iter().map(|s| s.1.as_str()).collect();
    insert(
        tx,
        shown,
        "INSERT INTO mcpeval.part_streams(store_id, session, server)
         SELECT $1, * FROM unnest($2::text[], $3::text[])",
        &[&store, &sessions, &servers],
    )?;
    fault::team_statement();
    tx.execute(
        "UPDATE mcpeval.stores SET partials = true WHERE store_id = $1",
        &[&store],
    )
    .map(drop)
    .map_err(pg_error(shown))
}

fn insert(
    tx: &mut Transaction<'_>,
    shown: &str,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<()> {
    fault::team_statement();
    tx.execute(sql, params).map(drop).map_err(pg_error(shown))
}

/// Why the stores' aggregates do not merge exactly, if they do not.
pub fn inexact(tx: &mut Transaction<'_>, shown: &str) -> Result<Option<&'static str>> {
    fault::team_statement();
    let missing: bool = tx
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM mcpeval.stores s WHERE NOT s.partials
                 AND EXISTS (SELECT 1 FROM mcpeval.journals j WHERE j.store_id = s.store_id))",
            &[],
        )
        .map_err(pg_error(shown))
        .and_then(|row| column(&row, 0, shown))?;
    if missing {
        return Ok(Some(
            "a store last indexed by an earlier release has uploaded no aggregates",
        ));
    }
    fault::team_statement();
    let shared: bool = tx
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM mcpeval.part_streams
                 GROUP BY session, server HAVING count(*) > 1)",
            &[],
        )
        .map_err(pg_error(shown))
        .and_then(|row| column(&row, 0, shown))?;
    Ok(shared.then_some("a session's calls are in two stores (a journal copied between them)"))
}

/// Every store's aggregates merged (in SQL, across stores and days), with
/// the false-success groups of `annotations` (the team's) added.
pub fn merged(
    tx: &mut Transaction<'_>,
    shown: &str,
    annotations: &[Annotation],
) -> Result<Partials> {
    let mut partials = Partials::default();
    // A kind this release does not know is no group of its.
    let group = |row: &postgres::Row| -> Result<Option<GroupKey>> {
        let kind: String = column(row, 0, shown)?;
        let Some(kind) = Kind::parse(&kind) else {
            return Ok(None);
        };
        Ok(Some(GroupKey {
            kind,
            server: column(row, 1, shown)?,
            tool: column(row, 2, shown)?,
            template_id: column(row, 3, shown)?,
        }))
    };
    fault::team_statement();
    for row in tx
        .query(
            "SELECT server, tool, sum(calls)::bigint FROM mcpeval.part_calls GROUP BY 1, 2",
            &[],
        )
        .map_err(pg_error(shown))?
    {
        partials.calls.push(Calls {
            server: column(&row, 0, shown)?,
            tool: column(&row, 1, shown)?,
            day: String::new(),
            calls: column(&row, 2, shown)?,
        });
    }
    // Time stamps compare as bytes, as one store compares them.
    fault::team_statement();
    for row in tx
        .query(
            r#"SELECT kind, server, tool, template_id, sum(failures)::bigint,
                      min(first_seen COLLATE "C"), max(last_seen COLLATE "C"),
                      sum(retryable_true)::bigint, sum(retryable_false)::bigint,
                      sum(retryable_unreported)::bigint, sum(unadvertised)::bigint
               FROM mcpeval.part_failures GROUP BY 1, 2, 3, 4"#,
            &[],
        )
        .map_err(pg_error(shown))?
    {
        let Some(group) = group(&row)? else { continue };
        partials.failures.push(Failures {
            group,
            day: String::new(),
            failures: column(&row, 4, shown)?,
            first_seen: column(&row, 5, shown)?,
            last_seen: column(&row, 6, shown)?,
            retryable_true: column(&row, 7, shown)?,
            retryable_false: column(&row, 8, shown)?,
            retryable_unreported: column(&row, 9, shown)?,
            unadvertised: column(&row, 10, shown)?,
        });
    }
    fault::team_statement();
    for row in tx
        .query(
            "SELECT kind, server, tool, template_id, what, value, sum(n)::bigint
             FROM mcpeval.part_details GROUP BY 1, 2, 3, 4, 5, 6",
            &[],
        )
        .map_err(pg_error(shown))?
    {
        let Some(group) = group(&row)? else { continue };
        let what: String = column(&row, 4, shown)?;
        let Some(what) = What::parse(&what) else {
            continue;
        };
        partials.details.push(Detail {
            group,
            what,
            value: column(&row, 5, shown)?,
            n: column(&row, 6, shown)?,
        });
    }
    let annotated = false_success_calls(tx, shown, annotations)?;
    store::partial::false_success(&annotated, &mut partials);
    Ok(partials)
}

/// The ok capture calls that the team's false-success annotations link
/// to, each once, resolved as one store resolves them: an annotation
/// links when exactly one call has its event id, or its session and seq.
/// One pass over the pooled calls, and none without such annotations.
fn false_success_calls(
    tx: &mut Transaction<'_>,
    shown: &str,
    annotations: &[Annotation],
) -> Result<Vec<Annotated>> {
    let targets: Vec<&Target> = annotations
        .iter()
        .filter(|a| a.kind == lifecycle::Kind::FalseSuccess)
        .map(|a| &a.target)
        .collect();
    if targets.is_empty() {
        return Ok(Vec::new());
    }
    let mut events = Vec::new();
    let mut sessions = Vec::new();
    for target in &targets {
        match target {
            Target::EventId(id) => events.push(id.as_str().to_owned()),
            Target::Coordinates { session, .. } => sessions.push(session.as_str().to_owned()),
        }
    }
    fault::team_statement();
    let rows = tx
        .query(
            "SELECT store_id, journal, line, event_id, session, seq, origin, outcome, server,
                    tool, started_at, args_shape
             FROM mcpeval.calls WHERE event_id = ANY($1) OR session = ANY($2)",
            &[&events, &sessions],
        )
        .map_err(pg_error(shown))?;
    struct Row {
        at: (String, String, i64),
        event_id: Option<String>,
        session: String,
        seq: i64,
        counts: bool,
        call: Annotated,
    }
    let mut found = Vec::with_capacity(rows.len());
    for r in &rows {
        let origin: String = column(r, 6, shown)?;
        let outcome: String = column(r, 7, shown)?;
        found.push(Row {
            at: (
                column(r, 0, shown)?,
                column(r, 1, shown)?,
                column(r, 2, shown)?,
            ),
            event_id: column(r, 3, shown)?,
            session: column(r, 4, shown)?,
            seq: column(r, 5, shown)?,
            counts: is_traffic(&origin) && outcome == "ok",
            call: Annotated {
                server: column(r, 8, shown)?,
                tool: column(r, 9, shown)?,
                session: column(r, 4, shown)?,
                started_at: column(r, 10, shown)?,
                args_shape: column(r, 11, shown)?,
            },
        });
    }
    let mut linked: BTreeMap<&(String, String, i64), &Annotated> = BTreeMap::new();
    for target in targets {
        let matching: Vec<&Row> = found
            .iter()
            .filter(|r| match target {
                Target::EventId(id) => r.event_id.as_deref() == Some(id.as_str()),
                Target::Coordinates { session, seq } => {
                    r.session == session.as_str() && u64::try_from(r.seq).ok() == Some(*seq)
                }
            })
            .take(2)
            .collect();
        if let [row] = matching[..]
            && row.counts
        {
            linked.insert(&row.at, &row.call);
        }
    }
    Ok(linked.into_values().cloned().collect())
}
