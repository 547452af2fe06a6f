//! The invariants of a pet's stock (its stock item, `PET#<id>` / `STOCK`,
//! or, for a pet written before stock items, its pet item's `stock` and
//! `openOrders`; see `shared/src/db/pets/stock.rs`), listed in
//! [`super::invariants::INVARIANTS`] beside the others.

use super::gathered::Gathered;
use super::item::{problems, Finding, Kind, Scanned, Whole};

/// A counter of a pet that must be a whole number, never below 0, on the
/// item that holds it: its stock item, or a pet item that still holds its
/// stock (it has `stock` or `openOrders`; a pet item without either has a
/// stock item, which `stock-held-once` sees).
fn counter_of_pet(s: &Scanned, name: &str) -> Option<String> {
    let holds = match s.kind {
        Kind::Stock => true,
        Kind::Pet => s.holds_stock(),
        _ => false,
    };
    if !holds {
        return None;
    }
    match s.whole(name) {
        Whole::Value(v) if v >= 0 => None,
        Whole::Value(v) => Some(format!("{name} is {v}, below 0")),
        Whole::Absent => Some(format!("{name} is missing")),
        Whole::Not(why) => Some(why),
    }
}

pub(super) fn stock_not_negative(s: &Scanned) -> Option<String> {
    counter_of_pet(s, "stock")
}

pub(super) fn open_orders_not_negative(s: &Scanned) -> Option<String> {
    counter_of_pet(s, "openOrders")
}

pub(super) fn stock_item_keys(s: &Scanned) -> Option<String> {
    if s.kind != Kind::Stock {
        return None;
    }
    let mut found = vec![s.attribute_is("GSI5PK", Some(s.pk()))];
    found.extend(["GSI1PK", "GSI2PK", "GSI3PK", "GSI4PK"].map(|g| s.attribute_is(g, None)));
    problems(found.into_iter().flatten().collect())
}

pub(super) fn stock_held_once(g: &Gathered) -> Vec<Finding> {
    let mut found = Vec::new();
    for (pet, facts) in &g.pets {
        let problem = match (facts.holds_stock, g.stock_items.contains_key(pet)) {
            (true, true) => "both its pet item and its stock item hold its stock",
            (false, false) => "neither a stock item nor stock on its pet item",
            _ => continue,
        };
        found.push(Gathered::pet_finding(
            *pet,
            "stock-held-once",
            problem.to_string(),
        ));
    }
    found
}

pub(super) fn stock_item_pet_known(g: &Gathered) -> Vec<Finding> {
    g.stock_items
        .keys()
        .filter(|pet| !g.pets.contains_key(pet))
        .map(|pet| {
            let problem = format!("a stock item of pet {pet}, which has no pet item");
            Gathered::stock_finding(*pet, "stock-item-pet-known", problem)
        })
        .collect()
}

pub(super) fn stock_item_status(g: &Gathered) -> Vec<Finding> {
    let mut found = Vec::new();
    for (pet, stock) in &g.stock_items {
        let Some(facts) = g.pets.get(pet) else {
            continue;
        };
        if stock.status != facts.status {
            let problem = format!(
                "status is {:?}, its pet item's {:?}",
                stock.status, facts.status
            );
            found.push(Gathered::stock_finding(*pet, "stock-item-status", problem));
        }
    }
    found
}
