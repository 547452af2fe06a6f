//! The data table's global secondary indexes in each stored layout, and
//! what each projects: what the layout ([`super::layout`]) maps a list to and
//! what the table's creation ([`super::tables`]) creates, apart from both so
//! that each can read them.

/// What an index holds of an item beyond its keys (always projected).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Projects {
    /// The whole item (`ALL`): a field added to, renamed in or removed from
    /// a record changes no index.
    All,
    /// These attributes only (`INCLUDE`).
    Only(&'static [&'static str]),
}

impl Projects {
    /// Whether an entry of the index holds attribute `name`.
    pub fn holds(self, name: &str) -> bool {
        match self {
            Projects::All => true,
            Projects::Only(attributes) => attributes.contains(&name),
        }
    }
}

/// A global secondary index: its name and what it projects.
pub type Index = (&'static str, Projects);

/// The GSIs every list runs on, all sorting on the numeric `id`.
///
/// The list indexes carry the whole item (`ALL`), so a record's fields are
/// no part of the stored layout: a list reads every field from its index,
/// and a new field ships with no index, template or migration change
/// (docs/data.md, "What the list indexes hold"). The price is paid on
/// writes: an index copy is rewritten whenever its item changes. So a
/// pet's `stock` and `openOrders`, which every order changes, are on its
/// stock item (`pets::stock`), in none of these: an order rewrites the
/// pet's copies in `GSI1v2`..`GSI3v2` only when it moves the pet's status
/// (the figures are in docs/data.md). The inventory index
/// (`GSI5`) stays narrow: every pet is in it, on a partition of its own,
/// and it is scanned whole, so a wide entry would only cost reads.
///
/// These are layout 2's (`Layout::V2`): `GSI1v2`..`GSI4v2` replace the
/// last release's `GSI1`..`GSI4` ([`RELEASED_INDEXES`], which name their
/// attributes and lack `lapsesAt`), since DynamoDB cannot change an index's
/// projection: migration 0001 creates each new one beside the old, see
/// docs/upgrade.md. Each keeps its old key attributes (`GSI1PK`.. and
/// `id`), so no item is rewritten.
pub const INDEXES: [Index; 5] = [
    // Everything of a kind: pets, categories, orders, inventory, API keys.
    ("GSI1v2", Projects::All),
    // Pets (and inventory) by status; orders by completion.
    ("GSI2v2", Projects::All),
    // Pets by category; orders by pet.
    ("GSI3v2", Projects::All),
    // Orders by owner: a customer's own orders.
    ("GSI4v2", Projects::All),
    // The inventory: one entry per pet, on a partition of its own (`GSI5PK`
    // is the pet's `PK`), scanned for the inventory lists.
    ("GSI5", Projects::Only(&["stock", "status"])),
];

/// Layout 1's indexes (`Layout::V1`): the last release's (contract 1.0.0,
/// commit e25da8e), as its template created them. Its `GSI1`..`GSI4` do not
/// project `lapsesAt`; a list on them reads everything else.
pub const RELEASED_INDEXES: [Index; 5] = [
    (
        "GSI1",
        Projects::Only(&[
            "name",
            "categoryId",
            "status",
            "description",
            "petId",
            "quantity",
            "shipDate",
            "complete",
            "plan",
            "perMinute",
            "perDay",
            "createdAt",
            "revoked",
        ]),
    ),
    (
        "GSI2",
        Projects::Only(&[
            "name",
            "categoryId",
            "status",
            "petId",
            "quantity",
            "shipDate",
            "complete",
        ]),
    ),
    (
        "GSI3",
        Projects::Only(&[
            "name",
            "categoryId",
            "status",
            "petId",
            "quantity",
            "shipDate",
            "complete",
        ]),
    ),
    (
        "GSI4",
        Projects::Only(&["petId", "quantity", "shipDate", "complete"]),
    ),
    ("GSI5", Projects::Only(&["stock", "status"])),
];
