//! The facts the table invariants need across items, gathered as the scan
//! passes each one: a few numbers per pet, category, claim, key and webhook
//! owner, and the ids of the incomplete orders (not the items: 10 million of
//! them would not fit in memory).

use super::item::{Finding, Kind, Scanned, Whole};
use aws_sdk_dynamodb::types::AttributeValue;
use petstore::records::Name;
use std::collections::HashMap;

/// What a table invariant knows of a pet, from its pet item.
#[derive(Debug)]
pub struct PetFacts {
    pub category: Option<u64>,
    pub status: Option<String>,
    /// Whether the pet item holds the stock (written before stock items).
    pub holds_stock: bool,
    /// Its `openOrders`, if it holds the stock.
    pub open_orders: Whole,
}

/// What a table invariant knows of a pet's stock item.
#[derive(Debug)]
pub struct StockFacts {
    pub status: Option<String>,
    pub open_orders: Whole,
}

/// What a table invariant knows of a category.
#[derive(Debug)]
pub struct CategoryFacts {
    /// Its name as names are compared (`Name::folded`), when it has a valid one.
    pub folded_name: Option<String>,
    pub pet_count: Whole,
}

#[derive(Debug, Default)]
pub struct Gathered {
    pub pets: HashMap<u64, PetFacts>,
    /// Each stock item, by the pet id its key names.
    pub stock_items: HashMap<u64, StockFacts>,
    /// The incomplete orders naming each pet id.
    pub open_orders: HashMap<u64, Vec<u64>>,
    pub categories: HashMap<u64, CategoryFacts>,
    /// How many pets name each category id.
    pub pets_in: HashMap<u64, u64>,
    /// Each name claim's folded name, and the category id it names.
    pub claims: HashMap<String, Option<u64>>,
    /// Each API key id, and the PKs of the items holding it.
    pub key_ids: HashMap<u64, Vec<String>>,
    /// Each key identity's stored count of held orders (`HOLDS#<keyId>`).
    pub holds: HashMap<u64, Whole>,
    /// The incomplete orders of each key identity (the ones its count holds).
    pub held_by: HashMap<u64, u64>,
    /// Of those, the ones without a lapse time: placed before holds were
    /// counted, and not given theirs by migration 0001's holds backfill.
    pub uncounted_by: HashMap<u64, u64>,
    /// Each key identity's stored count of webhook endpoints
    /// (`WEBHOOKOWNER#<ownerId>`, `endpoints`).
    pub webhook_counts: HashMap<u64, Whole>,
    /// How many webhook endpoints each key identity owns.
    pub endpoints_of: HashMap<u64, u64>,
}

impl Gathered {
    /// Takes what the table invariants need from one item.
    pub fn add(&mut self, s: &Scanned) {
        match s.kind {
            Kind::Pet => self.add_pet(s),
            Kind::Stock => {
                if let Some(pet) = s.pk_number("PET#") {
                    let facts = StockFacts {
                        status: s.text("status").map(str::to_string),
                        open_orders: s.whole("openOrders"),
                    };
                    self.stock_items.insert(pet, facts);
                }
            }
            Kind::Order => self.add_order(s),
            Kind::Category => self.add_category(s),
            Kind::NameClaim => {
                let folded = s.pk().trim_start_matches("CATEGORYNAME#").to_string();
                self.claims
                    .insert(folded, s.whole("categoryId").non_negative());
            }
            Kind::ApiKey => {
                // A retiring secret's item (a pointer to its key's live item,
                // `successor`) shares the key's id by design.
                if let (Some(id), false) = (s.id(), s.item.contains_key("successor")) {
                    let pk = s.pk().to_string();
                    self.key_ids.entry(id).or_default().push(pk);
                }
            }
            Kind::Holds => {
                let owner = s.pk().trim_start_matches("HOLDS#").parse::<u64>();
                if let Ok(owner) = owner {
                    self.holds.insert(owner, s.whole("openOrders"));
                }
            }
            Kind::WebhookEndpoint => {
                if let Some(owner) = s.whole("ownerId").non_negative() {
                    *self.endpoints_of.entry(owner).or_default() += 1;
                }
            }
            Kind::WebhookCount => {
                if let Some(owner) = s.pk_number("WEBHOOKOWNER#") {
                    self.webhook_counts.insert(owner, s.whole("endpoints"));
                }
            }
            Kind::Idempotency
            | Kind::Migration
            | Kind::WebhookDelivery
            | Kind::DeliverySlot
            | Kind::WebhookSubscriptions
            | Kind::Unknown => {}
        }
    }

    fn add_pet(&mut self, s: &Scanned) {
        let Some(id) = s.id() else { return };
        let category = s.whole("categoryId").non_negative();
        if let Some(category) = category {
            *self.pets_in.entry(category).or_default() += 1;
        }
        let holds_stock = s.holds_stock();
        self.pets.insert(
            id,
            PetFacts {
                category,
                status: s.text("status").map(str::to_string),
                holds_stock,
                open_orders: s.whole("openOrders"),
            },
        );
    }

    /// Each pet's open-order counts, from whichever item holds them (both,
    /// when both do: `stock-held-once` reports that): the pet id, the
    /// holder's SK and its count.
    pub fn open_order_counts(&self) -> impl Iterator<Item = (u64, &'static str, &Whole)> {
        let on_pets = self
            .pets
            .iter()
            .filter(|(_, facts)| facts.holds_stock)
            .map(|(pet, facts)| (*pet, "PET", &facts.open_orders));
        let on_stock = self
            .stock_items
            .iter()
            .map(|(pet, facts)| (*pet, "STOCK", &facts.open_orders));
        on_pets.chain(on_stock)
    }

    fn add_order(&mut self, s: &Scanned) {
        let (Some(id), Some(pet)) = (s.id(), s.whole("petId").non_negative()) else {
            return;
        };
        if !matches!(s.item.get("complete"), Some(AttributeValue::Bool(true))) {
            self.open_orders.entry(pet).or_default().push(id);
            if let Some(owner) = s.whole("ownerId").non_negative() {
                *self.held_by.entry(owner).or_default() += 1;
                if s.text("lapsesAt").is_none() {
                    *self.uncounted_by.entry(owner).or_default() += 1;
                }
            }
        }
    }

    fn add_category(&mut self, s: &Scanned) {
        let Some(id) = s.id() else { return };
        let folded_name = s
            .text("name")
            .and_then(|raw| Name::parse(raw, "name").ok())
            .map(|name| name.folded());
        self.categories.insert(
            id,
            CategoryFacts {
                folded_name,
                pet_count: s.whole("petCount"),
            },
        );
    }

    pub fn pet_finding(id: u64, invariant: &'static str, problem: String) -> Finding {
        Finding::new(format!("PET#{id}"), "PET", invariant, problem)
    }

    pub fn stock_finding(id: u64, invariant: &'static str, problem: String) -> Finding {
        Finding::new(format!("PET#{id}"), "STOCK", invariant, problem)
    }

    pub fn order_finding(id: u64, invariant: &'static str, problem: String) -> Finding {
        Finding::new(format!("ORDER#{id}"), "ORDER", invariant, problem)
    }

    pub fn category_finding(id: u64, invariant: &'static str, problem: String) -> Finding {
        Finding::new(format!("CATEGORY#{id}"), "CATEGORY", invariant, problem)
    }
}
