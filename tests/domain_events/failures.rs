//! Publishing and reading that fail lose nothing and make no new `eventId`.

use super::{reader, stream_events, Collect};
use crate::helpers::TestApp;
use crate::idempotency::faults::run_shoppers;
use crate::idempotency::proxy::{FaultMix, FaultProxy};
use crate::idempotency::shoppers::Fate;
use crate::idempotency::shoppers::Keys;
use crate::idempotency::stocked_pet;
use events::{DomainEvent, Publisher, Retries};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::Duration;

/// A bus that fails every third event (by `sequence`) the first `times`
/// times it is sent, and keeps what it published.
struct Failing {
    times: u32,
    sent: Mutex<HashMap<String, u32>>,
    published: Collect,
}

impl Publisher for Failing {
    async fn publish(&self, events: &[DomainEvent]) -> Vec<Result<(), String>> {
        let mut published = Vec::new();
        let results = {
            let mut sent = self.sent.lock().unwrap_or_else(|e| e.into_inner());
            events
                .iter()
                .map(|event| {
                    let count = sent.entry(event.event_id().to_string()).or_insert(0);
                    *count += 1;
                    let unlucky = event.sequence().parse::<u128>().unwrap_or(0) % 3 == 0;
                    if unlucky && *count <= self.times {
                        return Err("InternalFailure".to_string());
                    }
                    published.push(event.clone());
                    Ok(())
                })
                .collect()
        };
        self.published.publish(&published).await;
        results
    }
}

/// A few pets, stock moves and orders: a stream of some dozens of events.
async fn some_trading() -> TestApp {
    let staff = TestApp::spawn().await;
    for stock in 1..=3 {
        let pet = stocked_pet(&staff, stock + 1).await;
        for _ in 0..stock {
            let order = staff.post("/store/orders", json!({"petId": pet})).await;
            order.assert_status(201);
        }
    }
    staff
}

/// Each event's detail by `eventId`.
fn by_id(events: &[DomainEvent]) -> BTreeMap<String, Value> {
    events
        .iter()
        .map(|e| (e.event_id().to_string(), e.detail.clone()))
        .collect()
}

#[tokio::test]
async fn entries_that_keep_failing_are_delivered_again_without_loss_or_new_ids() {
    let staff = some_trading().await;
    let truth = by_id(&stream_events(&staff).await);
    assert!(truth.len() > 20, "{} events", truth.len());

    let bus = Failing {
        times: 3,
        sent: Mutex::default(),
        published: Collect::default(),
    };
    let quick = Retries {
        attempts: 2,
        first_pause: Duration::from_millis(1),
    };
    let mut reader = reader(&staff, &staff.endpoint).with_retries(quick);
    assert!(reader.drain(&bus, 200).await.expect("readable"));
    let totals = &reader.totals;
    assert!(
        totals.retried > 0,
        "failed entries were sent again: {totals:?}"
    );
    assert!(
        totals.redeliveries > 0,
        "records were delivered again: {totals:?}"
    );
    // Everything published, as first derived, and nothing else.
    assert_eq!(by_id(&bus.published.events()), truth);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_read_through_faults_loses_nothing() {
    let staff = some_trading().await;
    let truth = by_id(&stream_events(&staff).await);
    let mix = FaultMix {
        reset_before: 10,
        reset_after: 10,
        throttle: 10,
        server_error: 8,
        delay: 7,
        max_delay: Duration::from_millis(100),
    };
    let proxy = FaultProxy::start(&staff.endpoint, mix, 20_261_123).await;
    let bus = Collect::default();
    let mut reader = reader(&staff, &proxy.endpoint);
    assert!(reader.drain(&bus, 500).await.expect("readable"));
    println!("{}", proxy.counts().summary());
    assert_eq!(by_id(&bus.events()), truth);
}

/// The idempotency fault run (45% of DynamoDB calls failing), read from the
/// stream: each order a shopper was given was placed once, and no other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_fault_run_the_stream_places_each_stored_order_once() {
    let (staff, _pets, logs, summary) = run_shoppers(Keys::Sent).await;
    let events = stream_events(&staff).await;
    let count = |detail_type: &str| {
        let mut counts: BTreeMap<u64, usize> = BTreeMap::new();
        for event in events.iter().filter(|e| e.detail_type == detail_type) {
            let id = event.detail["order"]["id"].as_u64().unwrap_or_default();
            *counts.entry(id).or_default() += 1;
        }
        counts
    };
    let given = |fates: &[Fate]| -> BTreeMap<u64, usize> {
        logs.iter()
            .flat_map(|l| &l.placed)
            .filter(|p| fates.contains(&p.fate))
            .map(|p| (p.id, 1))
            .collect()
    };
    let all = [Fate::Open, Fate::Completed, Fate::Cancelled];
    assert_eq!(count("OrderPlaced"), given(&all), "{summary}");
    assert_eq!(count("OrderCompleted"), given(&[Fate::Completed]));
    assert_eq!(count("OrderCancelled"), given(&[Fate::Cancelled]));
    let ids: BTreeSet<&str> = events.iter().map(DomainEvent::event_id).collect();
    assert_eq!(ids.len(), events.len());
}
