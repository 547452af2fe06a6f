//! One counter write per admitted request (issue 42): a process that never
//! saw a subject counts it with ONE `UpdateItem`, whichever window another
//! instance last counted it in, and the counts stay exact (the minute's
//! slot families of `ratelimit::counter`, some or all of them stale).

use super::{assert_limit_headers, pinned, DAY_END, MINUTE_END, NOW};
use crate::helpers::{TestApp, TestResponse};
use crate::idempotency::proxy::{FaultMix, FaultProxy};
use petstore::ratelimit::{ManualClock, Plan};
use std::net::{IpAddr, Ipv4Addr};

const MINUTE: i64 = 60;

/// Seconds before [`NOW`] another instance last counted a subject, each
/// meeting the slots otherwise: this minute; the one before; 2 minutes (no
/// family stale); 7 minutes (family 7 stale); 7 * 9 * 11 minutes (only
/// family 8 right); the day before.
const GAPS: [i64; 6] = [0, MINUTE, 2 * MINUTE, 7 * MINUTE, 693 * MINUTE, 86_400];

/// Every minute family stale: 7 * 8 * 9 * 11 minutes (3.85 days).
const ALL_STALE: i64 = 5_544 * MINUTE;

/// The counter table's `UpdateItem` calls `proxy` has seen.
fn counter_writes(proxy: &FaultProxy, app: &TestApp) -> usize {
    let calls = proxy.calls();
    let writes = calls.iter().filter(|call| call.operation == "UpdateItem");
    writes
        .filter(|call| call.reaches(&app.rate_limit_table_name))
        .count()
}

/// What a key reads; a caller without one, the document it may read.
const KEYED: &str = "/categories";
const ANONYMOUS: &str = "/openapi.json";

/// Counts 3 requests `GET path` of `caller` at `NOW - gap` on `caller`'s
/// instance, then one at `NOW` on a fresh instance reaching DynamoDB
/// through a counting proxy; the response, and how many counter writes it
/// took.
async fn counted_elsewhere_then_fresh(
    (caller, path): (&TestApp, &str),
    clock: &ManualClock,
    gap: i64,
) -> (TestResponse, usize) {
    clock.set(NOW - gap);
    for _ in 0..3 {
        caller.get(path).await.assert_status(200);
    }
    clock.set(NOW);
    let proxy = FaultProxy::start(&caller.endpoint, FaultMix::NONE, 0).await;
    let fresh = caller.instance_reaching(&proxy.endpoint).await;
    let response = fresh.get(path).await;
    response.assert_status(200);
    (response, counter_writes(&proxy, caller))
}

#[tokio::test]
async fn a_fresh_process_counts_a_key_counted_elsewhere_with_one_write() {
    let (app, clock) = pinned(|_| None).await;
    for gap in GAPS {
        // Given a key allowing 4 a minute and 6 a day, counted 3 times
        // `gap` seconds ago by another instance
        let key = app.with_new_key(Plan::Enterprise, Some((4, 6))).await;

        // When a process that never saw it counts one more
        let (response, writes) = counted_elsewhere_then_fresh((&key, KEYED), &clock, gap).await;

        // Then it took one counter write, and the counts are exact
        assert_eq!(writes, 1, "counter writes, counted {gap} s before");
        match gap {
            0 => assert_limit_headers(&response, 4, 0, MINUTE_END),
            86_400 => assert_limit_headers(&response, 4, 3, MINUTE_END),
            _ => assert_limit_headers(&response, 6, 2, DAY_END),
        }
    }
}

#[tokio::test]
async fn a_fresh_process_counts_a_source_counted_elsewhere_with_one_write() {
    let (app, clock) = pinned(|_| None).await;
    for (n, gap) in GAPS.into_iter().enumerate() {
        // Given a source without a key, counted 3 times `gap` seconds ago
        let ip = IpAddr::V4(Ipv4Addr::new(198, 51, 100, 10 + n as u8));
        let source = app.without_key().with_source_ip(ip);

        // When a process that never saw it counts one more
        let (response, writes) =
            counted_elsewhere_then_fresh((&source, ANONYMOUS), &clock, gap).await;

        // Then it took one counter write, and the free plan's counts are exact
        assert_eq!(writes, 1, "counter writes, counted {gap} s before");
        let remaining = if gap == 0 { 56 } else { 59 };
        assert_limit_headers(&response, 60, remaining, MINUTE_END);
    }
}

#[tokio::test]
async fn a_subject_idle_a_multiple_of_every_family_takes_one_write_more() {
    // Given a key counted 3 times 5,544 minutes ago: every minute family's
    // slot is of that minute
    let (app, clock) = pinned(|_| None).await;
    let key = app.with_new_key(Plan::Enterprise, Some((4, 6))).await;

    // When a process that never saw it counts one more
    let (response, writes) = counted_elsewhere_then_fresh((&key, KEYED), &clock, ALL_STALE).await;

    // Then the failed update's item says so, one reset counts it, and the
    // counts start afresh
    assert_eq!(writes, 2);
    assert_limit_headers(&response, 4, 3, MINUTE_END);
    let again = key.get("/categories").await;
    assert_limit_headers(&again, 4, 2, MINUTE_END);
}

#[tokio::test]
async fn exactly_the_limit_is_admitted_at_once_over_stale_slots() {
    for gap in [7 * MINUTE, 693 * MINUTE, ALL_STALE] {
        // Given a key allowing 10 a minute, counted 3 times `gap` seconds
        // ago, and two instances that never saw it
        let (app, clock) = pinned(|_| None).await;
        let key = app.with_new_key(Plan::Enterprise, Some((10, 1_000))).await;
        clock.set(NOW - gap);
        for _ in 0..3 {
            key.get("/categories").await.assert_status(200);
        }
        clock.set(NOW);
        let instances = [key.another_instance().await, key.another_instance().await];

        // When 30 requests arrive at once, alternating between them
        let requests = (0..30).map(|i| {
            let instance = instances[i % 2].clone();
            tokio::spawn(async move { instance.get("/categories").await.status })
        });
        let statuses = futures::future::join_all(requests).await;

        // Then exactly 10 are admitted, the rest refused
        let ok = statuses.iter().filter(|s| matches!(s, Ok(200))).count();
        let limited = statuses.iter().filter(|s| matches!(s, Ok(429))).count();
        assert_eq!((ok, limited), (10, 20), "counted {gap} s before");
    }
}
