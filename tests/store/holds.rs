//! Holds (contract 3, "Holds lapse" and "Holds are capped"): a customer key's
//! incomplete orders are capped by its plan, exactly, over several
//! instances; a hold that is due lapses once, as a cancellation, even
//! against a racing cancel or completion.

use super::{inventory, order, pet, pet_status, set_stock};
use crate::domain_events::stream_events;
use crate::helpers::{TestApp, TestResponse};
use crate::idempotency::proxy::{FaultMix, FaultProxy};
use crate::idempotency::send_keyed;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{Duration, Utc};
use futures::future::join_all;
use http::Method;
use petstore::db::orders::OrderCheck;
use petstore::db::Written;
use petstore::ratelimit::plan::Plan;
use petstore::records::{Id, OwnerScope};
use serde_json::json;

fn id(raw: u64) -> Id {
    Id::new(raw).unwrap_or_else(|| panic!("{raw} is a valid id"))
}

/// How many of `responses` have `status`.
fn count(responses: &[TestResponse], status: u16) -> usize {
    responses.iter().filter(|r| r.status == status).count()
}

#[tokio::test]
async fn a_free_key_holds_ten_orders_at_most_even_when_forty_arrive_at_once_on_three_instances() {
    // Given a pet with plenty of stock and a free key served by three instances
    let staff = TestApp::spawn().await;
    let pet_id = pet(&staff, "available").await;
    set_stock(&staff, pet_id, 1_000).await.assert_status(200);
    let free = staff.with_new_key(Plan::Free, None).await;
    let instances = [
        free.clone(),
        free.another_instance().await,
        free.another_instance().await,
    ];

    // When forty orders arrive at once (and, as a client does, an order
    // answered 503 with Retry-After, the contract's answer when it lost a
    // conflict on the pet's and the key's items more often than the retry
    // policy tries, is sent again: a loaded machine's 40-way race can)
    let mut responses = join_all((0..40).map(|i| order(&instances[i % 3], pet_id, 1))).await;
    for (i, response) in responses.iter_mut().enumerate() {
        if response.status == 503 {
            response.assert_error(503, "SERVICE_UNAVAILABLE");
            assert!(
                response.headers.contains_key("retry-after"),
                "503 says when"
            );
            *response = order(&instances[i % 3], pet_id, 1).await;
        }
    }

    // Then exactly ten are placed, the others refused as too many, nothing else
    assert_eq!(count(&responses, 201), 10, "placed");
    for refused in responses.iter().filter(|r| r.status != 201) {
        refused.assert_error(409, "TOO_MANY_OPEN_ORDERS");
    }
    assert_eq!(inventory(&staff, pet_id).await["quantity"], 990);
    assert_eq!(
        staff.app.db.open_holds(id(free.key_id)).await.ok(),
        Some(10)
    );

    // And cancelling one frees a place, completing one frees another
    let placed: Vec<u64> = responses
        .iter()
        .filter(|r| r.status == 201)
        .map(TestResponse::id)
        .collect();
    free.delete(&format!("/store/orders/{}", placed[0]))
        .await
        .assert_status(204);
    order(&free, pet_id, 1).await.assert_status(201);
    order(&free, pet_id, 1)
        .await
        .assert_error(409, "TOO_MANY_OPEN_ORDERS");
    staff
        .patch(
            &format!("/store/orders/{}", placed[1]),
            json!({"complete": true}),
        )
        .await
        .assert_status(200);
    order(&free, pet_id, 1).await.assert_status(201);
    assert_eq!(
        staff.app.db.open_holds(id(free.key_id)).await.ok(),
        Some(10)
    );
}

#[tokio::test]
async fn staff_are_not_capped_and_a_replay_holds_no_second_place() {
    let staff = TestApp::spawn().await;
    let pet_id = pet(&staff, "available").await;
    set_stock(&staff, pet_id, 100).await.assert_status(200);

    let placed = join_all((0..12).map(|_| order(&staff, pet_id, 1))).await;
    assert_eq!(count(&placed, 201), 12);

    // A free key's order sent twice with one Idempotency-Key holds one place.
    let free = staff.with_new_key(Plan::Free, None).await;
    let body = json!({"petId": pet_id, "quantity": 1});
    for _ in 0..2 {
        let response = send_keyed(
            &free,
            Method::POST,
            "/store/orders",
            Some(&body),
            "one-order",
        )
        .await;
        response.assert_status(201);
    }
    assert_eq!(staff.app.db.open_holds(id(free.key_id)).await.ok(), Some(1));
}

#[tokio::test]
async fn a_due_hold_lapses_once_as_a_cancellation_and_is_announced_as_lapsed() {
    // Given a customer's order that takes the pet's last units (it goes pending)
    let staff = TestApp::spawn().await;
    let pet_id = pet(&staff, "available").await;
    set_stock(&staff, pet_id, 3).await.assert_status(200);
    let customer = staff.with_new_key(Plan::Pro, None).await;
    let placed_at = Utc::now();
    let placed = order(&customer, pet_id, 3).await;
    placed.assert_status(201);
    let order_id = placed.id();
    let lapses_at = placed.json()["lapsesAt"]
        .as_str()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_else(|| panic!("an incomplete order says when it lapses: {}", placed.text()));
    let hold = Duration::days(30);
    assert!(lapses_at >= placed_at + hold && lapses_at <= Utc::now() + hold);
    assert_eq!(pet_status(&staff, pet_id).await, "pending");
    let db = &staff.app.db;

    // When the sweep runs before the hold is due, nothing lapses
    let early = events::holds::sweep(db, lapses_at - Duration::seconds(1)).await;
    assert_eq!(early.map(|s| s.lapsed).ok(), Some(0));
    customer
        .get(&format!("/store/orders/{order_id}"))
        .await
        .assert_status(200);

    // When it runs once the hold is due, twice
    let first = events::holds::sweep(db, lapses_at).await;
    let second = events::holds::sweep(db, lapses_at + Duration::hours(1)).await;

    // Then the order lapsed once: gone, its units back, the pet available, its place freed
    assert_eq!(first.map(|s| s.lapsed).ok(), Some(1));
    assert_eq!(second.map(|s| s.lapsed).ok(), Some(0));
    customer
        .get(&format!("/store/orders/{order_id}"))
        .await
        .assert_error(404, "NOT_FOUND");
    assert_eq!(inventory(&staff, pet_id).await["quantity"], 3);
    assert_eq!(pet_status(&staff, pet_id).await, "available");
    assert_eq!(db.open_holds(id(customer.key_id)).await.ok(), Some(0));

    // And it is announced once, as a cancellation marked lapsed
    let cancelled: Vec<_> = stream_events(&staff)
        .await
        .into_iter()
        .filter(|e| e.detail_type == "OrderCancelled" && e.detail["order"]["id"] == order_id)
        .collect();
    assert_eq!(cancelled.len(), 1, "{cancelled:?}");
    assert_eq!(cancelled[0].detail["lapsed"], json!(true));
}

#[tokio::test]
async fn a_lapse_racing_a_cancel_or_a_completion_ends_each_hold_exactly_once() {
    // Given 20 orders of one unit each, all due
    let staff = TestApp::spawn().await;
    let pet_id = pet(&staff, "available").await;
    set_stock(&staff, pet_id, 40).await.assert_status(200);
    let customer = staff.with_new_key(Plan::Pro, None).await;
    let placed = join_all((0..20).map(|_| order(&customer, pet_id, 1))).await;
    let ids: Vec<u64> = placed.iter().map(TestResponse::id).collect();
    let due = Utc::now() + Duration::days(31);
    let db = staff.app.db.unrecorded();

    // When each is lapsed while the customer cancels (even) or staff completes (odd) it
    let races = ids.iter().enumerate().map(|(i, &order_id)| {
        let (db, customer, staff) = (db.clone(), customer.clone(), staff.clone());
        async move {
            let path = format!("/store/orders/{order_id}");
            let ending = async {
                match i % 2 {
                    0 => customer.delete(&path).await,
                    _ => staff.patch(&path, json!({"complete": true})).await,
                }
            };
            let (lapsed, ended) = tokio::join!(db.lapse_order(id(order_id), due), ending);
            (
                i,
                lapsed.unwrap_or_else(|e| panic!("lapse: {e}")),
                ended.status,
            )
        }
    });
    let outcomes = join_all(races).await;

    // Then exactly one of the two ended each hold, and the stock shows it
    let mut completed = 0;
    for (i, lapsed, status) in outcomes {
        let ended = matches!(status, 200 | 204);
        assert!(
            lapsed != ended,
            "order {i}: lapsed {lapsed}, answered {status}"
        );
        assert!(ended || status == 404, "order {i}: answered {status}");
        if ended && i % 2 == 1 {
            completed += 1;
        }
    }
    assert_eq!(inventory(&staff, pet_id).await["quantity"], 40 - completed);
    assert_eq!(db.open_holds(id(customer.key_id)).await.ok(), Some(0));
    for order_id in ids {
        let found = staff.get(&format!("/store/orders/{order_id}")).await;
        assert!(found.status == 404 || found.json()["complete"] == true);
    }
    // Nothing left open: the pet can be deleted.
    staff
        .delete(&format!("/pets/{pet_id}"))
        .await
        .assert_status(204);
}

/// A due order of 2 of a pet's 3 units, and a sweeper whose DynamoDB
/// calls go through a proxy (so that a test can hold one of the lapse's
/// writes while the customer's own request, sent straight to DynamoDB,
/// lands).
async fn due_order_and_a_proxied_sweeper() -> (TestApp, TestApp, TestApp, FaultProxy, u64, u64) {
    let staff = TestApp::spawn().await;
    let pet_id = pet(&staff, "available").await;
    set_stock(&staff, pet_id, 3).await.assert_status(200);
    let customer = staff.with_new_key(Plan::Pro, None).await;
    let order_id = order(&customer, pet_id, 2).await.id();
    let proxy = FaultProxy::start(&staff.endpoint, FaultMix::NONE, 1).await;
    let sweeper = staff.instance_reaching(&proxy.endpoint).await;
    (staff, customer, sweeper, proxy, pet_id, order_id)
}

/// The announcements of `order_id`'s end: whether each said `lapsed`.
async fn endings(staff: &TestApp, order_id: u64) -> Vec<bool> {
    stream_events(staff)
        .await
        .into_iter()
        .filter(|e| {
            matches!(e.detail_type, "OrderCancelled" | "OrderCompleted")
                && e.detail["order"]["id"] == order_id
        })
        .map(|e| e.detail["lapsed"] == json!(true))
        .collect()
}

#[tokio::test]
async fn a_cancel_landing_while_a_lapse_s_mark_is_held_ends_the_hold_and_the_lapse_ends_nothing() {
    // Given a due order whose lapse is held at the proxy just before its mark
    let (staff, customer, sweeper, proxy, pet_id, order_id) =
        due_order_and_a_proxied_sweeper().await;
    let mut mark =
        proxy.hold_first(|operation, body| operation == "UpdateItem" && body.contains("lapsing"));
    let due = Utc::now() + Duration::days(31);
    let db = sweeper.app.db.unrecorded();
    let lapse = tokio::spawn(async move { db.lapse_order(id(order_id), due).await });
    mark.arrived(std::time::Duration::from_secs(60)).await;

    // When the customer's cancel lands first
    customer
        .delete(&format!("/store/orders/{order_id}"))
        .await
        .assert_status(204);
    mark.release();

    // Then the lapse's mark fails in DynamoDB, it reads the order again and
    // ends nothing: the units come back once, announced once, not lapsed
    let lapsed = lapse.await.expect("the lapse ran");
    assert_eq!(lapsed.ok(), Some(false));
    assert_eq!(inventory(&staff, pet_id).await["quantity"], 3);
    let owner = id(customer.key_id);
    assert_eq!(staff.app.db.open_holds(owner).await.ok(), Some(0));
    assert_eq!(endings(&staff, order_id).await, vec![false]);
}

#[tokio::test]
async fn a_cancel_or_completion_arriving_while_a_lapse_is_ending_finds_the_order_gone() {
    // Given a due order marked by its lapse, whose ending is held at the proxy
    let (staff, customer, sweeper, proxy, pet_id, order_id) =
        due_order_and_a_proxied_sweeper().await;
    let mut ending = proxy.hold_first(|operation, _| operation == "TransactWriteItems");
    let due = Utc::now() + Duration::days(31);
    let db = sweeper.app.db.unrecorded();
    let lapse = tokio::spawn(async move { db.lapse_order(id(order_id), due).await });
    ending.arrived(std::time::Duration::from_secs(60)).await;

    // When the customer cancels it and staff completes it meanwhile
    let path = format!("/store/orders/{order_id}");
    customer.delete(&path).await.assert_error(404, "NOT_FOUND");
    staff
        .patch(&path, json!({"complete": true}))
        .await
        .assert_error(404, "NOT_FOUND");
    ending.release();

    // Then the lapse ends it, once: its units back, announced as lapsed
    let lapsed = lapse.await.expect("the lapse ran");
    assert_eq!(lapsed.ok(), Some(true));
    assert_eq!(inventory(&staff, pet_id).await["quantity"], 3);
    let owner = id(customer.key_id);
    assert_eq!(staff.app.db.open_holds(owner).await.ok(), Some(0));
    assert_eq!(endings(&staff, order_id).await, vec![true]);
}

#[tokio::test]
async fn a_marked_order_is_gone_to_callers_refuses_a_stale_cancel_and_the_next_sweep_ends_it(
) -> Result<(), Box<dyn std::error::Error>> {
    // Given an order whose lapse stopped after its mark (a sweep cut short),
    // and a cancel decided from a read made before the mark
    let staff = TestApp::spawn().await;
    let pet_id = pet(&staff, "available").await;
    set_stock(&staff, pet_id, 2).await.assert_status(200);
    let customer = staff.with_new_key(Plan::Free, None).await;
    let order_id = order(&customer, pet_id, 2).await.id();
    let db = &staff.app.db;
    let stale = db
        .stored_order(id(order_id))
        .await?
        .ok_or("the order exists")?;
    let pet = db.get_pet(id(pet_id)).await?.ok_or("the pet exists")?;
    db.client()
        .update_item()
        .table_name(db.table())
        .key("PK", AttributeValue::S(format!("ORDER#{order_id}")))
        .key("SK", AttributeValue::S("ORDER".into()))
        .update_expression("SET lapsing = :yes")
        .expression_attribute_values(":yes", AttributeValue::Bool(true))
        .send()
        .await?;

    // Then callers find it gone, and the stale cancel fails in DynamoDB
    let path = format!("/store/orders/{order_id}");
    customer.get(&path).await.assert_error(404, "NOT_FOUND");
    customer.delete(&path).await.assert_error(404, "NOT_FOUND");
    staff
        .patch(&path, json!({"complete": true}))
        .await
        .assert_error(404, "NOT_FOUND");
    let owner = OwnerScope::OwnedBy(id(customer.key_id));
    let written = db.write(db.cancel_write(&stale, &pet, owner)?).await?;
    assert_eq!(written, Written::Failed(OrderCheck::OrderAsRead));
    assert_eq!(inventory(&staff, pet_id).await["quantity"], 0);

    // And the next sweep, whenever it runs, ends it once
    let swept = events::holds::sweep(db, Utc::now() + Duration::days(31)).await?;
    assert_eq!(swept.lapsed, 1);
    assert_eq!(inventory(&staff, pet_id).await["quantity"], 2);
    assert_eq!(db.open_holds(id(customer.key_id)).await?, 0);
    Ok(())
}
