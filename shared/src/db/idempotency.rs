//! Idempotency records (contract section 4b): what a change answered, stored
//! in the change's own write, so that a retry finds it exactly when the
//! change was made.
//!
//! | PK | SK | attributes |
//! |---|---|---|
//! | `IDEMPOTENCY#<keyId>#<sha256 hex of the Idempotency-Key>` | `IDEMPOTENCY` | `fingerprint`, `status`, `body`, `location`, `expiresAt` |
//!
//! The key identity is part of the key, so two callers' keys never meet. A
//! record is in no index. `expiresAt` (Unix seconds, 24 hours on) is the
//! table's TTL attribute; TTL deletes lag by hours, so a record past it is
//! treated as absent by every read and overwritten by the next write.
//!
//! A [`Recording`] rides on the [`Db`] handle of one request
//! ([`Db::recording`]); [`Db::run`] renders the plan's answer into it and adds
//! it to the plan's write (`write.rs`), on the condition that no live record
//! holds the key. So the change and its record are one atomic write: a request
//! that changed nothing (an error, a plan that needed no write) records nothing.

use super::expr::Expr;
use super::{from_item, s, to_item, Db, DbError};
use crate::records::{Id, IdempotencyKey};
use aws_sdk_dynamodb::types::TransactWriteItem;
use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const SK: &str = "IDEMPOTENCY";

/// How long a record answers retries.
pub const RECORD_LIFETIME: TimeDelta = TimeDelta::hours(24);

/// The partition of `owner`'s record for `key`.
pub fn record_pk(owner: Id, key: &IdempotencyKey) -> String {
    let digest = Sha256::digest(key.as_str().as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("IDEMPOTENCY#{owner}#{hex}")
}

/// What a change answered: replayed as it is to every retry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    pub status: u16,
    /// The JSON body, if the answer has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
}

/// How a change's answer is shown, which the HTTP edge knows before the
/// change runs (see `http::idempotency`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutcomeShape {
    /// 201, the new record, and `Location: <collection>/<its id>`.
    Created { collection: String },
    /// 200 and the record.
    Returned,
    /// 204.
    NoContent,
}

impl OutcomeShape {
    /// The outcome a change whose answer is `answer` gives; the body is the
    /// very JSON the handler sends (`http::respond`).
    pub fn outcome<T: Serialize>(&self, answer: &T) -> Result<Outcome, DbError> {
        let body = || serde_json::to_string(answer).map_err(DbError::internal);
        Ok(match self {
            OutcomeShape::Created { collection } => {
                let id = serde_json::to_value(answer)
                    .map_err(DbError::internal)?
                    .get("id")
                    .and_then(serde_json::Value::as_u64)
                    .ok_or_else(|| DbError::internal("a created record without an id"))?;
                Outcome {
                    status: 201,
                    body: Some(body()?),
                    location: Some(format!("{collection}/{id}")),
                }
            }
            OutcomeShape::Returned => Outcome {
                status: 200,
                body: Some(body()?),
                location: None,
            },
            OutcomeShape::NoContent => Outcome {
                status: 204,
                body: None,
                location: None,
            },
        })
    }
}

/// One request's record, to be written with its change.
#[derive(Debug)]
pub struct Recording {
    pk: String,
    fingerprint: String,
    shape: OutcomeShape,
    /// Set once a write carrying the record has committed.
    committed: AtomicBool,
}

impl Recording {
    /// The record of `owner`'s request with `key`, whose `fingerprint` tells
    /// it from any other request, answered as `shape` says.
    pub fn new(
        owner: Id,
        key: &IdempotencyKey,
        fingerprint: String,
        shape: OutcomeShape,
    ) -> Recording {
        Recording {
            pk: record_pk(owner, key),
            fingerprint,
            shape,
            committed: AtomicBool::new(false),
        }
    }

    /// Whether the change and this record were written: then the handler's
    /// answer is the recorded outcome, and nothing needs reading.
    pub fn committed(&self) -> bool {
        self.committed.load(Ordering::Acquire)
    }

    /// Notes that a write carrying the record committed.
    pub(crate) fn commit(&self) {
        self.committed.store(true, Ordering::Release);
    }

    /// The record's put, for a change whose answer is `answer`, on the
    /// condition that no live record holds the key.
    pub(crate) fn put<T: Serialize>(
        &self,
        table: &str,
        answer: &T,
        now: DateTime<Utc>,
    ) -> Result<TransactWriteItem, DbError> {
        let item = to_item(&RecordItem {
            pk: self.pk.clone(),
            sk: SK.to_string(),
            fingerprint: self.fingerprint.clone(),
            outcome: self.shape.outcome(answer)?,
            expires_at: (now + RECORD_LIFETIME).timestamp(),
        })?;
        Expr::new()
            .absent_or_expired(now.timestamp())
            .put(table, item)
    }
}

/// A live record, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// The fingerprint of the request that made it.
    pub fingerprint: String,
    pub outcome: Outcome,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RecordItem {
    #[serde(rename = "PK")]
    pk: String,
    #[serde(rename = "SK")]
    sk: String,
    fingerprint: String,
    #[serde(flatten)]
    outcome: Outcome,
    expires_at: i64,
}

impl Db {
    /// This handle, writing `recording` with the change it runs (one change
    /// per request, so one record).
    pub fn recording(&self, recording: Arc<Recording>) -> Db {
        Db {
            recording: Some(recording),
            ..self.clone()
        }
    }

    /// The live record of `owner`'s `key` at `now` (a consistent read; an
    /// expired record is absent, whether or not TTL has deleted it yet).
    pub async fn recorded(
        &self,
        owner: Id,
        key: &IdempotencyKey,
        now: DateTime<Utc>,
    ) -> Result<Option<Recorded>, DbError> {
        let Some(item) = self.get_item(record_pk(owner, key), SK).await? else {
            return Ok(None);
        };
        let record: RecordItem = from_item(item)?;
        Ok((record.expires_at >= now.timestamp()).then_some(Recorded {
            fingerprint: record.fingerprint,
            outcome: record.outcome,
        }))
    }
}

/// The key (`PK`, `SK`) of `owner`'s record for `key`.
pub fn record_key(owner: Id, key: &IdempotencyKey) -> super::Item {
    super::Item::from([
        ("PK".to_string(), s(record_pk(owner, key))),
        ("SK".to_string(), s(SK)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{Pet, PetStatus};

    fn pet() -> Option<Pet> {
        Some(Pet {
            id: Id::new(42)?,
            name: crate::records::Name::parse("Rex", "name").ok()?,
            category_id: Id::new(7)?,
            status: PetStatus::Available,
        })
    }

    #[test]
    fn an_outcome_is_the_answer_as_the_handler_sends_it() {
        let pet = pet();
        let created = OutcomeShape::Created {
            collection: "/pets".into(),
        }
        .outcome(&pet)
        .ok();
        let body = serde_json::to_string(&pet).ok();
        assert_eq!(
            created,
            Some(Outcome {
                status: 201,
                body,
                location: Some("/pets/42".into())
            })
        );
        let gone = OutcomeShape::NoContent.outcome(&()).ok();
        assert_eq!(gone.map(|o| (o.status, o.body)), Some((204, None)));
    }

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
