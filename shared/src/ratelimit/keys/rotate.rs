//! A key given a new secret: the same id, plan, limits, role and name, so
//! the same counters, bans and orders; the old secret retired at once or
//! kept working beside the new one for a while (retiring.rs).

use super::item::{as_read, key_of, live_item_of, retiring_item_of, Live};
use super::retiring::{KeepOldFor, Retiring};
use super::store::{fresh_secret, timestamp, KeyCheck};
use super::{ApiKeyHash, ApiKeyRecord, IssuedKey, KeyStore};
use crate::db::expr::Expr;
use crate::db::{s, DbError, Pause, Retry, Write, Written};
use crate::records::Id;
use aws_sdk_dynamodb::types::{Delete, Put, TransactWriteItem};
use chrono::{DateTime, Utc};
use serde::Serialize;

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

/// A rotation that kept the old secret: the new one, and when the old one
/// stops working.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rotated {
    #[serde(flatten)]
    pub issued: IssuedKey,
    /// RFC 3339.
    pub old_key_expires_at: String,
}

impl KeyStore {
    /// Gives the key with this id a new secret, returned once: the same id,
    /// plan, limits, role and name, so the same counters, bans and orders.
    ///
    /// The new item is put and the old one deleted in one transaction, on
    /// condition that the old one is still live: of two rotations racing, one
    /// fails with [`RotateError::Raced`], and the key never has two live
    /// secrets. Warm processes that cached the old secret accept it until
    /// their cache entry expires (`KEY_CACHE_SECONDS`). A secret an earlier
    /// rotation kept ends in the same transaction.
    pub async fn rotate(&self, id: Id, now: DateTime<Utc>) -> Result<IssuedKey, RotateError> {
        self.rotated(id, now, None).await
    }

    /// As [`KeyStore::rotate`], and the old secret keeps working beside the
    /// new one for `keep` (retiring.rs): its item becomes a pointer to the
    /// new one in the same transaction, instead of being deleted. A secret
    /// an earlier rotation kept ends at once: one retires at a time.
    pub async fn rotate_keeping_old(
        &self,
        id: Id,
        now: DateTime<Utc>,
        keep: KeepOldFor,
    ) -> Result<Rotated, RotateError> {
        let until = keep.until(now);
        let issued = self.rotated(id, now, Some(until)).await?;
        let old_key_expires_at = DateTime::from_timestamp(until, 0)
            .map(timestamp)
            .ok_or_else(|| DbError::internal("a kept secret's end is out of range"))?;
        Ok(Rotated {
            issued,
            old_key_expires_at,
        })
    }

    /// The rotation of key `id` at `now`, its old secret working until
    /// `keep_until` (Unix seconds) or retired at once.
    async fn rotated(
        &self,
        id: Id,
        now: DateTime<Utc>,
        keep_until: Option<i64>,
    ) -> Result<IssuedKey, RotateError> {
        let Live {
            hash: old,
            record: read,
            retiring: earlier,
        } = self.by_id(id).await?.ok_or(RotateError::NotFound(id))?;
        if read.revoked {
            return Err(RotateError::Revoked(id));
        }
        let record = ApiKeyRecord {
            rotated_at: Some(timestamp(now)),
            ..read.clone()
        };
        let kept = keep_until.map(|until| Retiring {
            hash: old.clone(),
            until,
        });
        // Live, and as read (the secret it retires included): an update
        // meanwhile is not copied over, and of two rotations one fails.
        let still_as_read = || {
            Ok::<_, DbError>(as_read(Expr::new(), &old, &read)?.when_as_read(
                "retiring",
                earlier.as_ref().map(|earlier| s(earlier.hash.as_str())),
                None,
            ))
        };
        let mut retry = Retry::new("rotate key");
        loop {
            let (key, hash) = fresh_secret();
            let put = Put::builder()
                .table_name(self.db.table())
                .set_item(Some(live_item_of(&hash, &record, kept.as_ref())?))
                .condition_expression("attribute_not_exists(PK)")
                .build()
                .map_err(DbError::internal)?;
            let retire = match &kept {
                None => still_as_read()?.delete(self.db.table(), key_of(&old))?,
                Some(kept) => {
                    let pointer = retiring_item_of(kept, id, &hash)?;
                    still_as_read()?.put(self.db.table(), pointer)?
                }
            };
            let mut write = Write::new()
                .checked(
                    KeyCheck::SecretFree,
                    TransactWriteItem::builder().put(put).build(),
                )
                .checked(KeyCheck::StillStored, retire);
            if let Some(earlier) = &earlier {
                write = write.checked(KeyCheck::StillStored, self.end_earlier(earlier, &old)?);
            }
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

    /// The delete of the pointer of `earlier`, a secret the live item under
    /// `live` retires: gone already (TTL) or still that pointer, never any
    /// other item.
    fn end_earlier(
        &self,
        earlier: &Retiring,
        live: &ApiKeyHash,
    ) -> Result<TransactWriteItem, DbError> {
        let delete = Delete::builder()
            .table_name(self.db.table())
            .set_key(Some(key_of(&earlier.hash)))
            .condition_expression("attribute_not_exists(PK) OR #successor = :live")
            .expression_attribute_names("#successor", "successor")
            .expression_attribute_values(":live", s(live.as_str()))
            .build()
            .map_err(DbError::internal)?;
        Ok(TransactWriteItem::builder().delete(delete).build())
    }
}
