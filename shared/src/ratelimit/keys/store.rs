//! The keys in the data table: issue, look up, list, revoke.

use super::item::{item_of, key_of, pk_of, record_of, PARTITION, SK};
use super::{ApiKeyHash, ApiKeyRecord, IssuedKey, NewApiKey, PREFIX};
use crate::db::{classify, n, new_id, s, Db, DbError};
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::{DateTime, SecondsFormat, Utc};

/// The keys in the data table.
#[derive(Clone, Debug)]
pub struct KeyStore {
    db: Db,
}

/// A fresh secret: 256 random bits, and the hash it is stored under.
fn fresh_secret() -> (String, ApiKeyHash) {
    let key = format!(
        "{PREFIX}{}",
        URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>())
    );
    let hash = ApiKeyHash::of(&key);
    (key, hash)
}

impl KeyStore {
    pub fn new(client: Client, table: impl Into<String>) -> KeyStore {
        KeyStore {
            db: Db::new(client, table),
        }
    }

    /// Issues a key: 256 random bits, returned once, stored as its hash.
    pub async fn create(&self, new: NewApiKey, now: DateTime<Utc>) -> Result<IssuedKey, DbError> {
        let (key, hash) = fresh_secret();
        let record = ApiKeyRecord {
            id: new_id(now).get(),
            plan: new.plan,
            per_minute: new.limits.per_minute,
            per_day: new.limits.per_day,
            name: new.name,
            created_at: now.to_rfc3339_opts(SecondsFormat::Secs, true),
            revoked: false,
        };
        self.db
            .client()
            .put_item()
            .table_name(self.db.table())
            .set_item(Some(item_of(&hash, &record)?))
            // 256 random bits do not collide; the condition only makes sure.
            .condition_expression("attribute_not_exists(PK)")
            .send()
            .await
            .map_err(classify)?;
        Ok(IssuedKey { record, key })
    }

    /// The key with this hash, revoked or not.
    pub async fn find(&self, hash: &ApiKeyHash) -> Result<Option<ApiKeyRecord>, DbError> {
        // Consistent: a key used right after it is created must be found.
        let item = self.db.get_item(pk_of(hash), SK).await?;
        Ok(item.map(record_of).transpose()?.map(|(_, record)| record))
    }

    /// Every key, oldest first.
    pub async fn list(&self) -> Result<Vec<ApiKeyRecord>, DbError> {
        let mut records = Vec::new();
        let mut start = None;
        loop {
            let out = self
                .db
                .client()
                .query()
                .table_name(self.db.table())
                .index_name("GSI1")
                .key_condition_expression("GSI1PK = :p")
                .expression_attribute_values(":p", s(PARTITION))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(classify)?;
            for item in out.items.unwrap_or_default() {
                records.push(record_of(item)?.1);
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
            .db
            .client()
            .query()
            .table_name(self.db.table())
            .index_name("GSI1")
            .key_condition_expression("GSI1PK = :p AND id = :id")
            .expression_attribute_values(":p", s(PARTITION))
            .expression_attribute_values(":id", n(id))
            .send()
            .await
            .map_err(classify)?;
        out.items
            .unwrap_or_default()
            .into_iter()
            .next()
            .map(record_of)
            .transpose()
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
        self.db
            .client()
            .update_item()
            .table_name(self.db.table())
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
