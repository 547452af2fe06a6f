//! Every invariant `data check` holds the table to: one small function each,
//! all in [`INVARIANTS`].
//!
//! An [`Rule::Item`] reads one item alone, as the scan passes it; a
//! [`Rule::Table`] reads what the scan gathered from every item
//! ([`Gathered`]), once the scan is done. To add one: write its function
//! here (an item's problem as `Some(text)`, or the table's findings), add
//! an entry to [`INVARIANTS`] with a kebab-case name and what it says, and
//! if it needs a fact across items, gather that fact in `gathered.rs`. Then
//! add a test in `tests/data/` that breaks it in DynamoDB Local and sees it
//! reported (`docs/data.md`, "Adding an invariant").

use super::gathered::Gathered;
use super::item::{in_some_shard, problems, Finding, Kind, Scanned, Whole};
use super::{stock, webhooks};
use petstore::db::categories::StoredCategory;
use petstore::db::orders::StoredOrder;
use petstore::db::pets::stock::{StockEntry, StoredPetItem};
use petstore::db::shards::Kind as Listed;
use petstore::records::MAX_ID;

/// How an invariant is checked.
pub enum Rule {
    /// On each item alone: its problem, if it has one.
    Item(fn(&Scanned) -> Option<String>),
    /// On the facts gathered from every item: each item that breaks it.
    Table(fn(&Gathered) -> Vec<Finding>),
}

/// An invariant: its name (in every finding), what it says, and its check.
pub struct Invariant {
    pub name: &'static str,
    pub says: &'static str,
    pub rule: Rule,
}

/// Every invariant the service's writes keep.
pub const INVARIANTS: &[Invariant] = &[
    Invariant { name: "known-kind", says: "every item is a known record: its SK names a kind and its PK has that kind's prefix", rule: Rule::Item(known_kind) },
    Invariant { name: "key-names-id", says: "a pet's, its stock item's, an order's, category's or webhook endpoint's PK is its kind's prefix and its id, a valid id (1 to 2^53-1)", rule: Rule::Item(key_names_id) },
    Invariant { name: "reads-as-record", says: "a pet, stock, order, category, webhook endpoint or delivery item reads as its record (the service can serve it; an endpoint and a delivery as both the API and the delivery handler read them)", rule: Rule::Item(reads_as_record) },
    Invariant { name: "stock-not-negative", says: "a pet's stock, on whichever item holds it (its stock item, or a pet item written before stock items), is a whole number, never below 0", rule: Rule::Item(stock::stock_not_negative) },
    Invariant { name: "open-orders-not-negative", says: "a pet's open-order count, on whichever item holds it, is a whole number, never below 0", rule: Rule::Item(stock::open_orders_not_negative) },
    Invariant { name: "pet-index-keys", says: "a pet item is in the all-pets list (GSI1) and its status's list (GSI2) under its shard, its category's list (GSI3), in no owner list, and in the inventory index (GSI5PK = PK) exactly when it holds its stock (written before stock items)", rule: Rule::Item(pet_index_keys) },
    Invariant { name: "stock-item-keys", says: "a stock item is the pet's entry in the inventory index (GSI5PK = PK) and in no list (GSI1PK..GSI4PK absent)", rule: Rule::Item(stock::stock_item_keys) },
    Invariant { name: "order-index-keys", says: "an order is in the all-orders list (GSI1) and its completion's list (GSI2) under its shard, its pet's list (GSI3), its owner's list (GSI4) exactly when it has an owner; not in the inventory", rule: Rule::Item(order_index_keys) },
    Invariant { name: "category-index-keys", says: "a category is in the all-categories list (GSI1) under its shard, and in no other index", rule: Rule::Item(category_index_keys) },
    Invariant { name: "unlisted-kinds", says: "name claims, idempotency records, hold counts, backfill progress, webhook endpoint counts and delivery slots are in no index; an API key only in the key list (GSI1PK = APIKEY; a short-lived one, with an expiresAt, in none) with a whole-number id", rule: Rule::Item(unlisted_kinds) },
    Invariant { name: "complete-order-shipped", says: "a complete order has a shipDate (completing sets it)", rule: Rule::Item(complete_order_shipped) },
    Invariant { name: "idempotency-record-expires", says: "an idempotency record has its expiry (expiresAt, the TTL attribute)", rule: Rule::Item(idempotency_record_expires) },
    Invariant { name: "webhook-endpoint-index-keys", says: "a webhook endpoint is in every endpoint's list (GSI1PK = WEBHOOK), its owner's (GSI4PK = WEBHOOKOWNER#<ownerId>), the staff endpoints' (GSI2PK = WEBHOOKSTAFF) exactly when its ownerRole is staff, and no other index", rule: Rule::Item(webhooks::endpoint_index_keys) },
    Invariant { name: "webhook-delivery-keys", says: "a webhook delivery is under one of its endpoint's delivery partitions (PK = WEBHOOK#<webhookId>#<shard>) and in no index (an index entry would be rewritten at every attempt), its webhookId and eventId those its key names; its endpoint may be gone (a deleted endpoint's deliveries stay until they expire)", rule: Rule::Item(webhooks::delivery_keys) },
    Invariant { name: "webhook-items-expire", says: "a webhook delivery and a delivery slot have their expiry (expiresAt, the TTL attribute): a delivery goes 30 days after it was made (no attempt or retry moves it), a deleted endpoint's slots a day after their lease", rule: Rule::Item(webhooks::items_expire) },
    Invariant { name: "webhook-delivery-not-overdue", says: "a pending webhook delivery has an attempt to come: its nextAttemptAt is at most an hour past (later, no queue message is carrying it)", rule: Rule::Item(webhooks::delivery_not_overdue) },
    Invariant { name: "open-orders-counted", says: "a pet's open-order count, on whichever item holds it, equals its incomplete orders", rule: Rule::Table(open_orders_counted) },
    Invariant { name: "stock-held-once", says: "a pet's stock is on exactly one item: its stock item, or its pet item (written before stock items, with stock and openOrders); never both, never neither", rule: Rule::Table(stock::stock_held_once) },
    Invariant { name: "stock-item-pet-known", says: "a stock item's pet item exists (a pet is deleted with its stock item)", rule: Rule::Table(stock::stock_item_pet_known) },
    Invariant { name: "stock-item-status", says: "a stock item's status equals its pet item's (both are written in one transaction)", rule: Rule::Table(stock::stock_item_status) },
    Invariant { name: "open-order-pet-known", says: "an incomplete order's pet exists (a pet with incomplete orders cannot be deleted; complete orders may outlive it)", rule: Rule::Table(open_order_pet_known) },
    Invariant { name: "pet-category-known", says: "a pet's category exists", rule: Rule::Table(pet_category_known) },
    Invariant { name: "category-pet-count", says: "a category's petCount equals the pets in it", rule: Rule::Table(category_pet_count) },
    Invariant { name: "category-name-claimed", says: "a category's name (folded) has its claim item, naming that category: so no two categories share a name", rule: Rule::Table(category_name_claimed) },
    Invariant { name: "name-claim-current", says: "a name claim names an existing category whose name folds to the claimed name", rule: Rule::Table(name_claim_current) },
    Invariant { name: "holds-counted", says: "a key identity's hold count (HOLDS#<keyId>, openOrders) equals its incomplete orders, each of which carries a lapse time (orders placed before holds were counted get theirs from migration 0001's holds backfill)", rule: Rule::Table(holds_counted) },
    Invariant { name: "api-key-id-unique", says: "no two API key items share a key id (a rotation replaces the item; a secret it keeps for a while is a pointer, not a key)", rule: Rule::Table(api_key_id_unique) },
    Invariant { name: "webhook-endpoints-counted", says: "a key identity's webhook endpoint count (WEBHOOKOWNER#<ownerId>, endpoints) equals the endpoints it owns, and one that owns endpoints has its count: its plan's cap is exact only so", rule: Rule::Table(webhooks::endpoints_counted) },
];

fn known_kind(s: &Scanned) -> Option<String> {
    match s.kind.pk_prefix() {
        None => Some(format!("SK `{}` is no known record's", s.sk())),
        Some(prefix) if !s.pk().starts_with(prefix) => Some(format!(
            "a {:?} item whose PK does not start with {prefix}",
            s.kind
        )),
        Some(_) => None,
    }
}

fn key_names_id(s: &Scanned) -> Option<String> {
    let prefix = match s.kind {
        Kind::Pet | Kind::Stock | Kind::Order | Kind::Category | Kind::WebhookEndpoint => {
            s.kind.pk_prefix()?
        }
        _ => return None,
    };
    match s.id() {
        Some(id) if (1..=MAX_ID).contains(&id) => {
            let expected = format!("{prefix}{id}");
            (s.pk() != expected).then(|| format!("id {id} but PK is not {expected}"))
        }
        _ => Some(format!("id is {:?}, not a valid id", s.item.get("id"))),
    }
}

fn reads_as_record(s: &Scanned) -> Option<String> {
    let item = s.item.clone();
    let read = match s.kind {
        Kind::Pet => serde_dynamo::from_item::<_, StoredPetItem>(item).map(drop),
        Kind::Stock => serde_dynamo::from_item::<_, StockEntry>(item).map(drop),
        Kind::Order => serde_dynamo::from_item::<_, StoredOrder>(item).map(drop),
        Kind::Category => serde_dynamo::from_item::<_, StoredCategory>(item).map(drop),
        _ => return webhooks::unreadable(s),
    };
    read.err()
        .map(|e| format!("does not read as a {:?}: {e}", s.kind))
}

/// `name` is `id`'s key in the sharded list `list`, or the problem.
fn sharded_is(s: &Scanned, name: &str, list: &str, id: u64, kind: Listed) -> Option<String> {
    let actual = s.text(name);
    // Under any count up to the stage's, or its draining one while a
    // lowered count is resharded.
    let count = s.shards.draining(kind);
    (!in_some_shard(actual, list, id, count))
        .then(|| format!("{name} is {actual:?}, should be {list}#<shard of {id} among {count}>"))
}

fn pet_index_keys(s: &Scanned) -> Option<String> {
    let (Kind::Pet, Some(id)) = (s.kind, s.id()) else {
        return None;
    };
    let status = s.text("status").unwrap_or("?");
    let category = s.whole("categoryId").non_negative().unwrap_or(0);
    problems(
        [
            sharded_is(s, "GSI1PK", "PET", id, Listed::Pet),
            sharded_is(
                s,
                "GSI2PK",
                &format!("PET#STATUS#{status}"),
                id,
                Listed::Pet,
            ),
            s.attribute_is("GSI3PK", Some(&format!("PET#CATEGORY#{category}"))),
            s.attribute_is("GSI4PK", None),
            // The inventory entry is on the item holding the stock.
            s.attribute_is("GSI5PK", s.holds_stock().then(|| s.pk())),
        ]
        .into_iter()
        .flatten()
        .collect(),
    )
}

fn order_index_keys(s: &Scanned) -> Option<String> {
    let (Kind::Order, Some(id)) = (s.kind, s.id()) else {
        return None;
    };
    let complete = match s.item.get("complete") {
        Some(aws_sdk_dynamodb::types::AttributeValue::Bool(b)) => b.to_string(),
        _ => "?".to_string(),
    };
    let pet = s.whole("petId").non_negative().unwrap_or(0);
    let owner = s.whole("ownerId").non_negative();
    let owner_list = owner.map(|o| format!("ORDER#OWNER#{o}"));
    let completion_list = format!("ORDER#COMPLETE#{complete}");
    problems(
        [
            sharded_is(s, "GSI1PK", "ORDER", id, Listed::Order),
            sharded_is(s, "GSI2PK", &completion_list, id, Listed::Order),
            s.attribute_is("GSI3PK", Some(&format!("ORDER#PET#{pet}"))),
            s.attribute_is("GSI4PK", owner_list.as_deref()),
            s.attribute_is("GSI5PK", None),
        ]
        .into_iter()
        .flatten()
        .collect(),
    )
}

fn category_index_keys(s: &Scanned) -> Option<String> {
    let (Kind::Category, Some(id)) = (s.kind, s.id()) else {
        return None;
    };
    let mut found = vec![sharded_is(s, "GSI1PK", "CATEGORY", id, Listed::Category)];
    found.extend(["GSI2PK", "GSI3PK", "GSI4PK", "GSI5PK"].map(|g| s.attribute_is(g, None)));
    problems(found.into_iter().flatten().collect())
}

fn unlisted_kinds(s: &Scanned) -> Option<String> {
    let in_key_list = match s.kind {
        Kind::NameClaim | Kind::Idempotency | Kind::Holds | Kind::Migration => None,
        Kind::WebhookCount | Kind::DeliverySlot | Kind::WebhookSubscriptions => None,
        // A short-lived key (the pre-traffic check's, with an expiresAt) is in none.
        Kind::ApiKey => (s.whole("expiresAt") == Whole::Absent).then_some("APIKEY"),
        _ => return None,
    };
    let mut found = vec![s.attribute_is("GSI1PK", in_key_list)];
    found.extend(["GSI2PK", "GSI3PK", "GSI4PK", "GSI5PK"].map(|g| s.attribute_is(g, None)));
    if s.kind == Kind::ApiKey && s.id().is_none() {
        found.push(Some("an API key without a whole-number id".to_string()));
    }
    problems(found.into_iter().flatten().collect())
}

fn complete_order_shipped(s: &Scanned) -> Option<String> {
    let complete = matches!(
        s.item.get("complete"),
        Some(aws_sdk_dynamodb::types::AttributeValue::Bool(true))
    );
    (s.kind == Kind::Order && complete && s.text("shipDate").is_none())
        .then(|| "complete without a shipDate".to_string())
}

fn idempotency_record_expires(s: &Scanned) -> Option<String> {
    (s.kind == Kind::Idempotency).then(|| s.expiry_problem())?
}

fn open_orders_counted(g: &Gathered) -> Vec<Finding> {
    let mut found = Vec::new();
    for (pet, holder, counted) in g.open_order_counts() {
        let open = g.open_orders.get(&pet).map_or(0, Vec::len) as i128;
        if let Whole::Value(counted) = counted {
            if *counted != open {
                let problem =
                    format!("openOrders is {counted}, but {open} incomplete orders name it");
                found.push(Finding::new(
                    format!("PET#{pet}"),
                    holder,
                    "open-orders-counted",
                    problem,
                ));
            }
        }
    }
    found
}

fn open_order_pet_known(g: &Gathered) -> Vec<Finding> {
    let mut found = Vec::new();
    for (pet, orders) in &g.open_orders {
        if !g.pets.contains_key(pet) {
            for order in orders {
                let problem = format!("incomplete, for pet {pet}, which does not exist");
                found.push(Gathered::order_finding(
                    *order,
                    "open-order-pet-known",
                    problem,
                ));
            }
        }
    }
    found
}

fn pet_category_known(g: &Gathered) -> Vec<Finding> {
    let mut found = Vec::new();
    for (pet, facts) in &g.pets {
        if let Some(category) = facts.category {
            if !g.categories.contains_key(&category) {
                let problem = format!("category {category} does not exist");
                found.push(Gathered::pet_finding(*pet, "pet-category-known", problem));
            }
        }
    }
    found
}

fn category_pet_count(g: &Gathered) -> Vec<Finding> {
    let mut found = Vec::new();
    for (category, facts) in &g.categories {
        let pets = g.pets_in.get(category).copied().unwrap_or(0) as i128;
        let counted = match &facts.pet_count {
            Whole::Value(v) => *v,
            Whole::Absent => 0,
            Whole::Not(_) => -1,
        };
        if counted != pets {
            let problem = format!(
                "petCount is {:?}, but {pets} pets are in it",
                facts.pet_count
            );
            found.push(Gathered::category_finding(
                *category,
                "category-pet-count",
                problem,
            ));
        }
    }
    found
}

fn category_name_claimed(g: &Gathered) -> Vec<Finding> {
    let mut found = Vec::new();
    for (category, facts) in &g.categories {
        let Some(folded) = &facts.folded_name else {
            continue;
        };
        let problem = match g.claims.get(folded) {
            Some(Some(owner)) if owner == category => continue,
            Some(Some(owner)) => format!("its name `{folded}` is claimed by category {owner}"),
            Some(None) => format!("the claim of `{folded}` names no category"),
            None => format!("its name `{folded}` has no claim item"),
        };
        found.push(Gathered::category_finding(
            *category,
            "category-name-claimed",
            problem,
        ));
    }
    found
}

fn name_claim_current(g: &Gathered) -> Vec<Finding> {
    let mut found = Vec::new();
    for (folded, owner) in &g.claims {
        let problem = match owner.map(|id| (id, g.categories.get(&id))) {
            None => "no whole-number categoryId".to_string(),
            Some((id, None)) => format!("names category {id}, which does not exist"),
            Some((id, Some(c))) if c.folded_name.as_deref() != Some(folded) => {
                format!("names category {id}, whose name is {:?}", c.folded_name)
            }
            Some(_) => continue,
        };
        let pk = format!("CATEGORYNAME#{folded}");
        found.push(Finding::new(
            pk,
            "CATEGORYNAME",
            "name-claim-current",
            problem,
        ));
    }
    found
}

fn api_key_id_unique(g: &Gathered) -> Vec<Finding> {
    let mut found = Vec::new();
    for (id, items) in &g.key_ids {
        if items.len() > 1 {
            for pk in items {
                let problem = format!("key id {id} is also on {} other item(s)", items.len() - 1);
                found.push(Finding::new(
                    pk.clone(),
                    "APIKEY",
                    "api-key-id-unique",
                    problem,
                ));
            }
        }
    }
    found
}

fn holds_counted(g: &Gathered) -> Vec<Finding> {
    let owners: std::collections::BTreeSet<u64> =
        g.holds.keys().chain(g.held_by.keys()).copied().collect();
    owners
        .into_iter()
        .filter_map(|owner| {
            let held = i128::from(g.held_by.get(&owner).copied().unwrap_or(0));
            let mut problems = Vec::new();
            match g.holds.get(&owner) {
                Some(Whole::Value(counted)) if *counted == held => {}
                Some(Whole::Value(counted)) => problems.push(format!(
                    "openOrders is {counted}, but {held} incomplete orders of the key hold"
                )),
                Some(Whole::Absent) | None if held == 0 => {}
                Some(Whole::Absent) | None => problems.push(format!(
                    "no count, but {held} incomplete orders of the key hold"
                )),
                Some(Whole::Not(why)) => problems.push(why.clone()),
            }
            if let Some(uncounted) = g.uncounted_by.get(&owner) {
                problems.push(format!(
                    "{uncounted} of its incomplete orders have no lapsesAt (placed before holds \
                     were counted: migration 0001's holds backfill has not reached them)"
                ));
            }
            let problem = (!problems.is_empty()).then(|| problems.join("; "))?;
            Some(Finding::new(
                format!("HOLDS#{owner}"),
                "HOLDS",
                "holds-counted",
                problem,
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::INVARIANTS;
    use std::collections::HashSet;

    #[test]
    fn names_are_unique_and_kebab_case() {
        let mut seen = HashSet::new();
        for invariant in INVARIANTS {
            assert!(seen.insert(invariant.name), "{} twice", invariant.name);
            assert!(invariant
                .name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'));
        }
    }
}
