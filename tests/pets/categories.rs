//! Categories: created, read, listed, renamed and deleted, their names
//! unique ignoring case.

use super::{ids, next_url};
use crate::helpers::TestApp;
use futures::future::join_all;
use serde_json::json;

#[tokio::test]
async fn categories_are_created_read_and_listed() {
    let app = TestApp::spawn().await;
    let response = app
        .post(
            "/categories",
            json!({ "name": "Dogs", "description": "Loyal" }),
        )
        .await;
    response.assert_status(201);
    let id = response.id();
    assert_eq!(
        response.header("location"),
        Some(format!("/categories/{id}").as_str())
    );
    assert_eq!(
        response.json(),
        json!({ "id": id, "name": "Dogs", "description": "Loyal" })
    );
    assert_eq!(
        app.get(&format!("/categories/{id}")).await.json(),
        response.json()
    );

    let bare = app.post("/categories", json!({ "name": "Cats" })).await;
    assert_eq!(
        bare.json(),
        json!({ "id": bare.id(), "name": "Cats" }),
        "no null description"
    );

    let first = app.get("/categories?limit=1").await;
    assert_eq!(ids(&first), vec![id]);
    let second = app.get(&next_url(&first).unwrap_or_default()).await;
    assert_eq!(ids(&second), vec![bare.id()]);
    assert_eq!(next_url(&second), None);
    app.get("/categories/4242424242")
        .await
        .assert_error(404, "NOT_FOUND");
}

#[tokio::test]
async fn category_names_are_unique_ignoring_case() {
    let app = TestApp::spawn().await;
    app.create_category("Dogs").await;
    app.post("/categories", json!({ "name": "dOGS" }))
        .await
        .assert_error(409, "CATEGORY_EXISTS");
    let cats = app.create_category("Cats").await;
    app.put(&format!("/categories/{cats}"), json!({ "name": "DOGS" }))
        .await
        .assert_error(409, "CATEGORY_EXISTS");

    // A rename frees the old name and may change only the case.
    let renamed = app
        .put(
            &format!("/categories/{cats}"),
            json!({ "name": "CATS", "description": "Aloof" }),
        )
        .await;
    renamed.assert_status(200);
    assert_eq!(
        renamed.json(),
        json!({ "id": cats, "name": "CATS", "description": "Aloof" })
    );
    app.put(&format!("/categories/{cats}"), json!({ "name": "Felines" }))
        .await
        .assert_status(200);
    app.create_category("cats").await;
    assert!(app
        .get(&format!("/categories/{cats}"))
        .await
        .json()
        .get("description")
        .is_none());
}

#[tokio::test]
async fn concurrent_creates_of_one_name_make_one_category() {
    let app = TestApp::spawn().await;
    let responses = join_all((0..10).map(|i| {
        let app = app.clone();
        let name = if i % 2 == 0 { "Birds" } else { "BIRDS" };
        tokio::spawn(async move { app.post("/categories", json!({ "name": name })).await })
    }))
    .await;
    let statuses: Vec<u16> = responses
        .into_iter()
        .map(|r| r.expect("task ran").status)
        .collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        9,
        "{statuses:?}"
    );
}

#[tokio::test]
async fn a_category_in_use_cannot_be_deleted() {
    let app = TestApp::spawn().await;
    let category = app.create_category("Dogs").await;
    let pet = app.create_pet("Rex", category, "available").await;
    app.delete(&format!("/categories/{category}"))
        .await
        .assert_error(409, "CATEGORY_IN_USE");
    app.delete(&format!("/pets/{pet}")).await.assert_status(204);
    app.delete(&format!("/categories/{category}"))
        .await
        .assert_status(204);
    app.get(&format!("/categories/{category}"))
        .await
        .assert_error(404, "NOT_FOUND");
    // Its name is free again.
    app.create_category("dogs").await;
}

#[tokio::test]
async fn invalid_categories_are_refused() {
    let app = TestApp::spawn().await;
    for body in [
        json!({}),
        json!({ "name": "" }),
        json!({ "name": "Dogs", "description": "x".repeat(501) }),
        json!({ "name": "Dogs", "description": 5 }),
    ] {
        app.post("/categories", body)
            .await
            .assert_error(400, "VALIDATION_FAILED");
    }
    app.post(
        "/categories",
        json!({ "name": "Dogs", "description": "x".repeat(500) }),
    )
    .await
    .assert_status(201);
}
