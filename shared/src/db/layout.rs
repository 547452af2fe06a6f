//! The stored layout of the data table: which indexes the lists read, and
//! what each of them projects.
//!
//! A deployed table changes layout only through a migration
//! (docs/upgrade.md): its indexes are created beside the old ones, the data
//! backfilled, then the functions switched to them by a deploy that sets
//! `DATA_LAYOUT` ([`crate::config::Config::data_layout`]), then the old
//! indexes deleted. So the functions never read the layout at run time: the
//! deploy that moves the table tells them, at no cold-start cost.
//!
//! The code names each list's index by its list, `GSI1`..`GSI5` (the key
//! attributes `GSI1PK`.. every layout keeps); a layout maps that name to the
//! index it is stored in, and a list reads only what that index projects
//! (layout 2's list indexes project everything; layout 1's did not).

use super::indexes::{Index, Projects, INDEXES, RELEASED_INDEXES};
use super::query::Projection;
use super::shape;
use std::borrow::Cow;

/// A stored layout of the data table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// The last release's (contract 1.0.0): `GSI1`..`GSI5` without
    /// `lapsesAt`, and open orders placed before holds were counted.
    V1,
    /// This release's: `GSI1v2`..`GSI4v2` (with `lapsesAt`) and `GSI5`,
    /// every open order counted on its owner's holds.
    #[default]
    V2,
}

impl Layout {
    /// Every layout this code serves, oldest first.
    pub const ALL: [Layout; 2] = [Layout::V1, Layout::V2];

    /// The layout numbered `number` (`DATA_LAYOUT`).
    pub fn from_number(number: u64) -> Option<Layout> {
        match number {
            1 => Some(Layout::V1),
            2 => Some(Layout::V2),
            _ => None,
        }
    }

    pub fn number(self) -> u64 {
        match self {
            Layout::V1 => 1,
            Layout::V2 => 2,
        }
    }

    /// Every index of this layout, with what it projects beyond the keys.
    pub fn indexes(self) -> &'static [Index; 5] {
        match self {
            Layout::V1 => &RELEASED_INDEXES,
            Layout::V2 => &INDEXES,
        }
    }

    /// The list an index serves, which names its key attributes: `GSI2v2`
    /// is list `GSI2`, keyed on `GSI2PK` and `id`.
    pub fn list_of(index: &str) -> &str {
        index.strip_suffix("v2").unwrap_or(index)
    }

    /// The index `list` (`GSI1`..`GSI5`) is stored in under this layout, and
    /// what it projects (`list` itself and nothing when no index serves it:
    /// a programming error DynamoDB then names).
    fn entry(self, list: &'static str) -> Index {
        self.indexes()
            .iter()
            .find(|(index, _)| Layout::list_of(index) == list)
            .copied()
            .unwrap_or((list, Projects::Only(&[])))
    }

    /// The index `list` is stored in under this layout.
    pub fn index_of(self, list: &'static str) -> &'static str {
        self.entry(list).0
    }

    /// Of what `wanted` reads, what `list`'s index projects under this
    /// layout (and `id`, every index's sort key, and the table's key): a list asks an index only
    /// for what it holds, since DynamoDB refuses the whole query otherwise.
    pub(crate) fn readable(
        self,
        list: &'static str,
        wanted: &'static Projection,
    ) -> Cow<'static, Projection> {
        let projected = self.entry(list).1;
        // Every index holds the table's key too (`PK`, `SK`).
        let held = |name: &str| matches!(name, shape::ID | "PK" | "SK") || projected.holds(name);
        if wanted.names.iter().all(|(_, name)| held(name)) {
            return Cow::Borrowed(wanted);
        }
        Cow::Owned(Projection::of_attributes(
            &wanted
                .names
                .iter()
                .map(|(_, name)| name.as_str())
                .filter(|name| held(name))
                .collect::<Vec<_>>(),
        ))
    }

    /// Whether open orders of this layout may hold without being counted
    /// (placed before holds were, and not yet backfilled): the cap then
    /// counts them from the orders themselves (see `db::holds`).
    pub fn has_uncounted_holds(self) -> bool {
        self == Layout::V1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_layout_names_every_list_s_index() {
        for list in ["GSI1", "GSI2", "GSI3", "GSI4", "GSI5"] {
            assert_eq!(Layout::V1.index_of(list), list);
            assert_eq!(Layout::list_of(Layout::V2.index_of(list)), list);
        }
        assert_eq!(Layout::V2.index_of("GSI4"), "GSI4v2");
        assert_eq!(Layout::V2.index_of("GSI5"), "GSI5");
        for layout in Layout::ALL {
            assert_eq!(Layout::from_number(layout.number()), Some(layout));
        }
        assert_eq!(Layout::from_number(3), None);
    }
}
