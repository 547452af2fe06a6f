//! The keys in the data table: issue, look up, list, revoke, rotate.

use super::item::{as_read, item_of, key_of, pk_of, record_of, PARTITION, SK};
use super::{ApiKeyHash, ApiKeyRecord, IssuedKey, NewApiKey, PREFIX};
use crate::db::expr::Expr;
use crate::db::{
    classify, n, new_id, s, Check, Db, DbError, Item, Layout, OnFailure, Pause, Retry, Write,
    Written,
};
use crate::records::Id;
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem, Update};
use aws_sdk_dynamodb::Client;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::{DateTime, SecondsFormat, Utc};
use futures::{StreamExt, TryStreamExt};
use std::collections::HashMap;

/// How many items `list` reads at once.
const LIST_READS_IN_FLIGHT: usize = 16;
/// How many index look-ups `find_all_by_id` sends at once: each wave is one
/// round trip, as many connections as a delivery page's partitions.
const LOOK_UPS_AT_ONCE: usize = 16;

/// The keys in the data table.
#[derive(Clone, Debug)]
pub struct KeyStore {
    pub(super) db: Db,
}

/// Why a key was not rotated.
#[derive(Debug, thiserror::Error)]
pub enum RotateError {
    #[error("no key has id {0}")]
    NotFound(Id),
    #[error("key {0} is revoked; a revoked key is not rotated")]
    Revoked(Id),
    #[error("key {0} was rotated, revoked or updated meanwhile; nothing changed")]
    Raced(Id),
    #[error("the key store failed")]
    Db(#[from] DbError),
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

fn timestamp(now: DateTime<Utc>) -> String {
    now.to_rfc3339_opts(SecondsFormat::Secs, true)
}

impl KeyStore {
    pub fn new(client: Client, table: impl Into<String>) -> KeyStore {
        KeyStore {
            db: Db::new(client, table),
        }
    }

    /// The keys of a table stored in `layout` (their list is on GSI1's index).
    pub fn with_layout(self, layout: Layout) -> KeyStore {
        KeyStore {
            db: self.db.with_layout(layout),
        }
    }

    /// Issues a key: 256 random bits, returned once, stored as its hash.
    pub async fn create(&self, new: NewApiKey, now: DateTime<Utc>) -> Result<IssuedKey, DbError> {
        let (key, hash) = fresh_secret();
        self.store(key, hash, new, now).await
    }

    /// Issues a key whose secret is `key` itself, not random: only for local
    /// stacks, whose sample events carry a published secret (`petstore-local`
    /// refuses any DynamoDB but a local one). Fails if that secret is taken.
    pub async fn create_with_secret(
        &self,
        new: NewApiKey,
        key: &str,
        now: DateTime<Utc>,
    ) -> Result<IssuedKey, DbError> {
        self.store(key.to_string(), ApiKeyHash::of(key), new, now)
            .await
    }

    async fn store(
        &self,
        key: String,
        hash: ApiKeyHash,
        new: NewApiKey,
        now: DateTime<Utc>,
    ) -> Result<IssuedKey, DbError> {
        let record = ApiKeyRecord {
            id: new_id(now),
            plan: new.plan,
            role: new.role,
            per_minute: new.limits.per_minute,
            per_day: new.limits.per_day,
            name: new.name,
            created_at: timestamp(now),
            rotated_at: None,
            revoked: false,
            max_open_orders: new.max_open_orders,
            expires_at: new.expires_at,
            max_webhooks: new.max_webhooks,
        };
        self.db
            .client()
            .put_item()
            .table_name(self.db.table())
            .set_item(Some(item_of(&hash, &record)?))
            // 256 random bits do not collide; the condition only makes sure
            // (and refuses a fixed secret that is already stored).
            .condition_expression("attribute_not_exists(PK)")
            .send()
            .await
            .map_err(|e| classify(self.db.table(), e))?;
        Ok(IssuedKey { record, key })
    }

    /// The key with this hash, revoked or not.
    pub async fn find(&self, hash: &ApiKeyHash) -> Result<Option<ApiKeyRecord>, DbError> {
        // Consistent: a key used right after it is created must be found.
        let item = self.db.get_item(pk_of(hash), SK).await?;
        Ok(item.map(record_of).transpose()?.map(|(_, record)| record))
    }

    /// The key with this hash and the hash itself, read from the table.
    async fn read(&self, pk: String) -> Result<Option<(ApiKeyHash, ApiKeyRecord)>, DbError> {
        self.db.get_item(pk, SK).await?.map(record_of).transpose()
    }

    /// The `PK` of every key on GSI1 with `id` (every key when `None`), in
    /// id order. The index may lag: a key just rotated can show both items.
    async fn index_pks(&self, id: Option<Id>) -> Result<Vec<String>, DbError> {
        let mut pks = Vec::new();
        let mut start = None;
        loop {
            let mut query = self
                .db
                .client()
                .query()
                .table_name(self.db.table())
                .index_name(self.db.layout().index_of("GSI1"))
                .key_condition_expression(match id {
                    Some(_) => "GSI1PK = :p AND id = :id",
                    None => "GSI1PK = :p",
                })
                .expression_attribute_values(":p", s(PARTITION))
                .projection_expression("PK")
                .set_exclusive_start_key(start);
            if let Some(id) = id {
                query = query.expression_attribute_values(":id", n(id));
            }
            let out = query
                .send()
                .await
                .map_err(|e| classify(self.db.table(), e))?;
            let items = out.items.unwrap_or_default().into_iter();
            pks.extend(items.filter_map(|mut item| match item.remove("PK") {
                Some(AttributeValue::S(pk)) => Some(pk),
                _ => None,
            }));
            start = out.last_evaluated_key;
            if start.is_none() {
                return Ok(pks);
            }
        }
    }

    /// Every key, oldest first.
    pub async fn list(&self) -> Result<Vec<ApiKeyRecord>, DbError> {
        let pks = self.index_pks(None).await?;
        let found: Vec<_> = futures::stream::iter(pks)
            .map(|pk| self.read(pk))
            .buffered(LIST_READS_IN_FLIGHT)
            .try_collect()
            .await?;
        Ok(found.into_iter().flatten().map(|(_, r)| r).collect())
    }

    /// The key with this id, and the hash of its live secret.
    pub(super) async fn by_id(
        &self,
        id: Id,
    ) -> Result<Option<(ApiKeyHash, ApiKeyRecord)>, DbError> {
        let mut retry = Retry::new("find key by id");
        loop {
            let pks = self.index_pks(Some(id)).await?;
            if pks.is_empty() {
                return Ok(None);
            }
            for pk in pks {
                if let Some(found) = self.read(pk).await? {
                    return Ok(Some(found));
                }
            }
            // Only a rotation deletes a key's item: the index listed the
            // item it replaced, so ask again for the new one.
            retry.again(Pause::Backoff).await?;
        }
    }

    /// The key with this id (webhook delivery asks whether it is revoked).
    pub async fn find_by_id(&self, id: Id) -> Result<Option<ApiKeyRecord>, DbError> {
        Ok(self.by_id(id).await?.map(|(_, record)| record))
    }

    /// The keys with these ids, each as [`KeyStore::find_by_id`] finds it
    /// (an id no key has is left out), in a bounded number of round trips
    /// for a list page's owners: the index look-ups 16 at a time (a key is
    /// found by id on the index alone), then every item they name in one
    /// consistent batch read a hundred, never a read per key. An item the
    /// index named and the batch did not find was rotated meanwhile: that
    /// key alone is looked up again, as `find_by_id` does.
    pub async fn find_all_by_id(&self, ids: &[Id]) -> Result<HashMap<Id, ApiKeyRecord>, DbError> {
        let mut listed: Vec<(Id, Vec<String>)> = Vec::with_capacity(ids.len());
        for wave in ids.chunks(LOOK_UPS_AT_ONCE) {
            let look_ups = wave.iter().map(|id| self.index_pks(Some(*id)));
            let found = futures::future::try_join_all(look_ups).await?;
            listed.extend(wave.iter().copied().zip(found));
        }
        let keys: Vec<Item> = listed
            .iter()
            .flat_map(|(_, pks)| pks.iter())
            .map(|pk| Item::from([("PK".to_string(), s(pk)), ("SK".to_string(), s(SK))]))
            .collect();
        let mut found = HashMap::with_capacity(ids.len());
        if !keys.is_empty() {
            let items = self
                .db
                .batch_get_consistent("find keys by id", keys, None)
                .await?;
            for item in items {
                let (_, record) = record_of(item)?;
                found.insert(record.id, record);
            }
        }
        for (id, pks) in listed {
            if !pks.is_empty() && !found.contains_key(&id) {
                if let Some(record) = self.find_by_id(id).await? {
                    found.insert(id, record);
                }
            }
        }
        Ok(found)
    }

    /// Whether a key with this id exists.
    pub async fn exists(&self, id: Id) -> Result<bool, DbError> {
        Ok(self.by_id(id).await?.is_some())
    }

    /// Revokes the key with this id; `None` if there is none. Warm processes
    /// notice within their key cache's lifetime.
    pub async fn revoke(&self, id: Id) -> Result<Option<ApiKeyRecord>, DbError> {
        let mut retry = Retry::new("revoke key");
        loop {
            let Some((hash, mut record)) = self.by_id(id).await? else {
                return Ok(None);
            };
            let update = Update::builder()
                .table_name(self.db.table())
                .set_key(Some(key_of(&hash)))
                .update_expression("SET revoked = :t")
                .condition_expression("attribute_exists(PK)")
                .expression_attribute_values(":t", AttributeValue::Bool(true))
                .build()
                .map_err(DbError::internal)?;
            let update = TransactWriteItem::builder().update(update).build();
            let write = Write::new().checked(KeyCheck::StillStored, update);
            match self.db.write(write).await? {
                Written::Done => {
                    record.revoked = true;
                    return Ok(Some(record));
                }
                // Rotated meanwhile: revoke the secret that replaced it.
                Written::Failed(_) => retry.again(Pause::None).await?,
                Written::Conflict => retry.again(Pause::Backoff).await?,
            }
        }
    }

    /// Gives the key with this id a new secret, returned once: the same id,
    /// plan, limits, role and name, so the same counters, bans and orders.
    ///
    /// The new item is put and the old one deleted in one transaction, on
    /// condition that the old one is still live: of two rotations racing, one
    /// fails with [`RotateError::Raced`], and the key never has two live
    /// secrets. Warm processes that cached the old secret accept it until
    /// their cache entry expires (`KEY_CACHE_SECONDS`).
    pub async fn rotate(&self, id: Id, now: DateTime<Utc>) -> Result<IssuedKey, RotateError> {
        let (old, read) = self.by_id(id).await?.ok_or(RotateError::NotFound(id))?;
        if read.revoked {
            return Err(RotateError::Revoked(id));
        }
        let record = ApiKeyRecord {
            rotated_at: Some(timestamp(now)),
            ..read.clone()
        };
        // Live, and as read: an update meanwhile is not copied over.
        let retire = as_read(Expr::new(), &old, &read)?.delete(self.db.table(), key_of(&old))?;
        let mut retry = Retry::new("rotate key");
        loop {
            let (key, hash) = fresh_secret();
            let put = Put::builder()
                .table_name(self.db.table())
                .set_item(Some(item_of(&hash, &record)?))
                .condition_expression("attribute_not_exists(PK)")
                .build()
                .map_err(DbError::internal)?;
            let write = Write::new()
                .checked(
                    KeyCheck::SecretFree,
                    TransactWriteItem::builder().put(put).build(),
                )
                .checked(KeyCheck::StillStored, retire.clone());
            match self.db.write(write).await? {
                Written::Done => return Ok(IssuedKey { record, key }),
                Written::Failed(KeyCheck::StillStored) => return Err(RotateError::Raced(id)),
                // Never in practice, the new hash was taken; or another
                // transaction held an item: the same again, with a new secret.
                Written::Failed(KeyCheck::SecretFree) | Written::Conflict => {
                    retry.again(Pause::Backoff).await?
                }
            }
        }
    }
}

/// The conditions of the key writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyCheck {
    /// The key's item is still there, live (not rotated away or revoked).
    StillStored,
    /// No item has the new secret's hash.
    SecretFree,
}

impl Check for KeyCheck {
    fn on_failure(self) -> OnFailure {
        OnFailure::ReadAgain
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_issued_key_has_the_form_the_edge_checks() {
        for _ in 0..1_000 {
            let (key, _) = fresh_secret();
            assert!(super::super::is_well_formed(&key), "{key}");
        }
    }
}
