//! Who receives an event: the endpoints the fan-out delivers to, each
//! decided by its key's current state and role
//! ([`crate::webhooks::receiving`]).
//!
//! The candidates are the endpoints registered by staff (GSI2
//! `WEBHOOKSTAFF`) and, for an `order.*` event, the order's owner's (GSI4,
//! one small query of the owner's own list), their items read by key. A
//! process holds each list it read, items included, for the key cache's
//! time-to-live ([`KeyStates::held_list`]) while the subscriptions' version
//! stays the one it was read at (`webhooks::subscriptions`: every
//! registration, re-enabling and change of `events` counts one): the staff
//! list is not read for every event, and an event nobody takes costs one
//! small read of the version while its lists are held. Whether an endpoint registered by staff still receives as staff is
//! its key's role now: one whose key became a customer's takes only its
//! own orders'.

use super::{owner_list, Endpoint, STAFF};
use crate::db::{from_item, Db, DbError, Item, Layout};
use crate::records::Id;
use crate::webhooks::list::{keys_page, KeyList};
use crate::webhooks::receiving::{takes, KeyStates};
use crate::webhooks::types::EventType;
use aws_sdk_dynamodb::Client;

/// The stored layout this process serves (`DATA_LAYOUT`, as the functions'
/// configuration reads it): the queue side has no `Config` of its own, and
/// during a migration the lists' and keys' indexes are layout 1's.
fn served_layout() -> Layout {
    std::env::var("DATA_LAYOUT")
        .ok()
        .and_then(|raw| raw.trim().parse().ok())
        .and_then(Layout::from_number)
        .unwrap_or_default()
}

/// Every key of one list, newest first.
async fn all_keys(db: &Db, list: &KeyList) -> Result<Vec<Item>, DbError> {
    let mut keys = Vec::new();
    let mut after = None;
    loop {
        let page = keys_page(db, list, 100, after).await?;
        keys.extend(page.items);
        match page.next_after {
            Some(next) => after = Some(next),
            None => return Ok(keys),
        }
    }
}

/// The endpoint items of one list, as held for the key cache's
/// time-to-live, else read (the keys from the index, the items by key).
async fn endpoints_of(db: &Db, keys: &KeyStates, list: KeyList) -> Result<Vec<Item>, DbError> {
    if let Some(held) = keys.held_list(&list.partition) {
        return Ok(held);
    }
    let version = keys.subscriptions_version();
    let found = all_keys(db, &list).await?;
    let items = match found.is_empty() {
        true => Vec::new(),
        false => {
            db.batch_get_consistent("webhook subscribers", found, None)
                .await?
        }
    };
    keys.hold_list(&list.partition, version, items.clone());
    Ok(items)
}

/// Every endpoint that takes an event of `event_type` now: enabled, its key
/// live, and as its key's current role and its `events` allow.
pub async fn subscribers(
    client: &Client,
    table: &str,
    keys: &KeyStates,
    event_type: EventType,
    order_owner: Option<u64>,
) -> Result<Vec<Endpoint>, DbError> {
    let db = Db::new(client.clone(), table).with_layout(served_layout());
    let staff = KeyList::new("GSI2", STAFF.to_string());
    let mut items = endpoints_of(&db, keys, staff).await?;
    if let Some(owner) = order_owner
        .and_then(Id::new)
        .filter(|_| event_type.is_order())
    {
        let owners = KeyList::new("GSI4", owner_list(owner));
        for item in endpoints_of(&db, keys, owners).await? {
            if !items.iter().any(|held| held.get("PK") == item.get("PK")) {
                items.push(item);
            }
        }
    }
    let now = chrono::Utc::now();
    let mut found = Vec::new();
    for item in items {
        let endpoint: Endpoint = from_item(item)?;
        let owner = endpoint.owner_id.get();
        let Ok(role) = keys.decide(endpoint.enabled, owner, now).await? else {
            continue;
        };
        if takes(role, owner, &endpoint.events, event_type, order_owner) {
            found.push(endpoint);
        }
    }
    found.sort_by_key(|e| e.id);
    Ok(found)
}
