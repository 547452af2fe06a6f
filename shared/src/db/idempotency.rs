//! Idempotency records (contract section 4b), stored in the change's own
//! write so that a retry finds one exactly when the change was made.
//!
//! | PK | SK | attributes |
//! |---|---|---|
//! | `IDEMPOTENCY#<keyId>#<sha256 hex of the Idempotency-Key>` | `IDEMPOTENCY` | `fingerprint`, `response` (bytes), `expiresAt` |
//!
//! This layer stores the `response` bytes and never reads their meaning: the
//! HTTP edge makes them from the change's answer and turns them back into an
//! answer (`http::idempotency`). `expiresAt` is the table's TTL attribute;
//! TTL deletes lag by hours, so every read and write here treats a record
//! past it as absent.

use super::expr::Expr;
use super::{s, BoxError, Db, DbError, Item};
use crate::records::{Id, IdempotencyKey};
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem};
use chrono::{DateTime, TimeDelta, Utc};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

const SK: &str = "IDEMPOTENCY";

/// How long a record answers retries.
const RECORD_LIFETIME: TimeDelta = TimeDelta::hours(24);

/// The partition of `owner`'s record for `key`: the key identity is part of
/// it, so two callers' keys never meet, and the key itself is not stored.
fn record_pk(owner: Id, key: &IdempotencyKey) -> String {
    let digest = Sha256::digest(key.as_str().as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("IDEMPOTENCY#{owner}#{hex}")
}

/// The key (`PK`, `SK`) of `owner`'s record for `key`.
pub fn record_key(owner: Id, key: &IdempotencyKey) -> Item {
    Item::from([
        ("PK".to_string(), s(record_pk(owner, key))),
        ("SK".to_string(), s(SK)),
    ])
}

/// Makes the bytes a record keeps from the change's answer (as JSON).
pub(crate) type Render = dyn Fn(&[u8]) -> Result<Vec<u8>, BoxError> + Send + Sync;

/// One request's record, to be written with its change (see
/// [`Changes::run`](super::Changes)).
pub struct Recording {
    pk: String,
    fingerprint: String,
    render: Box<Render>,
    /// Set once a write carrying the record has committed.
    written: AtomicBool,
}

impl fmt::Debug for Recording {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recording")
            .field("pk", &self.pk)
            .field("written", &self.written)
            .finish_non_exhaustive()
    }
}

impl Recording {
    /// The record of `owner`'s request with `key`, whose `fingerprint` tells
    /// it from any other request, keeping what `render` makes of the answer.
    pub(crate) fn new(
        owner: Id,
        key: &IdempotencyKey,
        fingerprint: String,
        render: Box<Render>,
    ) -> Recording {
        Recording {
            pk: record_pk(owner, key),
            fingerprint,
            render,
            written: AtomicBool::new(false),
        }
    }

    /// Whether the change and this record were written together.
    pub(crate) fn written(&self) -> bool {
        self.written.load(Ordering::Acquire)
    }

    pub(crate) fn note_written(&self) {
        self.written.store(true, Ordering::Release);
    }

    /// The record's put, for a change whose answer is `answer`, on the
    /// condition that no live record holds the key.
    pub(crate) fn put<T: Serialize>(
        &self,
        table: &str,
        answer: &T,
        now: DateTime<Utc>,
    ) -> Result<TransactWriteItem, DbError> {
        let answer = serde_json::to_vec(answer).map_err(DbError::internal)?;
        let response = (self.render)(&answer).map_err(DbError::Internal)?;
        let mut item = Item::from([
            ("PK".to_string(), s(&self.pk)),
            ("SK".to_string(), s(SK)),
            ("fingerprint".to_string(), s(&self.fingerprint)),
            (
                "response".to_string(),
                AttributeValue::B(Blob::new(response)),
            ),
        ]);
        let expires_at = (now + RECORD_LIFETIME).timestamp();
        item.insert("expiresAt".to_string(), super::n(expires_at));
        Expr::new()
            .absent_or_expired(now.timestamp())
            .put(table, item)
    }
}

/// A live record, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Recorded {
    /// The fingerprint of the request that made it.
    pub(crate) fingerprint: String,
    /// What the edge's [`Render`] made of that request's answer.
    pub(crate) response: Vec<u8>,
}

impl Db {
    /// The live record of `owner`'s `key` at `now` (a consistent read; an
    /// expired record is absent, whether or not TTL has deleted it yet).
    pub(crate) async fn recorded(
        &self,
        owner: Id,
        key: &IdempotencyKey,
        now: DateTime<Utc>,
    ) -> Result<Option<Recorded>, DbError> {
        let Some(mut item) = self.get_item(record_pk(owner, key), SK).await? else {
            return Ok(None);
        };
        let expires_at = match item.get("expiresAt") {
            Some(AttributeValue::N(n)) => n.parse::<i64>().map_err(DbError::internal)?,
            _ => return Err(DbError::internal("an idempotency record without expiresAt")),
        };
        if expires_at < now.timestamp() {
            return Ok(None);
        }
        match (item.remove("fingerprint"), item.remove("response")) {
            (Some(AttributeValue::S(fingerprint)), Some(AttributeValue::B(response))) => {
                Ok(Some(Recorded {
                    fingerprint,
                    response: response.into_inner(),
                }))
            }
            _ => Err(DbError::internal(
                "an idempotency record without its answer",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_scoped_to_the_key_identity_and_never_hold_the_key() {
        let key = IdempotencyKey::parse(b"retry-me");
        let (Some(a), Some(b), Ok(key)) = (Id::new(1), Id::new(2), key) else {
            panic!("valid ids and key");
        };
        assert_ne!(record_pk(a, &key), record_pk(b, &key));
        assert!(record_pk(a, &key).starts_with("IDEMPOTENCY#1#"));
        assert!(!record_pk(a, &key).contains("retry-me"));
    }
}
