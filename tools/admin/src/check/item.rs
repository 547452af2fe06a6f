//! One scanned item as the invariants read it: its kind, and its attributes.

use aws_sdk_dynamodb::types::AttributeValue;
use petstore::db::shards::{shard_of, Shards};
use petstore::db::Item;
use serde::Serialize;

/// What an item is, by its sort key (`db/mod.rs`'s table of records).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A pet item (`PET#<id>`, `PET`): the record, with its stock and open
    /// orders when it has no stock item (written by release 1.0.0 or under
    /// layout 1).
    Pet,
    /// A pet's stock item (`PET#<id>`, `STOCK`): its stock, open orders, a
    /// copy of its status and its inventory index entry.
    Stock,
    Order,
    Category,
    NameClaim,
    ApiKey,
    Idempotency,
    /// A key identity's count of held (incomplete, lapsing) orders.
    Holds,
    /// A migration's backfill progress (`SK` `BACKFILL#<name>`).
    Migration,
    /// A webhook endpoint (`WEBHOOK#<id>`, `ENDPOINT`), holding its secrets.
    WebhookEndpoint,
    /// A key identity's count of its webhook endpoints
    /// (`WEBHOOKOWNER#<ownerId>`, `WEBHOOKS`): its plan's cap, made exact.
    WebhookCount,
    /// One event's delivery to one endpoint (`WEBHOOK#<id>#<shard>`, `DELIVERY#<eventId>`).
    WebhookDelivery,
    /// A lease on one of an endpoint's attempts in flight (`WEBHOOK#<id>`, `SLOT#<n>`).
    DeliverySlot,
    /// The webhook subscriptions' version (`WEBHOOK#SUBSCRIPTIONS`,
    /// `SUBSCRIPTIONS`): a count of changes, in no index.
    WebhookSubscriptions,
    Unknown,
}

impl Kind {
    /// The kind an item with sort key `sk` is.
    pub fn of_sk(sk: &str) -> Kind {
        match sk {
            "PET" => Kind::Pet,
            "STOCK" => Kind::Stock,
            "ORDER" => Kind::Order,
            "CATEGORY" => Kind::Category,
            "CATEGORYNAME" => Kind::NameClaim,
            "APIKEY" => Kind::ApiKey,
            "IDEMPOTENCY" => Kind::Idempotency,
            "HOLDS" => Kind::Holds,
            "ENDPOINT" => Kind::WebhookEndpoint,
            "WEBHOOKS" => Kind::WebhookCount,
            "SUBSCRIPTIONS" => Kind::WebhookSubscriptions,
            _ if sk.starts_with("BACKFILL#") => Kind::Migration,
            _ if sk.starts_with("DELIVERY#") => Kind::WebhookDelivery,
            _ if sk.starts_with("SLOT#") => Kind::DeliverySlot,
            _ => Kind::Unknown,
        }
    }

    /// What every partition key of this kind starts with.
    pub fn pk_prefix(self) -> Option<&'static str> {
        match self {
            Kind::Pet | Kind::Stock => Some("PET#"),
            Kind::Order => Some("ORDER#"),
            Kind::Category => Some("CATEGORY#"),
            Kind::NameClaim => Some("CATEGORYNAME#"),
            Kind::ApiKey => Some("APIKEY#"),
            Kind::Idempotency => Some("IDEMPOTENCY#"),
            Kind::Holds => Some("HOLDS#"),
            Kind::Migration => Some("MIGRATION#"),
            Kind::WebhookEndpoint
            | Kind::WebhookDelivery
            | Kind::DeliverySlot
            | Kind::WebhookSubscriptions => Some("WEBHOOK#"),
            Kind::WebhookCount => Some("WEBHOOKOWNER#"),
            Kind::Unknown => None,
        }
    }
}

/// A broken invariant: the item's key, the invariant's name, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    #[serde(rename = "PK")]
    pub pk: String,
    #[serde(rename = "SK")]
    pub sk: String,
    pub invariant: &'static str,
    pub problem: String,
}

impl Finding {
    pub fn new(pk: String, sk: &str, invariant: &'static str, problem: String) -> Finding {
        Finding {
            pk,
            sk: sk.to_string(),
            invariant,
            problem,
        }
    }
}

/// One item of the table, as the item invariants see it.
pub struct Scanned<'a> {
    pub item: &'a Item,
    pub kind: Kind,
    /// The stage's shard counts: an index key's shard is one of them.
    pub shards: Shards,
}

impl<'a> Scanned<'a> {
    pub fn new(item: &'a Item, shards: Shards) -> Scanned<'a> {
        let kind = Kind::of_sk(text(item, "SK").unwrap_or_default());
        Scanned { item, kind, shards }
    }

    pub fn pk(&self) -> &str {
        text(self.item, "PK").unwrap_or_default()
    }

    pub fn sk(&self) -> &str {
        text(self.item, "SK").unwrap_or_default()
    }

    pub fn text(&self, name: &str) -> Option<&'a str> {
        text(self.item, name)
    }

    pub fn whole(&self, name: &str) -> Whole {
        whole(self.item, name)
    }

    /// The record's `id`, when it is a whole number.
    pub fn id(&self) -> Option<u64> {
        self.whole("id").non_negative()
    }

    /// The number its PK names after `prefix` (`WEBHOOK#<id>`), if it names one.
    pub fn pk_number(&self, prefix: &str) -> Option<u64> {
        self.pk().strip_prefix(prefix)?.parse().ok()
    }

    /// Why the item never expires, if it does not: its `expiresAt`, the
    /// table's TTL attribute, is missing or no number.
    pub fn expiry_problem(&self) -> Option<String> {
        match self.whole("expiresAt") {
            Whole::Value(_) => None,
            Whole::Absent => Some("no expiresAt: TTL never deletes it".to_string()),
            Whole::Not(why) => Some(why),
        }
    }

    /// Whether this pet item holds its pet's stock, as release 1.0.0 wrote
    /// pets (and this code under layout 1): it has `stock` or `openOrders`.
    /// A pet item without either has its stock on its stock item.
    pub fn holds_stock(&self) -> bool {
        self.kind == Kind::Pet
            && (self.item.contains_key("stock") || self.item.contains_key("openOrders"))
    }

    /// `name` is `expected` (`None`: absent), or the problem.
    pub fn attribute_is(&self, name: &str, expected: Option<&str>) -> Option<String> {
        let actual = self.text(name);
        (actual != expected).then(|| match expected {
            Some(e) => format!("{name} is {actual:?}, should be {e}"),
            None => format!("{name} is {actual:?}, should be absent"),
        })
    }
}

/// Problems joined into one, or none.
pub fn problems(list: Vec<String>) -> Option<String> {
    (!list.is_empty()).then(|| list.join("; "))
}

/// A string attribute, if the item has one by that name.
pub fn text<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    match item.get(name) {
        Some(AttributeValue::S(value)) => Some(value),
        _ => None,
    }
}

/// A numeric attribute as a whole number, or why it is not one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Whole {
    Absent,
    Value(i128),
    Not(String),
}

impl Whole {
    pub fn non_negative(&self) -> Option<u64> {
        match self {
            Whole::Value(v) => u64::try_from(*v).ok(),
            _ => None,
        }
    }
}

pub fn whole(item: &Item, name: &str) -> Whole {
    match item.get(name) {
        None => Whole::Absent,
        Some(AttributeValue::N(raw)) => match raw.parse::<i128>() {
            Ok(value) => Whole::Value(value),
            Err(_) => Whole::Not(format!("{name} is {raw}, not a whole number")),
        },
        Some(other) => Whole::Not(format!("{name} is {other:?}, not a number")),
    }
}

/// Whether `actual` is the key of record `id` in the sharded list `list`
/// under some shard count up to the stage's `count`: a count may be raised
/// at any time, and entries written under a smaller one stay where they are.
pub fn in_some_shard(actual: Option<&str>, list: &str, id: u64, count: u16) -> bool {
    let Some(shard) = actual
        .and_then(|a| a.strip_prefix(list))
        .and_then(|rest| rest.strip_prefix('#'))
        .and_then(|s| s.parse::<u16>().ok())
    else {
        return false;
    };
    (1..=count.max(1)).any(|c| shard_of(id, c) == shard)
}
