//! The invariants of the webhook items (contract section 9; their layout is
//! in the module docs of `shared/src/webhooks/endpoints.rs`, `deliveries.rs`
//! and `deliver/slots.rs`), listed in [`super::invariants::INVARIANTS`]
//! beside the others.
//!
//! An endpoint is read twice by the service: by the API (its stored form,
//! `webhooks::endpoints::Endpoint`) and by the delivery handler
//! (`webhooks::deliver::items::Endpoint`); a delivery likewise (the API's
//! `WebhookDelivery`, the handler's `Delivery`). An item one of them cannot
//! read is a 500 on a list, or a message that fails until the queue gives
//! it up, so both readings are checked.

use super::gathered::Gathered;
use super::item::{problems, Finding, Kind, Scanned, Whole};
use chrono::{DateTime, Utc};
use petstore::webhooks::deliver::items as delivered;
use petstore::webhooks::endpoints::Endpoint;
use petstore::webhooks::records::WebhookDelivery;
use petstore::webhooks::schedule::OVERDUE_AFTER;
use std::collections::BTreeSet;

/// Why an endpoint or a delivery does not read as the service reads it, if
/// it does not; `None` for every other kind.
pub fn unreadable(s: &Scanned) -> Option<String> {
    let item = || s.item.clone();
    let read = match s.kind {
        Kind::WebhookEndpoint => serde_dynamo::from_item::<_, Endpoint>(item())
            .map(drop)
            .and_then(|()| serde_dynamo::from_item::<_, delivered::Endpoint>(item()).map(drop)),
        Kind::WebhookDelivery => serde_dynamo::from_item::<_, WebhookDelivery>(item())
            .map(drop)
            .and_then(|()| serde_dynamo::from_item::<_, delivered::Delivery>(item()).map(drop)),
        _ => return None,
    };
    read.err()
        .map(|e| format!("does not read as a {:?}: {e}", s.kind))
}

/// An endpoint is in every endpoint's list, its owner's, the staff
/// endpoints' exactly when its owner is staff (they receive every event),
/// and no other index.
pub fn endpoint_index_keys(s: &Scanned) -> Option<String> {
    if s.kind != Kind::WebhookEndpoint {
        return None;
    }
    let staff_list = (s.text("ownerRole") == Some("staff")).then_some("WEBHOOKSTAFF");
    let owner = s.whole("ownerId").non_negative();
    let owner_list = owner.map(|owner| format!("WEBHOOKOWNER#{owner}"));
    let found = [
        s.attribute_is("GSI1PK", Some("WEBHOOK")),
        s.attribute_is("GSI2PK", staff_list),
        s.attribute_is("GSI3PK", None),
        s.attribute_is("GSI4PK", owner_list.as_deref()),
        s.attribute_is("GSI5PK", None),
    ];
    problems(found.into_iter().flatten().collect())
}

/// A delivery is under one of its endpoint's delivery partitions
/// (`WEBHOOK#<webhookId>#<shard>`) and in no index: an index entry would be
/// rewritten at every attempt (its list is the partitions' own order), and
/// its attributes name the key it is under. Its endpoint may be gone: a
/// deleted endpoint's deliveries stay until they expire.
pub fn delivery_keys(s: &Scanned) -> Option<String> {
    if s.kind != Kind::WebhookDelivery {
        return None;
    }
    let partition = s.pk().strip_prefix("WEBHOOK#").and_then(|rest| {
        let (endpoint, shard) = rest.split_once('#')?;
        Some((endpoint.parse::<u64>().ok()?, shard.parse::<u16>().ok()?))
    });
    let Some((endpoint, _shard)) = partition else {
        return Some(format!(
            "PK {} is no delivery partition (WEBHOOK#<id>#<shard>)",
            s.pk()
        ));
    };
    let mut found: Vec<Option<String>> = ["GSI1PK", "GSI2PK", "GSI3PK", "GSI4PK", "GSI5PK"]
        .map(|g| s.attribute_is(g, None))
        .into();
    if s.whole("webhookId").non_negative() != Some(endpoint) {
        let stored = s.item.get("webhookId");
        found.push(Some(format!(
            "webhookId is {stored:?}, should be {endpoint}"
        )));
    }
    let event = s.sk().trim_start_matches("DELIVERY#");
    if s.text("eventId") != Some(event) {
        let stored = s.text("eventId");
        found.push(Some(format!("eventId is {stored:?}, should be {event}")));
    }
    problems(found.into_iter().flatten().collect())
}

/// A delivery and a slot carry the table's TTL attribute: a delivery is
/// kept 30 days after its last change, and a deleted endpoint's slots go.
pub fn items_expire(s: &Scanned) -> Option<String> {
    match s.kind {
        Kind::WebhookDelivery | Kind::DeliverySlot => s.expiry_problem(),
        _ => None,
    }
}

/// A pending delivery has an attempt to come: its `nextAttemptAt` is not
/// more than [`OVERDUE_AFTER`] past (as of the check). Later, no message is
/// carrying it: the queue lost it, or it went to the dead-letter queue.
pub fn delivery_not_overdue(s: &Scanned) -> Option<String> {
    if s.kind != Kind::WebhookDelivery || s.text("state") != Some("pending") {
        return None;
    }
    let Some(next) = s.text("nextAttemptAt") else {
        return Some("pending, with no nextAttemptAt: no attempt to come".into());
    };
    let Ok(next) = next.parse::<DateTime<Utc>>() else {
        return Some(format!("nextAttemptAt {next} is not a time"));
    };
    let late = Utc::now() - next;
    (late > OVERDUE_AFTER).then(|| {
        format!(
            "pending, its next attempt due at {next} ({} minutes ago): no message is carrying it",
            late.num_minutes()
        )
    })
}

/// Each key identity's endpoint count equals the endpoints it owns; one
/// that owns endpoints has its count (else its next creation counts from
/// 0, and its plan's cap lets it register that many more).
pub fn endpoints_counted(g: &Gathered) -> Vec<Finding> {
    let owners: BTreeSet<u64> = g
        .webhook_counts
        .keys()
        .chain(g.endpoints_of.keys())
        .copied()
        .collect();
    let problem = |owner: u64| {
        let owned = i128::from(g.endpoints_of.get(&owner).copied().unwrap_or(0));
        Some(match g.webhook_counts.get(&owner) {
            Some(Whole::Value(counted)) if *counted == owned => return None,
            Some(Whole::Absent) | None if owned == 0 => return None,
            Some(Whole::Value(counted)) => {
                format!("endpoints is {counted}, but the key owns {owned} endpoints")
            }
            Some(Whole::Absent) => format!("no endpoints count, but the key owns {owned}"),
            None => format!("no count item, but the key owns {owned} endpoints"),
            Some(Whole::Not(why)) => why.clone(),
        })
    };
    let findings = owners.into_iter().filter_map(|owner| {
        let pk = format!("WEBHOOKOWNER#{owner}");
        let problem = problem(owner)?;
        Some(Finding::new(
            pk,
            "WEBHOOKS",
            "webhook-endpoints-counted",
            problem,
        ))
    });
    findings.collect()
}
