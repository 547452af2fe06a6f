//! Who receives an event: the endpoints the fan-out delivers to, and
//! whether one endpoint may still be delivered to.

use super::{owner_list, Endpoint, SK, STAFF};
use crate::db::{from_item, Db, DbError, Item, Layout};
use crate::ratelimit::keys::KeyStore;
use crate::records::Id;
use crate::webhooks::list::{keys_page, KeyList};
use crate::webhooks::types::EventType;
use aws_sdk_dynamodb::Client;
use std::collections::HashMap;

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

/// The endpoint when it exists, is enabled and its owner's key is not
/// revoked; `None` otherwise.
pub async fn deliverable(
    client: &Client,
    table: &str,
    webhook_id: u64,
) -> Result<Option<Endpoint>, DbError> {
    let db = Db::new(client.clone(), table).with_layout(served_layout());
    let Some(endpoint) = db.get_item(format!("WEBHOOK#{webhook_id}"), SK).await? else {
        return Ok(None);
    };
    let endpoint: Endpoint = from_item(endpoint)?;
    let live = endpoint.enabled && owner_live(client, table, endpoint.owner_id).await?;
    Ok(live.then_some(endpoint))
}

async fn owner_live(client: &Client, table: &str, owner: Id) -> Result<bool, DbError> {
    let keys = KeyStore::new(client.clone(), table).with_layout(served_layout());
    Ok(keys
        .find_by_id(owner)
        .await?
        .is_some_and(|key| !key.revoked))
}

/// Every deliverable endpoint that receives an event of `event_type`: the
/// order owner's own (an `order.*` type), and every staff endpoint.
/// Customers never receive non-order types or others' orders.
pub async fn subscribers(
    client: &Client,
    table: &str,
    event_type: &str,
    order_owner: Option<u64>,
) -> Result<Vec<Endpoint>, DbError> {
    let Some(event_type) = EventType::parse(event_type) else {
        return Ok(Vec::new());
    };
    let db = Db::new(client.clone(), table).with_layout(served_layout());
    let mut lists = vec![KeyList::new("GSI2", STAFF.to_string())];
    if let Some(owner) = order_owner
        .and_then(Id::new)
        .filter(|_| event_type.is_order())
    {
        lists.push(KeyList::new("GSI4", owner_list(owner)));
    }
    let mut keys: Vec<Item> = Vec::new();
    for list in &lists {
        let mut after = None;
        loop {
            let page = keys_page(&db, list, 100, after).await?;
            for key in page.items {
                if !keys.contains(&key) {
                    keys.push(key);
                }
            }
            match page.next_after {
                Some(next) => after = Some(next),
                None => break,
            }
        }
    }
    let items = db
        .batch_get_consistent("webhook subscribers", keys, None)
        .await?;
    let mut found = Vec::new();
    let mut owners: HashMap<Id, bool> = HashMap::new();
    for item in items {
        let endpoint: Endpoint = from_item(item)?;
        if !endpoint.enabled || !endpoint.receives(event_type, order_owner) {
            continue;
        }
        let live = match owners.get(&endpoint.owner_id) {
            Some(live) => *live,
            None => {
                let live = owner_live(client, table, endpoint.owner_id).await?;
                owners.insert(endpoint.owner_id, live);
                live
            }
        };
        if live {
            found.push(endpoint);
        }
    }
    found.sort_by_key(|e| e.id);
    Ok(found)
}
