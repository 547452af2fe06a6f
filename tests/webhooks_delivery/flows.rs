//! Deliveries end to end: signed, retried, disabled, rotated, isolated.

use super::receivers::{python_receiver, rust_receiver, Answer};
use super::*;
use crate::domain_events::{reader, Collect};
use events::WithWebhooks;
use petstore::webhooks::sign::new_secret;

#[tokio::test]
async fn a_placed_order_reaches_its_owner_signed_and_never_another_customer() {
    let staff = TestApp::spawn().await;
    let (owner, other) = (staff.as_customer().await, staff.as_customer().await);
    let rex = pet_in_stock(&staff, 3).await;
    let order = owner.post("/store/orders", json!({"petId": rex})).await;
    order.assert_status(201);
    // The key identity that placed it (section 4a), which its events carry.
    let owner_id = owner.key_id;
    let (other_id, other_secret) = (other.key_id, new_secret());
    let secret = new_secret();
    let (mut received, _process) = python_receiver(&[&secret], "200").await;
    let mut elsewhere = rust_receiver(&[&other_secret], vec![Answer::Status(200)]).await;
    let resolver = system_resolver();
    let mine = register(
        &staff,
        &NewEndpoint::new(owner_id, "customer", &received.url, &secret),
        &LOCAL,
        resolver.as_ref(),
    )
    .await;
    let theirs = register(
        &staff,
        &NewEndpoint::new(other_id, "customer", &elsewhere.url, &other_secret),
        &LOCAL,
        resolver.as_ref(),
    )
    .await;
    // The events consumer's stream, teed into the webhooks as `make run` does.
    let tee = WithWebhooks::new(Collect::default(), deliverer(&staff, LOCAL, resolver));
    assert!(reader(&staff, &staff.endpoint)
        .drain(&tee, 50)
        .await
        .expect("the stream reads"));

    let seen = received.next().await;
    assert_eq!(
        seen.verified,
        [true],
        "verified by the PyPI standardwebhooks package"
    );
    assert_eq!(seen.body["type"], "order.placed");
    assert_eq!(seen.body["data"]["order"]["ownerId"], owner_id);
    let event_id = seen.body["data"]["eventId"]
        .as_str()
        .expect("data.eventId")
        .to_string();
    assert_eq!(
        seen.webhook_id, event_id,
        "webhook-id is the event's eventId"
    );
    assert_eq!(seen.body["timestamp"], seen.body["data"]["occurredAt"]);
    let delivered = delivery_when(&staff, mine, &event_id, |d| d["state"] == "delivered").await;
    assert_eq!(delivered["attempts"][0]["statusCode"], 200);
    // The fan-out made every delivery before sending any: none for the other customer.
    assert_eq!(delivery_item(&staff, theirs, &event_id).await, None);
    assert!(elsewhere.so_far().is_empty());
}

#[tokio::test]
async fn failing_twice_then_200_is_the_same_webhook_id_three_times_and_three_attempts() {
    let app = TestApp::spawn().await;
    let answers = vec![
        Answer::Status(500),
        Answer::Status(503),
        Answer::Status(200),
    ];
    let OneEndpoint {
        mut receiver, id, ..
    } = one_endpoint(&app, answers, None, "evt-retried").await;

    for _ in 0..3 {
        let seen = receiver.next().await;
        assert_eq!(
            (seen.webhook_id.as_str(), seen.verified.as_slice()),
            ("evt-retried", &[true][..])
        );
    }
    let delivery = delivery_when(&app, id, "evt-retried", |d| d["state"] == "delivered").await;
    let attempts = delivery["attempts"].as_array().expect("attempts");
    let codes: Vec<_> = attempts
        .iter()
        .map(|a| (a["statusCode"].clone(), a["error"].clone()))
        .collect();
    let expected = [
        (json!(500), json!("status")),
        (json!(503), json!("status")),
        (json!(200), Value::Null),
    ];
    assert_eq!(codes, expected);
    assert_eq!(delivery["attemptCount"], 3);
    assert!(delivery.get("nextAttemptAt").is_none());
    let endpoint = item(&app, id, "ENDPOINT").await.expect("the endpoint");
    assert!(
        endpoint.get("failingSince").is_none(),
        "a success ends the failing: {endpoint}"
    );
}

#[tokio::test]
async fn a_410_disables_the_endpoint_at_once() {
    let app = TestApp::spawn().await;
    let OneEndpoint {
        mut receiver,
        id,
        deliverer,
    } = one_endpoint(&app, vec![Answer::Status(410)], None, "evt-gone").await;

    receiver.next().await;
    let delivery = delivery_when(&app, id, "evt-gone", |d| d["state"] == "failed").await;
    assert_eq!(delivery["attemptCount"], 1, "no retry after 410");
    let stored = item(&app, id, "ENDPOINT").await.expect("the endpoint");
    assert_eq!(stored["enabled"], false);
    assert_eq!(stored["disabledReason"], "the endpoint answered 410 Gone");
    // Disabled: the next event makes no delivery.
    deliverer
        .fan_out(&stock_event("evt-after"))
        .await
        .expect("fanned out");
    assert_eq!(delivery_item(&app, id, "evt-after").await, None);
}

#[tokio::test]
async fn an_endpoint_failing_for_3_days_is_disabled_and_one_failing_for_less_is_not() {
    let app = TestApp::spawn().await;
    let days_ago =
        |days: i64| Some((chrono::Utc::now() - chrono::Duration::days(days)).to_rfc3339());
    let failing = vec![Answer::Status(500)];
    let old = one_endpoint(&app, failing.clone(), days_ago(3), "evt-3-days").await;
    let young = one_endpoint(&app, failing, days_ago(2), "evt-2-days").await;

    delivery_when(&app, old.id, "evt-3-days", |d| d["attemptCount"] == 1).await;
    let stored = item(&app, old.id, "ENDPOINT").await.expect("the endpoint");
    assert_eq!(
        (&stored["enabled"], &stored["disabledReason"]),
        (&json!(false), &json!("every attempt failed for 3 days"))
    );
    delivery_when(&app, young.id, "evt-2-days", |d| d["state"] == "failed").await;
    let stored = item(&app, young.id, "ENDPOINT")
        .await
        .expect("the endpoint");
    assert_eq!(stored["enabled"], true, "{stored}");
}

#[tokio::test]
async fn a_failed_delivery_retried_by_hand_gets_one_more_attempt() {
    let app = TestApp::spawn().await;
    let answers = [vec![Answer::Status(500); 4], vec![Answer::Status(200)]].concat();
    let OneEndpoint { id, deliverer, .. } = one_endpoint(&app, answers, None, "evt-by-hand").await;
    let failed = delivery_when(&app, id, "evt-by-hand", |d| d["state"] == "failed").await;
    assert_eq!(
        failed["attemptCount"], 4,
        "the shortened schedule's 4 attempts"
    );

    let by_hand = message(id, "evt-by-hand", true);
    deliverer.queue.send(vec![by_hand]).await.expect("queued");
    let delivered = delivery_when(&app, id, "evt-by-hand", |d| d["state"] == "delivered").await;
    assert_eq!(delivered["attemptCount"], 5);
    assert_eq!(
        (
            &delivered["attempts"][4]["manual"],
            &delivered["attempts"][4]["statusCode"]
        ),
        (&json!(true), &json!(200))
    );
}

#[tokio::test]
async fn during_a_rotation_both_secrets_verify_and_a_retired_one_does_not() {
    let app = TestApp::spawn().await;
    let (new, old, retired) = (new_secret(), new_secret(), new_secret());
    let tomorrow = (chrono::Utc::now() + chrono::Duration::hours(24)).to_rfc3339();
    let yesterday = (chrono::Utc::now() - chrono::Duration::hours(1)).to_rfc3339();
    let mut rust = rust_receiver(&[&new, &old, &retired], vec![Answer::Status(200)]).await;
    let (mut python, _process) = python_receiver(&[&old], "200").await;
    let resolver = system_resolver();
    for url in [&rust.url, &python.url] {
        let mut endpoint = NewEndpoint::new(1, "staff", url, &new);
        endpoint.secrets.push((old.clone(), Some(&tomorrow)));
        endpoint.secrets.push((retired.clone(), Some(&yesterday)));
        register(&app, &endpoint, &LOCAL, resolver.as_ref()).await;
    }
    deliverer(&app, LOCAL, resolver)
        .fan_out(&stock_event("evt-rotation"))
        .await
        .expect("fanned out");

    assert_eq!(
        rust.next().await.verified,
        [true, true, false],
        "new, old, retired (crates.io standardwebhooks)"
    );
    assert_eq!(
        python.next().await.verified,
        [true],
        "the old secret (PyPI standardwebhooks)"
    );
}

#[tokio::test]
async fn a_hanging_receiver_does_not_delay_another_endpoint() {
    let app = TestApp::spawn().await;
    let secret = new_secret();
    let mut hanging = rust_receiver(&[&secret], vec![Answer::Hang]).await;
    let mut answering = rust_receiver(&[&secret], vec![Answer::Status(200)]).await;
    let resolver = system_resolver();
    let slow = register(
        &app,
        &NewEndpoint::new(1, "staff", &hanging.url, &secret),
        &LOCAL,
        resolver.as_ref(),
    )
    .await;
    let quick = register(
        &app,
        &NewEndpoint::new(1, "staff", &answering.url, &secret),
        &LOCAL,
        resolver.as_ref(),
    )
    .await;
    // The hanging attempt outlasts the whole test.
    let attempter = Attempter::new(LOCAL, resolver)
        .expect("TLS")
        .with_timeout(WITHIN * 4);
    deliverer_with(&app, attempter)
        .fan_out(&stock_event("evt-isolated"))
        .await
        .expect("fanned out");

    hanging.next().await;
    answering.next().await;
    delivery_when(&app, quick, "evt-isolated", |d| d["state"] == "delivered").await;
    let stuck = delivery_item(&app, slow, "evt-isolated")
        .await
        .expect("its delivery");
    assert_eq!(
        (stuck["state"].as_str(), stuck["attemptCount"].as_u64()),
        (Some("pending"), Some(0)),
        "still in its first attempt"
    );
}
