//! The subscriptions' version: one item every change of who may receive
//! what writes, in the same transaction as the change, so that a fan-out
//! holding subscription lists (`receiving::KeyStates::held_list`) knows at
//! once, on any number of instances, that they are out of date.
//!
//! | PK | SK | attributes |
//! |---|---|---|
//! | `WEBHOOK#SUBSCRIPTIONS` | `SUBSCRIPTIONS` | `version` (a count of changes) |
//!
//! Section 9: an endpoint receives every event of its types that occurs
//! after its registration (its re-enabling, a change of its `events`) was
//! answered. Each fan-out (one per `PutEvents` call of the events
//! function) reads the version once, eventually consistent (half a read
//! unit: an event nobody takes stays within its cost), and a version other
//! than the one its lists were read at drops them, so the lists are read
//! again (their items by key, consistently). Deletion and disabling need
//! no version: every attempt reads its endpoint afresh and makes none for
//! one gone or disabled. One item for every owner: registrations are rare
//! beside events, and an event of any owner then costs one read, not one
//! per list it looks in.
//!
//! The item is additive to the stored layout: the release before neither
//! reads nor writes it (its registrations reach a fan-out of this release
//! within the key cache's 30 seconds, as before), and a table without it
//! reads as version 0.

use crate::db::expr::Expr;
use crate::db::{s, Db, DbError, Item};
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem};
use std::collections::HashMap;

const PK: &str = "WEBHOOK#SUBSCRIPTIONS";
const SK: &str = "SUBSCRIPTIONS";

fn key() -> Item {
    HashMap::from([("PK".to_string(), s(PK)), ("SK".to_string(), s(SK))])
}

/// The write that counts one more change of the subscriptions: an
/// unconditional item of the change's own transaction.
pub(crate) fn changed(table: &str) -> Result<TransactWriteItem, DbError> {
    Expr::new().add("version", 1).update(table, key())
}

/// The subscriptions' version as the table has it now (0 before any change).
pub async fn version(db: &Db) -> Result<u64, DbError> {
    let found = db
        .batch_get("webhook subscriptions", vec![key()], None)
        .await?;
    let version = found
        .first()
        .and_then(|item| match item.get("version") {
            Some(AttributeValue::N(n)) => n.parse().ok(),
            _ => None,
        })
        .unwrap_or(0);
    Ok(version)
}
