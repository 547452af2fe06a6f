//! The keys in the data table: issue, look up, list, revoke (rotation:
//! rotate.rs).

use super::item::{item_of, key_of, pk_of, stored_of, Live, Stored, PARTITION, SK};
use super::{ApiKeyHash, ApiKeyRecord, IssuedKey, NewApiKey, PREFIX};
use crate::db::{
    classify, n, new_id, s, Check, Db, DbError, Item, Layout, OnFailure, Pause, Retry, Write,
    Written,
};
use crate::records::Id;
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem, Update};
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

/// A fresh secret: 256 random bits, and the hash it is stored under.
pub(super) fn fresh_secret() -> (String, ApiKeyHash) {
    let key = format!(
        "{PREFIX}{}",
        URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>())
    );
    let hash = ApiKeyHash::of(&key);
    (key, hash)
}

pub(super) fn timestamp(now: DateTime<Utc>) -> String {
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
            retires_at: None,
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

    /// The key with this hash, revoked or not. A retiring secret is its
    /// key as the live item states it now, with [`ApiKeyRecord::retires_at`]
    /// set; unknown unless the live item names it back (retiring.rs).
    pub async fn find(&self, hash: &ApiKeyHash) -> Result<Option<ApiKeyRecord>, DbError> {
        // Consistent: a key used right after it is created must be found.
        let successor = match self.stored(pk_of(hash)).await? {
            None => return Ok(None),
            Some(Stored::Live(live)) => return Ok(Some(live.record)),
            Some(Stored::Retiring { successor }) => successor,
        };
        match self.stored(pk_of(&successor)).await? {
            Some(Stored::Live(Live {
                record,
                retiring: Some(retiring),
                ..
            })) if retiring.hash == *hash => Ok(Some(ApiKeyRecord {
                retires_at: Some(retiring.until),
                ..record
            })),
            // Rotated again, or revoked and rotated, or never its key's.
            _ => Ok(None),
        }
    }

    /// What the item at `pk` holds, read consistently.
    async fn stored(&self, pk: String) -> Result<Option<Stored>, DbError> {
        self.db.get_item(pk, SK).await?.map(stored_of).transpose()
    }

    /// The live key item at `pk`: `None` for no item, or a retiring
    /// secret's (the index may still list what a rotation replaced).
    async fn read(&self, pk: String) -> Result<Option<Live>, DbError> {
        Ok(match self.stored(pk).await? {
            Some(Stored::Live(live)) => Some(live),
            Some(Stored::Retiring { .. }) | None => None,
        })
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
        Ok(found
            .into_iter()
            .flatten()
            .map(|live| live.record)
            .collect())
    }

    /// The key with this id: its live item.
    pub(super) async fn by_id(&self, id: Id) -> Result<Option<Live>, DbError> {
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
            // Only a rotation deletes a key's item or makes it a retiring
            // secret's: the index listed the item it replaced, so ask again
            // for the new one.
            retry.again(Pause::Backoff).await?;
        }
    }

    /// The key with this id (webhook delivery asks whether it is revoked).
    pub async fn find_by_id(&self, id: Id) -> Result<Option<ApiKeyRecord>, DbError> {
        Ok(self.by_id(id).await?.map(|live| live.record))
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
                // A retiring secret's item (the index lagging a rotation) is
                // left out; its key is looked up again below.
                if let Stored::Live(live) = stored_of(item)? {
                    found.insert(live.record.id, live.record);
                }
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
            let Some(Live {
                hash, mut record, ..
            }) = self.by_id(id).await?
            else {
                return Ok(None);
            };
            // On the live item only: a retiring secret's look-up reads it.
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
}

/// The conditions of the key writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum KeyCheck {
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
