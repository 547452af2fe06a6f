//! A key's item in the data table, as `serde_dynamo` writes and reads it.

use super::retiring::Retiring;
use super::short_lived;
use super::{ApiKeyHash, ApiKeyRecord};
use crate::db::expr::Expr;
use crate::db::{from_item, n, s, to_item, DbError, Item};
use crate::ratelimit::plan::Plan;
use crate::ratelimit::window::Limits;
use crate::records::{Id, Role};
use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};

const PK_PREFIX: &str = "APIKEY#";
pub(super) const SK: &str = "APIKEY";
/// GSI1's partition for keys: every key, in id order.
pub(super) const PARTITION: &str = "APIKEY";

/// The attributes of a key item that an update changes.
pub(super) const CHANGED: [&str; 6] = [
    "plan",
    "role",
    "perMinute",
    "perDay",
    "maxOpenOrders",
    "maxWebhooks",
];

/// The table key of the key with this hash.
pub(super) fn key_of(hash: &ApiKeyHash) -> Item {
    Item::from([
        ("PK".to_string(), s(pk_of(hash))),
        ("SK".to_string(), s(SK)),
    ])
}

pub(super) fn pk_of(hash: &ApiKeyHash) -> String {
    format!("{PK_PREFIX}{}", hash.as_str())
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KeyItem {
    #[serde(rename = "PK")]
    pk: String,
    #[serde(rename = "SK")]
    sk: String,
    /// Absent on short-lived keys: they are in no key list.
    #[serde(rename = "GSI1PK", default, skip_serializing_if = "Option::is_none")]
    gsi1pk: Option<String>,
    id: Id,
    plan: Plan,
    /// Absent on keys created before roles and on short-lived keys: those
    /// are customers'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    role: Option<Role>,
    /// Enterprise only: the other plans' limits are the plan's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    per_minute: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    per_day: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default)]
    created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rotated_at: Option<String>,
    #[serde(default)]
    revoked: bool,
    /// Enterprise only: the most incomplete orders the key may hold at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_open_orders: Option<u32>,
    /// Short-lived keys only: the table's TTL attribute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at: Option<i64>,
    /// Enterprise only: the most webhook endpoints the key may have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_webhooks: Option<u32>,
    /// The hash of the secret this key is retiring (retiring.rs), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    retiring: Option<String>,
    /// Until when (Unix seconds) the `retiring` secret works.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    retiring_until: Option<i64>,
}

/// A retiring secret's item: a pointer to its key's live item (retiring.rs).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RetiringItem {
    #[serde(rename = "PK")]
    pk: String,
    #[serde(rename = "SK")]
    sk: String,
    /// The key identity, for whoever reads the table.
    id: Id,
    /// The hash of the key's live secret.
    successor: String,
    /// The table's TTL attribute: the live item's `retiringUntil`.
    expires_at: i64,
}

/// The attribute only a retiring secret's item has.
const SUCCESSOR: &str = "successor";

/// What an item under `APIKEY#<hash>` holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Stored {
    /// A key's live secret: the key identity's state, and the secret it is
    /// retiring, if any.
    Live(Live),
    /// A secret a rotation kept for a while: the key's state is the live
    /// item's under `successor`, while that one names it back.
    Retiring { successor: ApiKeyHash },
}

/// A key's live item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Live {
    pub hash: ApiKeyHash,
    pub record: ApiKeyRecord,
    pub retiring: Option<Retiring>,
}

/// The item that stores `record` under `hash`.
pub(super) fn item_of(hash: &ApiKeyHash, record: &ApiKeyRecord) -> Result<Item, DbError> {
    let own_limits = record.plan == Plan::Enterprise;
    // A short-lived key is a customer's in no list: its item carries only
    // what the pre-traffic hook's IAM allows (template.yaml), and the
    // identity every such key acts as (short_lived.rs).
    let listed = record.expires_at.is_none();
    to_item(&KeyItem {
        pk: pk_of(hash),
        sk: SK.to_string(),
        gsi1pk: listed.then(|| PARTITION.to_string()),
        id: if listed {
            record.id
        } else {
            Id::clamped(short_lived::IDENTITY)
        },
        plan: record.plan,
        role: listed.then_some(record.role),
        per_minute: own_limits.then_some(record.per_minute),
        per_day: own_limits.then_some(record.per_day),
        name: record.name.clone(),
        created_at: record.created_at.clone(),
        rotated_at: record.rotated_at.clone(),
        revoked: record.revoked,
        max_open_orders: record.max_open_orders.filter(|_| own_limits),
        expires_at: record.expires_at,
        max_webhooks: record.max_webhooks.filter(|_| own_limits),
        retiring: None,
        retiring_until: None,
    })
}

/// The live item that stores `record` under `hash`, retiring `retiring`.
pub(super) fn live_item_of(
    hash: &ApiKeyHash,
    record: &ApiKeyRecord,
    retiring: Option<&Retiring>,
) -> Result<Item, DbError> {
    let mut item = item_of(hash, record)?;
    if let Some(retiring) = retiring {
        item.insert("retiring".to_string(), s(retiring.hash.as_str()));
        item.insert("retiringUntil".to_string(), n(retiring.until));
    }
    Ok(item)
}

/// The item of `retiring`, the old secret of key `id`, whose live secret
/// is `successor`.
pub(super) fn retiring_item_of(
    retiring: &Retiring,
    id: Id,
    successor: &ApiKeyHash,
) -> Result<Item, DbError> {
    to_item(&RetiringItem {
        pk: pk_of(&retiring.hash),
        sk: SK.to_string(),
        id,
        successor: successor.as_str().to_string(),
        expires_at: retiring.until,
    })
}

/// What an item holds: a retiring secret's pointer (by its `successor`,
/// which nothing else writes), or else a key.
pub(super) fn stored_of(item: Item) -> Result<Stored, DbError> {
    if item.contains_key(SUCCESSOR) {
        let item: RetiringItem = from_item(item)?;
        return Ok(Stored::Retiring {
            successor: ApiKeyHash(item.successor),
        });
    }
    let (hash, record, retiring) = parsed(item)?;
    Ok(Stored::Live(Live {
        hash,
        record,
        retiring,
    }))
}

/// The key an item stores, and the hash it is stored under; a short-lived
/// key as harmless as short_lived.rs makes it, whatever the item says. (The
/// store reads items with [`stored_of`]; the tests read keys' items so.)
#[cfg(test)]
pub(super) fn record_of(item: Item) -> Result<(ApiKeyHash, ApiKeyRecord), DbError> {
    parsed(item).map(|(hash, record, _)| (hash, record))
}

/// The key an item stores, the hash it is stored under and the secret it
/// is retiring; a short-lived key as harmless as short_lived.rs makes it,
/// whatever the item says.
fn parsed(item: Item) -> Result<(ApiKeyHash, ApiKeyRecord, Option<Retiring>), DbError> {
    let item: KeyItem = from_item(item)?;
    let short = short_lived::is_short_lived(item.gsi1pk.is_some(), item.expires_at);
    let broken = |what: &str| DbError::internal(format!("stored API key has no valid {what}"));
    let hash = item
        .pk
        .strip_prefix(PK_PREFIX)
        .map(|h| ApiKeyHash(h.to_string()))
        .ok_or_else(|| broken("PK"))?;
    let limits = match (item.plan.limits(), item.per_minute, item.per_day) {
        _ if short => Limits::FREE,
        (Some(limits), _, _) => limits,
        (None, Some(minute), Some(day)) => {
            Limits::enterprise(minute, day).ok_or_else(|| broken("limits"))?
        }
        (None, _, _) => return Err(broken("perMinute and perDay")),
    };
    let record = ApiKeyRecord {
        id: item.id,
        plan: item.plan,
        role: item.role.unwrap_or_default(),
        per_minute: limits.per_minute,
        per_day: limits.per_day,
        name: item.name,
        created_at: item.created_at,
        rotated_at: item.rotated_at,
        revoked: item.revoked,
        max_open_orders: item.max_open_orders,
        expires_at: item.expires_at,
        max_webhooks: item.max_webhooks,
        retires_at: None,
    };
    if short {
        // A short-lived key retires nothing: only the admin tool's rotation
        // writes `retiring`, on a listed key.
        return Ok((hash, short_lived::harmless(record), None));
    }
    let retiring = item
        .retiring
        .zip(item.retiring_until)
        .map(|(hash, until)| Retiring {
            hash: ApiKeyHash(hash),
            until,
        });
    Ok((hash, record, retiring))
}

/// `expr` conditioned on the key item under `hash` holding `record`'s
/// plan, role and limits, and being live.
pub(super) fn as_read(
    expr: Expr,
    hash: &ApiKeyHash,
    record: &ApiKeyRecord,
) -> Result<Expr, DbError> {
    let item = item_of(hash, record)?;
    // Keys made before roles have none: a customer's.
    let customer = s(Role::Customer.as_str());
    let mut expr = expr
        .exists()
        // A key's live item, not a retiring secret's pointer.
        .when_as_read(SUCCESSOR, None, None)
        .when_as_read(
            "revoked",
            Some(AttributeValue::Bool(false)),
            Some(&AttributeValue::Bool(false)),
        );
    for attribute in CHANGED {
        let absent_means = (attribute == "role").then_some(&customer);
        expr = expr.when_as_read(attribute, item.get(attribute).cloned(), absent_means);
    }
    Ok(expr)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(plan: Plan, limits: Limits, role: Role) -> ApiKeyRecord {
        ApiKeyRecord {
            id: Id::clamped(42),
            plan,
            role,
            per_minute: limits.per_minute,
            per_day: limits.per_day,
            name: Some("ci".into()),
            created_at: "2030-01-01T00:00:00Z".into(),
            rotated_at: Some("2030-01-02T00:00:00Z".into()),
            revoked: false,
            max_open_orders: (plan == Plan::Enterprise).then_some(5_000),
            expires_at: None,
            max_webhooks: (plan == Plan::Enterprise).then_some(50),
            retires_at: None,
        }
    }

    #[test]
    fn a_key_round_trips_through_its_item() -> Result<(), DbError> {
        let hash = ApiKeyHash::of("psk_x");
        for record in [
            record(Plan::Pro, Limits::new(300, 10_000), Role::Staff),
            record(Plan::Enterprise, Limits::new(7, 70), Role::Customer),
        ] {
            let item = item_of(&hash, &record)?;
            assert_eq!(
                item.contains_key("perMinute"),
                record.plan == Plan::Enterprise
            );
            assert_eq!(record_of(item)?, (hash.clone(), record));
        }
        Ok(())
    }

    #[test]
    fn a_short_lived_key_is_a_customers_in_no_list() -> Result<(), DbError> {
        let hash = ApiKeyHash::of("psk_x");
        let mut short = record(Plan::Free, Limits::new(60, 1_000), Role::Customer);
        (short.max_open_orders, short.rotated_at) = (None, None);
        short.expires_at = Some(1_900_000_000);
        short.id = Id::clamped(short_lived::IDENTITY);
        let item = item_of(&hash, &short)?;
        let mut names: Vec<&str> = item.keys().map(String::as_str).collect();
        names.sort_unstable();
        // Exactly the attributes template.yaml lets the pre-traffic hook write.
        let allowed = [
            "PK",
            "SK",
            "createdAt",
            "expiresAt",
            "id",
            "name",
            "plan",
            "revoked",
        ];
        assert_eq!(names, allowed);
        assert_eq!(record_of(item)?, (hash, short));
        Ok(())
    }

    #[test]
    fn an_item_from_before_roles_reads_as_a_customers() -> Result<(), DbError> {
        // As keys were stored before roles (and as the bench writes one, without `revoked`).
        let item = Item::from([
            ("PK".to_string(), s("APIKEY#stub")),
            ("SK".to_string(), s(SK)),
            ("GSI1PK".to_string(), s(PARTITION)),
            ("id".to_string(), n(1)),
            ("plan".to_string(), s("enterprise")),
            ("perMinute".to_string(), n(5)),
            ("perDay".to_string(), n(50)),
            ("createdAt".to_string(), s("2025-01-01T00:00:00.000Z")),
        ]);
        let (hash, record) = record_of(item)?;
        assert_eq!(hash.as_str(), "stub");
        assert_eq!(
            (record.limits(), record.revoked),
            (Limits::new(5, 50), false)
        );
        Ok(())
    }

    #[test]
    fn an_enterprise_item_without_limits_is_broken() {
        let item = Item::from([
            ("PK".to_string(), s("APIKEY#stub")),
            ("SK".to_string(), s(SK)),
            ("GSI1PK".to_string(), s(PARTITION)),
            ("id".to_string(), n(1)),
            ("plan".to_string(), s("enterprise")),
        ]);
        assert!(record_of(item).is_err());
    }
}
