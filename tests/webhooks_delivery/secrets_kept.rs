//! Secrets stay with their owner (section 9, "Secrets"): after a whole
//! webhook flow (registered with an `Idempotency-Key` and replayed, its
//! secret rotated with the old one retired at once, pinged and delivered
//! signed), no secret's bytes are in the table's stream records, in any of
//! its items (idempotency records included) or in the data export.

use super::receivers::{rust_receiver, Answer};
use super::*;
use crate::idempotency::send_keyed;
use crate::webhooks::{resolving, set_attributes, RECEIVER};
use base64::Engine;
use http::Method;
use petstore_admin::copy::export;
use petstore_admin::scan::ScanOptions;

#[tokio::test]
async fn no_secret_is_in_the_stream_the_items_or_the_export_after_a_whole_flow() {
    let staff = TestApp::spawn().await;
    let customer = staff.as_customer().await;
    resolving(&customer);
    let (id, first, second) = registered_replayed_and_rotated(&customer).await;

    // The receiver knows both: only the new one signs, the old retired at once.
    let mut receiver = rust_receiver(&[&first, &second], vec![Answer::Status(200)]).await;
    let url = AttributeValue::S(receiver.url.clone());
    let pk = format!("WEBHOOK#{id}");
    set_attributes(&customer, pk, "ENDPOINT".into(), &[("url", url)]).await;
    let ping = customer
        .post(&format!("/webhooks/{id}/ping"), json!({}))
        .await;
    ping.assert_status(202);
    let deliverer = deliverer(&staff, LOCAL, system_resolver());
    for message in customer.hooks.queue.take() {
        deliverer.deliver(&message, 1).await.expect("delivered");
    }
    assert_eq!(receiver.next().await.verified, [false, true]);

    let needles = needles(&[&first, &second]);
    let items = table_bytes(&staff).await;
    let stream = stream_bytes(&staff).await;
    let mut exported = Vec::new();
    let db = &staff.app.db;
    export(
        db.client(),
        db.table(),
        ScanOptions::default(),
        &mut exported,
    )
    .await
    .expect("exported");
    // What is searched holds what the flow wrote, so a search that finds
    // nothing has looked in the right place.
    assert!(contains(&items, b"IDEMPOTENCY#") && contains(&items, b"whsealed_v1."));
    assert!(contains(&stream, format!("WEBHOOK#{id}").as_bytes()));
    assert!(contains(&stream, b"whsealed_v1."));
    for (place, haystack) in [
        ("items", &items),
        ("stream", &stream),
        ("export", &exported),
    ] {
        for needle in &needles {
            assert!(
                !contains(haystack, needle),
                "a secret's bytes in the {place}"
            );
        }
    }
}

/// Registers an endpoint with an `Idempotency-Key`, replays it (no secret
/// again), and rotates its secret retiring the old one at once; answers the
/// endpoint's id and its two secrets.
async fn registered_replayed_and_rotated(customer: &TestApp) -> (u64, String, String) {
    let body = json!({"url": RECEIVER, "description": "kept"});
    let created = send_keyed(customer, Method::POST, "/webhooks", Some(&body), "hook-1").await;
    created.assert_status(201);
    let id = created.json()["id"].as_u64().expect("an id");
    let first = created.json()["secret"]
        .as_str()
        .expect("a secret")
        .to_string();
    let replayed = send_keyed(customer, Method::POST, "/webhooks", Some(&body), "hook-1").await;
    replayed.assert_status(201);
    assert_eq!(replayed.header("idempotent-replayed"), Some("true"));
    assert_eq!(replayed.json()["id"], id);
    assert!(
        replayed.json().get("secret").is_none(),
        "the replay has no secret"
    );
    let at_once = json!({"expireOldAfterSeconds": 0});
    let path = format!("/webhooks/{id}/secret");
    let rotated = send_keyed(customer, Method::POST, &path, Some(&at_once), "rotate-1").await;
    rotated.assert_status(200);
    let second = rotated.json()["secret"]
        .as_str()
        .expect("a secret")
        .to_string();
    (id, first, second)
}

/// Each secret as sent, its base64 part, and its 32 raw bytes.
fn needles(secrets: &[&str]) -> Vec<Vec<u8>> {
    let mut needles = Vec::new();
    for secret in secrets {
        let encoded = secret.strip_prefix("whsec_").expect("a whsec_ secret");
        let raw = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .expect("base64");
        needles.extend([secret.as_bytes().to_vec(), encoded.as_bytes().to_vec(), raw]);
    }
    needles
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// Every string and binary of every item of the table, one after another.
async fn table_bytes(app: &TestApp) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut pages = app
        .app
        .db
        .client()
        .scan()
        .table_name(&app.app.config.table_name)
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        for item in page.expect("a page").items() {
            item.values().for_each(|value| flatten(value, &mut bytes));
        }
    }
    bytes
}

fn flatten(value: &AttributeValue, out: &mut Vec<u8>) {
    match value {
        AttributeValue::S(text) | AttributeValue::N(text) => out.extend(text.as_bytes()),
        AttributeValue::B(blob) => out.extend(blob.as_ref()),
        AttributeValue::L(list) => list.iter().for_each(|v| flatten(v, out)),
        AttributeValue::M(map) => map.values().for_each(|v| flatten(v, out)),
        AttributeValue::Ss(texts) => texts.iter().for_each(|t| out.extend(t.as_bytes())),
        other => out.extend(format!("{other:?}").as_bytes()),
    }
    out.push(b'\n');
}

/// Every record of the table's stream, old and new images, as [`flatten`].
async fn stream_bytes(app: &TestApp) -> Vec<u8> {
    use aws_sdk_dynamodbstreams::types::{AttributeValue as Streamed, ShardIteratorType};
    fn streamed(value: &Streamed, out: &mut Vec<u8>) {
        match value {
            Streamed::S(text) | Streamed::N(text) => out.extend(text.as_bytes()),
            Streamed::B(blob) => out.extend(blob.as_ref()),
            Streamed::L(list) => list.iter().for_each(|v| streamed(v, out)),
            Streamed::M(map) => map.values().for_each(|v| streamed(v, out)),
            other => out.extend(format!("{other:?}").as_bytes()),
        }
        out.push(b'\n');
    }
    let table = app
        .app
        .db
        .client()
        .describe_table()
        .table_name(&app.app.config.table_name)
        .send()
        .await
        .expect("the table");
    let arn = table
        .table
        .and_then(|t| t.latest_stream_arn)
        .expect("a stream");
    let client = events::local::local_streams_client(&app.endpoint);
    let described = client.describe_stream().stream_arn(&arn).send().await;
    let shards = described
        .expect("the stream")
        .stream_description
        .map(|d| d.shards.unwrap_or_default())
        .unwrap_or_default();
    let mut bytes = Vec::new();
    for shard in shards {
        let iterator = client
            .get_shard_iterator()
            .stream_arn(&arn)
            .shard_id(shard.shard_id.unwrap_or_default())
            .shard_iterator_type(ShardIteratorType::TrimHorizon)
            .send()
            .await
            .expect("an iterator");
        let mut next = iterator.shard_iterator;
        while let Some(at) = next {
            let got = client.get_records().shard_iterator(at).send().await;
            let got = got.expect("records");
            if got.records().is_empty() {
                break;
            }
            for record in got.records() {
                let images = record
                    .dynamodb
                    .iter()
                    .flat_map(|r| [r.old_image.as_ref(), r.new_image.as_ref(), r.keys.as_ref()]);
                for image in images.flatten() {
                    image.values().for_each(|v| streamed(v, &mut bytes));
                }
            }
            next = got.next_shard_iterator;
        }
    }
    bytes
}
