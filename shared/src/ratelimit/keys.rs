//! API keys: issued once, stored only as SHA-256 hashes, looked up by hash.
//!
//! A key is an item in the data table (not the counter table, so a counter
//! table outage can still serve authenticated requests when `fail_open`):
//!
//! | PK | SK | GSI1PK | id | other attributes |
//! |---|---|---|---|---|
//! | `APIKEY#<sha256 hex of the key>` | `APIKEY` | `APIKEY` | key id (number) | `plan`, `perMinute`/`perDay` (enterprise only), `name`, `createdAt`, `revoked` |
//!
//! A request's look-up is one consistent `GetItem` by hash (cached by the
//! limiter); the admin tool lists keys, and finds one by id, with a `Query` on
//! GSI1 (`GSI1PK = APIKEY`, sort key `id`), never a scan.

use super::window::{Limits, Plan};
use crate::db::{classify, new_id, DbError};
use crate::records::Id;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::HashMap;

const SK: &str = "APIKEY";
const PARTITION: &str = "APIKEY";

/// What every issued key starts with, so a leaked one is recognisable.
const PREFIX: &str = "psk_";

/// The SHA-256 of a key, in lower-case hex: the only form a key is stored in.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ApiKeyHash(String);

impl ApiKeyHash {
    pub fn of(key: &str) -> ApiKeyHash {
        let digest = Sha256::digest(key.as_bytes());
        ApiKeyHash(digest.iter().map(|b| format!("{b:02x}")).collect())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A key as stored, without its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyRecord {
    pub id: u64,
    #[serde(serialize_with = "plan_name")]
    pub plan: Plan,
    pub per_minute: u64,
    pub per_day: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub created_at: String,
    pub revoked: bool,
}

fn plan_name<S: serde::Serializer>(plan: &Plan, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(plan.as_str())
}

impl ApiKeyRecord {
    pub fn limits(&self) -> Limits {
        Limits::new(self.per_minute, self.per_day)
    }
}

/// A freshly created key: the only time its secret exists outside the caller.
#[derive(Debug, Clone, Serialize)]
pub struct IssuedKey {
    #[serde(flatten)]
    pub record: ApiKeyRecord,
    pub key: String,
}

/// Why a key cannot be created as asked.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeyRequestError {
    #[error("an enterprise key needs --per-minute and --per-day, both at least 1")]
    EnterpriseNeedsLimits,
    #[error("only enterprise keys carry their own limits")]
    LimitsOnlyForEnterprise,
}

/// What a new key is to be.
#[derive(Debug, Clone)]
pub struct NewApiKey {
    plan: Plan,
    limits: Limits,
    name: Option<String>,
}

impl NewApiKey {
    /// A key of `plan`; `own_limits` (per minute, per day) are required for
    /// enterprise and refused for the other plans.
    pub fn new(
        plan: Plan,
        own_limits: Option<(u64, u64)>,
        name: Option<String>,
    ) -> Result<NewApiKey, KeyRequestError> {
        let limits = match (plan.limits(), own_limits) {
            (Some(limits), None) => limits,
            (Some(_), Some(_)) => return Err(KeyRequestError::LimitsOnlyForEnterprise),
            (None, Some((minute, day))) => {
                Limits::enterprise(minute, day).ok_or(KeyRequestError::EnterpriseNeedsLimits)?
            }
            (None, None) => return Err(KeyRequestError::EnterpriseNeedsLimits),
        };
        Ok(NewApiKey { plan, limits, name })
    }
}

/// The keys in the data table.
#[derive(Clone, Debug)]
pub struct KeyStore {
    client: Client,
    table: String,
}

fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

fn n(value: impl ToString) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

fn key_of(hash: &ApiKeyHash) -> HashMap<String, AttributeValue> {
    HashMap::from([
        ("PK".to_string(), s(format!("APIKEY#{}", hash.as_str()))),
        ("SK".to_string(), s(SK)),
    ])
}

fn number(item: &HashMap<String, AttributeValue>, name: &str) -> Option<u64> {
    item.get(name)
        .and_then(|v| v.as_n().ok())
        .and_then(|v| v.parse().ok())
}

fn record_from(item: &HashMap<String, AttributeValue>) -> Result<ApiKeyRecord, DbError> {
    let broken = |what: &str| DbError::internal(format!("stored API key has no valid {what}"));
    let plan = item
        .get("plan")
        .and_then(|v| v.as_s().ok())
        .and_then(|p| Plan::parse(p))
        .ok_or_else(|| broken("plan"))?;
    let limits = match plan.limits() {
        Some(limits) => limits,
        None => Limits::enterprise(
            number(item, "perMinute").ok_or_else(|| broken("perMinute"))?,
            number(item, "perDay").ok_or_else(|| broken("perDay"))?,
        )
        .ok_or_else(|| broken("limits"))?,
    };
    Ok(ApiKeyRecord {
        id: number(item, "id").ok_or_else(|| broken("id"))?,
        plan,
        per_minute: limits.per_minute,
        per_day: limits.per_day,
        name: item.get("name").and_then(|v| v.as_s().ok()).cloned(),
        created_at: item
            .get("createdAt")
            .and_then(|v| v.as_s().ok())
            .cloned()
            .unwrap_or_default(),
        revoked: item
            .get("revoked")
            .and_then(|v| v.as_bool().ok())
            .copied()
            .unwrap_or(false),
    })
}

impl KeyStore {
    pub fn new(client: Client, table: impl Into<String>) -> KeyStore {
        KeyStore {
            client,
            table: table.into(),
        }
    }

    /// Issues a key: 256 random bits, returned once, stored as its hash.
    pub async fn create(&self, new: NewApiKey, now: DateTime<Utc>) -> Result<IssuedKey, DbError> {
        let secret = URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>());
        let key = format!("{PREFIX}{secret}");
        let hash = ApiKeyHash::of(&key);
        let record = ApiKeyRecord {
            id: new_id(now).get(),
            plan: new.plan,
            per_minute: new.limits.per_minute,
            per_day: new.limits.per_day,
            name: new.name,
            created_at: now.to_rfc3339_opts(SecondsFormat::Secs, true),
            revoked: false,
        };
        let mut item = key_of(&hash);
        item.insert("GSI1PK".into(), s(PARTITION));
        item.insert("id".into(), n(record.id));
        item.insert("plan".into(), s(record.plan.as_str()));
        if record.plan == Plan::Enterprise {
            item.insert("perMinute".into(), n(record.per_minute));
            item.insert("perDay".into(), n(record.per_day));
        }
        if let Some(name) = &record.name {
            item.insert("name".into(), s(name.clone()));
        }
        item.insert("createdAt".into(), s(record.created_at.clone()));
        item.insert("revoked".into(), AttributeValue::Bool(false));
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            // 256 random bits do not collide; the condition only makes sure.
            .condition_expression("attribute_not_exists(PK)")
            .send()
            .await
            .map_err(classify)?;
        Ok(IssuedKey { record, key })
    }

    /// The key with this hash, revoked or not.
    pub async fn find(&self, hash: &ApiKeyHash) -> Result<Option<ApiKeyRecord>, DbError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key_of(hash)))
            // A key used right after it is created must be found.
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        out.item.as_ref().map(record_from).transpose()
    }

    /// Every key, oldest first.
    pub async fn list(&self) -> Result<Vec<ApiKeyRecord>, DbError> {
        let mut records = Vec::new();
        let mut start = None;
        loop {
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .index_name("GSI1")
                .key_condition_expression("GSI1PK = :p")
                .expression_attribute_values(":p", s(PARTITION))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(classify)?;
            for item in out.items() {
                records.push(record_from(item)?);
            }
            start = out.last_evaluated_key;
            if start.is_none() {
                return Ok(records);
            }
        }
    }

    /// The key with this id, and its stored hash.
    async fn by_id(&self, id: u64) -> Result<Option<(ApiKeyHash, ApiKeyRecord)>, DbError> {
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .index_name("GSI1")
            .key_condition_expression("GSI1PK = :p AND id = :id")
            .expression_attribute_values(":p", s(PARTITION))
            .expression_attribute_values(":id", n(id))
            .send()
            .await
            .map_err(classify)?;
        let Some(item) = out.items().first() else {
            return Ok(None);
        };
        let hash = item
            .get("PK")
            .and_then(|v| v.as_s().ok())
            .and_then(|pk| pk.strip_prefix("APIKEY#"))
            .map(|h| ApiKeyHash(h.to_string()))
            .ok_or_else(|| DbError::internal("stored API key has no valid PK"))?;
        Ok(Some((hash, record_from(item)?)))
    }

    /// Whether a key with this id exists.
    pub async fn exists(&self, id: u64) -> Result<bool, DbError> {
        Ok(self.by_id(id).await?.is_some())
    }

    /// Revokes the key with this id; `None` if there is none. Warm processes
    /// notice within their key cache's lifetime.
    pub async fn revoke(&self, id: u64) -> Result<Option<ApiKeyRecord>, DbError> {
        let Some((hash, mut record)) = self.by_id(id).await? else {
            return Ok(None);
        };
        self.client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key_of(&hash)))
            .update_expression("SET revoked = :t")
            .condition_expression("attribute_exists(PK)")
            .expression_attribute_values(":t", AttributeValue::Bool(true))
            .send()
            .await
            .map_err(classify)?;
        record.revoked = true;
        Ok(Some(record))
    }
}

/// Ids shown to people are the key's numeric id.
pub fn parse_key_id(raw: &str) -> Option<u64> {
    Id::parse_param(raw, "id").ok().map(Id::get)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_stored_as_its_sha256() {
        assert_eq!(
            ApiKeyHash::of("abc").as_str(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn only_enterprise_keys_carry_limits() {
        assert!(NewApiKey::new(Plan::Pro, None, None).is_ok());
        assert_eq!(
            NewApiKey::new(Plan::Pro, Some((1, 1)), None).unwrap_err(),
            KeyRequestError::LimitsOnlyForEnterprise
        );
        assert_eq!(
            NewApiKey::new(Plan::Enterprise, None, None).unwrap_err(),
            KeyRequestError::EnterpriseNeedsLimits
        );
        let key = NewApiKey::new(Plan::Enterprise, Some((10, 20)), None);
        assert_eq!(key.map(|k| k.limits), Ok(Limits::new(10, 20)));
    }
}
