//! The data table's global secondary indexes in each stored layout, and
//! what each projects: what the layout ([`super::layout`]) maps a list to and
//! what the table's creation ([`super::tables`]) creates, apart from both so
//! that each can read them.

/// The GSIs every list runs on, all sorting on the numeric `id`, each with
/// the attributes its lists return (beyond the keys, always projected).
///
/// Not `ALL`: an index copy is rewritten, and paid for, whenever a projected
/// attribute changes, on the partition that copy is in. What changes on every
/// order is in no list's index: the counters only conditions read
/// (`openOrders`, `petCount`) are in none, and `stock` only in the inventory
/// index, whose partitions are the pets' own (see `inventory.rs`). So an
/// order writes its own index copies, each on a partition of its own list's
/// shards or of its pet or owner, and its pet's inventory entry, on that
/// pet's own partition.
///
/// These are layout 2's (`Layout::V2`): `GSI1v2`..`GSI4v2` replaced the
/// last release's `GSI1`..`GSI4` ([`RELEASED_INDEXES`]) when their
/// projections gained `lapsesAt` (DynamoDB cannot change an index's
/// projection: migration 0001 creates each new one beside the old, see
/// docs/upgrade.md). Each keeps its old key attributes (`GSI1PK`.. and
/// `id`), so no item is rewritten.
pub const INDEXES: [(&str, &[&str]); 5] = [
    // Everything of a kind: pets, categories, orders, inventory, API keys.
    (
        "GSI1v2",
        &[
            "name",
            "categoryId",
            "status",
            "description",
            "petId",
            "quantity",
            "shipDate",
            "complete",
            "lapsesAt",
            "plan",
            "perMinute",
            "perDay",
            "createdAt",
            "revoked",
        ],
    ),
    // Pets (and inventory) by status; orders by completion.
    (
        "GSI2v2",
        &[
            "name",
            "categoryId",
            "status",
            "petId",
            "quantity",
            "shipDate",
            "complete",
            "lapsesAt",
        ],
    ),
    // Pets by category; orders by pet.
    (
        "GSI3v2",
        &[
            "name",
            "categoryId",
            "status",
            "petId",
            "quantity",
            "shipDate",
            "complete",
            "lapsesAt",
        ],
    ),
    // Orders by owner: a customer's own orders (petId and complete are also
    // what its filters read).
    (
        "GSI4v2",
        &["petId", "quantity", "shipDate", "complete", "lapsesAt"],
    ),
    // The inventory: one entry per pet, on a partition of its own (`GSI5PK`
    // is the pet's `PK`), scanned for the inventory lists.
    ("GSI5", &["stock", "status"]),
];

/// Layout 1's indexes (`Layout::V1`): the last release's (contract 1.0.0,
/// commit e25da8e), as its template created them. Its `GSI1`..`GSI4` do not
/// project `lapsesAt`; a list on them reads everything else.
pub const RELEASED_INDEXES: [(&str, &[&str]); 5] = [
    (
        "GSI1",
        &[
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
        ],
    ),
    (
        "GSI2",
        &[
            "name",
            "categoryId",
            "status",
            "petId",
            "quantity",
            "shipDate",
            "complete",
        ],
    ),
    (
        "GSI3",
        &[
            "name",
            "categoryId",
            "status",
            "petId",
            "quantity",
            "shipDate",
            "complete",
        ],
    ),
    ("GSI4", &["petId", "quantity", "shipDate", "complete"]),
    ("GSI5", &["stock", "status"]),
];
