//! Through the function binaries themselves: `make run-lambda`'s stack
//! (`cargo lambda watch` with several instances of each function, each
//! serving one request at a time, behind the workspace's router), reached
//! over the network. scripts/test-run-lambda.sh (part of `make test`)
//! starts the stack, warms several instances of each function, and runs
//! these with `--ignored`; without a stack they are skipped.
//!
//! What holds in one process with many tasks must hold across processes
//! that share nothing but DynamoDB: the exact limits, the exact stock, one
//! `Idempotency-Key` raced. And the stack's router sends each request where
//! API Gateway would (checked here without a stack, against template.yaml).

/// The workspace's router for `cargo lambda watch` (Cargo.toml's
/// `[workspace.metadata.lambda.watch.router]`): path, function.
fn watch_router() -> BTreeMap<String, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let output = std::process::Command::new(cargo)
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .current_dir(repo_root())
        .output()
        .expect("cargo metadata runs");
    let metadata: Value =
        serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
    let router = metadata["metadata"]["lambda"]["watch"]["router"]
        .as_object()
        .expect("Cargo.toml has [workspace.metadata.lambda.watch.router]");
    router
        .iter()
        .map(|(path, function)| {
            // Every method of a path to one function, which answers the 405s.
            let function = function.as_str().expect("each path names one function");
            (path.clone(), function.to_string())
        })
        .collect()
}

#[test]
fn the_watch_router_sends_every_path_where_template_yaml_does() {
    let router = watch_router();
    let routes = template_routes();
    let default = routes
        .iter()
        .find(|r| r.path.is_none())
        .map(|r| r.function.clone())
        .expect("template.yaml has a $default route");
    for route in &routes {
        // `$default` is the catch-all (which needs a segment, hence also `/`).
        let paths = match &route.path {
            Some(path) => vec![path.as_str()],
            None => vec!["/{*path}", "/"],
        };
        for path in paths {
            assert_eq!(
                router.get(path),
                Some(&route.function),
                "{}: template.yaml sends it to {}; the router sends {path} to",
                route.route_key(),
                route.function
            );
        }
    }
    // A path template.yaml does not name goes to `$default` when deployed.
    for (path, function) in &router {
        if !routes.iter().any(|r| r.path.as_deref() == Some(path)) {
            assert_eq!(function, &default, "{path}: $default goes to {default}");
        }
    }
}

use crate::deploy::template_routes;
use crate::helpers::{repo_root, TestApp, TestResponse};
use crate::idempotency::races::one_key_takes_effect_once;
use crate::store::races::orders_never_oversell;
use chrono::Timelike;
use futures::future::join_all;
use petstore::ratelimit::Plan;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Duration;

#[tokio::test]
#[ignore = "needs make run-lambda's stack: scripts/test-run-lambda.sh"]
async fn a_flow_across_both_functions() {
    // Given a pet in a category (pets) with 2 units in stock (store)
    let staff = TestApp::on_lambda_stack().await;
    let category = staff.create_category(&unique("Lambda")).await;
    let pet = staff.create_pet("Rex", category, "available").await;
    let stock = json!({ "quantity": 2 });
    staff
        .put(&format!("/store/inventory/{pet}"), stock)
        .await
        .assert_status(200);

    // When a customer orders both units (store)
    let customer = staff.as_customer().await;
    let order = customer
        .post("/store/orders", json!({ "petId": pet, "quantity": 2 }))
        .await;
    order.assert_status(201);
    let order = order.id();

    // Then the pet is pending (pets), and cannot be deleted while the order is open
    // (`GET /pets?ids=`: `GET /pets/{petId}` answers 410 once sunset.)
    let status = |app: TestApp| async move {
        let response = app.get(&format!("/pets?ids={pet}")).await;
        response.assert_status(200);
        response.json()[0]["status"].clone()
    };
    assert_eq!(status(customer.clone()).await, "pending");
    staff
        .delete(&format!("/pets/{pet}"))
        .await
        .assert_error(409, "PET_HAS_OPEN_ORDERS");
    assert_eq!(customer.get("/store/orders").await.ids(), vec![order]);

    // And once staff complete the order (store), the pet is sold (pets)
    staff
        .patch(
            &format!("/store/orders/{order}"),
            json!({ "complete": true }),
        )
        .await
        .assert_status(200);
    assert_eq!(status(customer).await, "sold");
}

#[tokio::test]
#[ignore = "needs make run-lambda's stack: scripts/test-run-lambda.sh"]
async fn unknown_paths_and_methods_answer_as_deployed() {
    let app = TestApp::on_lambda_stack().await;
    // `$default` (the pets function) answers every other path.
    for path in [
        "/",
        "/nowhere",
        "/pets/1/toys",
        "/store",
        "/store/orders/1/items",
    ] {
        app.get(path).await.assert_error(404, "NOT_FOUND");
    }
    // A path's `ANY` route: its function answers the methods it does not serve.
    for (path, allow) in [("/pets", "GET,HEAD,POST"), ("/store/inventory", "GET,HEAD")] {
        let refused = app.patch(path, json!({})).await;
        refused.assert_error(405, "METHOD_NOT_ALLOWED");
        assert_eq!(refused.header("allow"), Some(allow), "{path}");
    }
    // The OpenAPI document, from the pets function, needs no key. cargo
    // lambda watch itself now and then answers this large response with its
    // own 500 (problem+json, not our Error record) while the function's log
    // says 200: that flake of the local dev server is retried; a 500 of ours
    // is not.
    let mut document = app.without_key().get("/openapi.json").await;
    for _ in 0..3 {
        if !(document.status == 500 && document.json().get("code").is_none()) {
            break;
        }
        document = app.without_key().get("/openapi.json").await;
    }
    document.assert_status(200);
    assert_eq!(
        document.json()["openapi"].as_str().map(|v| &v[..2]),
        Some("3.")
    );
}

#[tokio::test]
#[ignore = "needs make run-lambda's stack: scripts/test-run-lambda.sh"]
async fn exactly_the_limit_is_admitted_across_both_functions_and_their_instances() {
    // Given a key allowing 10 requests a day, and not a minute before midnight
    let app = TestApp::on_lambda_stack().await;
    let app = app
        .with_new_key(Plan::Enterprise, Some((1_000_000, 10)))
        .await;
    let now = chrono::Utc::now();
    let to_midnight = 86_400 - i64::from(now.num_seconds_from_midnight());
    if to_midnight < 60 {
        tokio::time::sleep(Duration::from_secs(to_midnight.unsigned_abs() + 1)).await;
    }

    // When 30 requests arrive at once, alternating between the functions
    let requests = (0..30).map(|i| {
        let app = app.clone();
        let path = if i % 2 == 0 {
            "/categories"
        } else {
            "/store/orders"
        };
        tokio::spawn(async move { app.get(path).await })
    });
    let responses: Vec<TestResponse> = join_all(requests)
        .await
        .into_iter()
        .map(|joined| joined.expect("request task"))
        .collect();

    // Then exactly 10 succeed and the other 20 are refused
    let ok = responses.iter().filter(|r| r.status == 200).count();
    let limited: Vec<&TestResponse> = responses.iter().filter(|r| r.status != 200).collect();
    assert_eq!(ok, 10, "statuses: {:?}", statuses(&responses));
    assert_eq!(limited.len(), 20);
    for response in limited {
        response.assert_error(429, "RATE_LIMITED");
        assert_eq!(response.header("x-ratelimit-remaining"), Some("0"));
    }
}

#[tokio::test]
#[ignore = "needs make run-lambda's stack: scripts/test-run-lambda.sh"]
async fn concurrent_orders_never_sell_more_than_the_stock() {
    orders_never_oversell(TestApp::on_lambda_stack().await).await;
}

#[tokio::test]
#[ignore = "needs make run-lambda's stack: scripts/test-run-lambda.sh"]
async fn concurrent_requests_with_one_key_take_effect_once() {
    one_key_takes_effect_once(TestApp::on_lambda_stack().await).await;
}

fn unique(prefix: &str) -> String {
    format!("{prefix} {:08x}", rand::random::<u32>())
}

fn statuses(responses: &[TestResponse]) -> Vec<u16> {
    responses.iter().map(|r| r.status).collect()
}
