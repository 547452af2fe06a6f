//! A bounded number of attempts in flight per endpoint (section 9,
//! "Isolation"): one caller's slow or failing endpoints cannot take all the
//! delivery capacity, because an attempt to an endpoint that is failing
//! (`failingSince` set: its last attempt did not succeed, a timeout
//! included) first leases one of its [`SLOTS_PER_ENDPOINT`] slot items, and
//! a message that finds none free is deferred without an attempt. An
//! endpoint whose last attempt succeeded is called without a slot (its
//! attempts end quickly; two writes saved on every healthy delivery): the
//! first attempt that times out marks it failing, so at most the attempts
//! already under way when it turned slow go unbounded, each for at most its
//! 15 seconds.
//!
//! A slot is an item (`PK = WEBHOOK#<id>`, `SK = SLOT#<n>`) with a lease
//! time: taken by a conditional put (free, or its lease run out), released
//! by a conditional delete (still ours). A process that dies mid-attempt
//! leaks nothing: its lease ends [`LEASE`] after it began, longer than an
//! attempt can last. Two writes per attempt, on the endpoint's own
//! partition; no counter that a lost decrement would leave wrong forever.

use super::items::key;
use super::DeliverError;
use crate::db::expr::Expr;
use crate::db::{n, s, Check, Db, Decided, OnFailure, Write};
use crate::webhooks::attempt::ATTEMPT_TIMEOUT;
use aws_sdk_dynamodb::Client;
use chrono::{DateTime, Utc};
use rand::seq::SliceRandom;

/// Attempts one endpoint may have in flight at once.
pub const SLOTS_PER_ENDPOINT: u32 = 4;
/// How long a slot is held at most: an attempt's budget and a margin for
/// recording it.
pub const LEASE: chrono::Duration =
    chrono::Duration::seconds(ATTEMPT_TIMEOUT.as_secs() as i64 + 15);

/// A slot held; give it back with [`release`].
#[derive(Debug)]
pub struct Lease {
    webhook_id: u64,
    slot: u32,
    token: String,
}

/// The conditions of a slot's writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SlotCheck {
    /// No one holds it: never taken, or its lease ran out.
    Free,
    /// The lease is still the one given back (a lease that ran out may
    /// have been taken since).
    Ours,
}

impl Check for SlotCheck {
    fn on_failure(self) -> OnFailure {
        OnFailure::ReadAgain
    }
}

/// Leases a free slot of the endpoint, trying them in random order; `None`
/// when all are taken.
pub async fn take(
    client: &Client,
    table: &str,
    webhook_id: u64,
    now: DateTime<Utc>,
) -> Result<Option<Lease>, DeliverError> {
    let db = Db::new(client.clone(), table);
    let mut slots: Vec<u32> = (0..SLOTS_PER_ENDPOINT).collect();
    slots.shuffle(&mut rand::rng());
    let token = format!("{:016x}", rand::random::<u64>());
    for slot in slots {
        let mut item = key(webhook_id, format!("SLOT#{slot}"));
        item.insert("leaseUntil".into(), n((now + LEASE).timestamp_millis()));
        item.insert("token".into(), s(&token));
        // The table's TTL removes slots of deleted endpoints.
        item.insert(
            "expiresAt".into(),
            n((now + chrono::Duration::days(1)).timestamp()),
        );
        let put = Expr::new()
            .absent_or_below("leaseUntil", n(now.timestamp_millis()))
            .put(table, item)?;
        let write = Write::new().checked(SlotCheck::Free, put);
        if let Decided::Done = db.write_decided("take webhook slot", write).await? {
            return Ok(Some(Lease {
                webhook_id,
                slot,
                token,
            }));
        }
    }
    Ok(None)
}

/// Gives the slot back, if it is still ours (a lease that ran out may have
/// been taken since).
pub async fn release(client: &Client, table: &str, lease: Lease) -> Result<(), DeliverError> {
    let db = Db::new(client.clone(), table);
    let slot = key(lease.webhook_id, format!("SLOT#{}", lease.slot));
    let delete = Expr::new()
        .when_equal("token", s(lease.token))
        .delete(table, slot)?;
    let write = Write::new().checked(SlotCheck::Ours, delete);
    // Not ours any more: nothing to give back.
    db.write_decided("give webhook slot back", write).await?;
    Ok(())
}
