//! Which rows of the team database a command depends on.
//!
//! A refused row (see the module `trust`) stops a command only when the
//! command would read it: a forged run of one finding must not keep the
//! team from verifying or closing another. The command says what it
//! reads when it brings the view up to date; refused rows outside that
//! never enter the view either, so nothing the command reads or shows can
//! come from them.

use shared::error::Result;
use shared::id::FindingId;

use super::mirror::{Belongs, CATALOG, Cell, LIFECYCLE, Table};
use super::trust::Refused;

/// What a command reads of the team's lifecycle and findings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every row: the readers that list the team's findings.
    All,
    /// One finding's rows, and the promotion its catalog row is read
    /// through.
    Finding(FindingId),
    /// Several findings' rows, and the promotion.
    Findings(Vec<FindingId>),
    /// Every lifecycle row, and none of the catalog: `promote`, which
    /// recomputes the catalog from the team's calls and lifecycle.
    Lifecycle,
    /// No row: a command that only adds rows of its own (`annotate`), or
    /// only indexes the view.
    Nothing,
}

impl Scope {
    /// Whether a command of this scope reads `cells`, a row of `table`.
    pub fn reads(&self, table: &Table, cells: &[Cell]) -> bool {
        let lifecycle = LIFECYCLE.iter().any(|t| t.remote == table.remote);
        debug_assert!(lifecycle || CATALOG.iter().any(|t| t.remote == table.remote));
        let about = |ids: &[FindingId]| match table.belongs {
            Belongs::Finding(column) => {
                let i = table.columns.iter().position(|(c, _)| *c == column);
                match i.and_then(|i| cells.get(i)) {
                    Some(Cell::Text(id)) => ids.iter().any(|f| f.as_str() == id),
                    _ => false,
                }
            }
            Belongs::Catalog => true,
            Belongs::Lifecycle => false,
        };
        match self {
            Scope::All => true,
            Scope::Lifecycle => lifecycle,
            Scope::Finding(id) => about(std::slice::from_ref(id)),
            Scope::Findings(ids) => about(ids),
            Scope::Nothing => false,
        }
    }

    /// Refuses (status 3, with the words of the refused row) when a command of this
    /// scope reads any of `refused`; the message names the first.
    pub fn check(&self, refused: &[Refused], shown: &str) -> Result<()> {
        let mut read = refused.iter().filter(|r| self.reads(r.table, &r.cells));
        match read.next() {
            Some(first) => Err(first.error(shown, read.count())),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trust::Fault;

    const F: &str = "finding-0123456789abcdef";
    const G: &str = "finding-fedcba9876543210";

    fn id(text: &str) -> FindingId {
        FindingId::parse(text).unwrap()
    }

    fn refused(remote: &str, column: &str, value: &str) -> Refused {
        let table = LIFECYCLE
            .iter()
            .chain(CATALOG)
            .find(|t| t.remote == remote)
            .unwrap();
        let mut cells = vec![Cell::Int(1); table.columns.len()];
        let i = table
            .columns
            .iter()
            .position(|(c, _)| *c == column)
            .unwrap();
        cells[i] = Cell::Text(value.to_owned());
        Refused {
            table,
            cells,
            mac: None,
            fault: Fault::Mac,
        }
    }

    #[test]
    fn a_refused_row_stops_only_the_scopes_that_read_it() {
        let of_g = [
            refused("mcpeval.life_finding_state", "finding_id", G),
            refused("mcpeval.life_verifications", "finding_id", G),
            refused("mcpeval.life_history", "finding_id", G),
            refused("mcpeval.cat_findings", "id", G),
        ];
        let annotation = refused("mcpeval.life_annotations", "note", "x");
        let import = refused("mcpeval.life_imports", "name", "x");
        let promotion = refused("mcpeval.cat_promotion", "promoted_at", "x");
        let stops =
            |scope: &Scope, row: &Refused| scope.check(std::slice::from_ref(row), "db").is_err();
        for row in &of_g {
            assert!(stops(&Scope::All, row), "{}", row.table.remote);
            assert!(stops(&Scope::Finding(id(G)), row));
            assert!(stops(&Scope::Findings(vec![id(F), id(G)]), row));
            assert!(!stops(&Scope::Finding(id(F)), row));
            assert!(!stops(&Scope::Findings(vec![id(F)]), row));
            assert!(!stops(&Scope::Nothing, row));
            let lifecycle = row.table.remote.starts_with("mcpeval.life_");
            assert_eq!(stops(&Scope::Lifecycle, row), lifecycle);
        }
        for row in [&annotation, &import] {
            assert!(stops(&Scope::All, row));
            assert!(stops(&Scope::Lifecycle, row));
            assert!(!stops(&Scope::Finding(id(F)), row));
            assert!(!stops(&Scope::Nothing, row));
        }
        assert!(stops(&Scope::All, &promotion));
        assert!(stops(&Scope::Finding(id(F)), &promotion));
        assert!(!stops(&Scope::Lifecycle, &promotion));
        assert!(!stops(&Scope::Nothing, &promotion));
    }

    #[test]
    fn the_refusal_names_the_first_row_read_and_counts_the_rest() {
        let rows = [
            refused("mcpeval.life_history", "finding_id", F),
            refused("mcpeval.life_verifications", "finding_id", G),
            refused("mcpeval.life_finding_state", "finding_id", G),
        ];
        let err = Scope::Finding(id(G)).check(&rows, "db").unwrap_err();
        assert!(
            err.message().starts_with(
                "team database db: row id=1 of mcpeval.life_verifications does not carry"
            ),
            "{}",
            err.message()
        );
        assert!(
            err.message().contains("(and 1 more row of"),
            "{}",
            err.message()
        );
    }
}
