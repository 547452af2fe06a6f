//! A key's item in the data table, as `serde_dynamo` writes and reads it.

use super::short_lived;
use super::{ApiKeyHash, ApiKeyRecord};
use crate::db::expr::Expr;
use crate::db::{from_item, s, to_item, DbError, Item};
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
    })
}

/// The key an item stores, and the hash it is stored under; a short-lived
/// key as harmless as short_lived.rs makes it, whatever the item says.
pub(super) fn record_of(item: Item) -> Result<(ApiKeyHash, ApiKeyRecord), DbError> {
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
    };
    Ok((
        hash,
        if short {
            short_lived::harmless(record)
        } else {
            record
        },
    ))
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
    let mut expr = expr.exists().when_as_read(
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
    use crate::db::n;

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
