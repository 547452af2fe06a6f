//! Who may do what (contract 4a), row by row of its table, through the real
//! router and wrapper. Order ownership (own orders only, 404 for another
//! customer's, races between customers) is in `store`.

use crate::helpers::TestApp;
use http::Method;
use petstore::http::access::Access;
use petstore::records::Role;
use serde_json::{json, Value};

/// A catalogue with one available pet (stock 5) and one order of it, made by
/// staff; and a customer of the same store.
struct Shop {
    staff: TestApp,
    customer: TestApp,
    category: u64,
    pet: u64,
    order: u64,
}

async fn shop() -> Shop {
    let staff = TestApp::spawn().await;
    let category = staff.create_category("Dogs").await;
    let pet = staff.create_pet("Rex", category, "available").await;
    staff
        .put(&format!("/store/inventory/{pet}"), json!({"quantity": 5}))
        .await
        .assert_status(200);
    let order = staff
        .post("/store/orders", json!({"petId": pet}))
        .await
        .id();
    let customer = staff.as_customer().await;
    Shop {
        staff,
        customer,
        category,
        pet,
        order,
    }
}

/// Every operation a customer is refused, with a body that would be valid.
fn staff_only(shop: &Shop) -> Vec<(Method, String, Option<Value>)> {
    staff_only_on(shop.category, shop.pet, shop.order)
}

/// [`staff_only`] on category `c`, pet `p` and order `o`.
fn staff_only_on(c: u64, p: u64, o: u64) -> Vec<(Method, String, Option<Value>)> {
    let pet = json!({"name": "Max", "categoryId": c});
    vec![
        (Method::POST, "/pets".into(), Some(pet.clone())),
        (Method::PUT, format!("/pets/{p}"), Some(pet)),
        (
            Method::PATCH,
            format!("/pets/{p}"),
            Some(json!({"name": "Max"})),
        ),
        (Method::DELETE, format!("/pets/{p}"), None),
        (
            Method::POST,
            "/categories".into(),
            Some(json!({"name": "Cats"})),
        ),
        (
            Method::PUT,
            format!("/categories/{c}"),
            Some(json!({"name": "Cats"})),
        ),
        (Method::DELETE, format!("/categories/{c}"), None),
        (
            Method::PUT,
            format!("/store/inventory/{p}"),
            Some(json!({"quantity": 0})),
        ),
        (
            Method::PATCH,
            format!("/store/orders/{o}"),
            Some(json!({"complete": true})),
        ),
    ]
}

/// Each staff-only row of `ACCESS` is one a customer tries above: a
/// staff-only operation added without its row in [`staff_only`] fails here,
/// by name, instead of going untried.
#[test]
fn every_staff_only_operation_of_access_is_tried_by_a_customer() {
    let tried = staff_only_on(11, 22, 33);
    let fills = |template: &str, path: &str| {
        let (template, path): (Vec<_>, Vec<_>) =
            (template.split('/').collect(), path.split('/').collect());
        template.len() == path.len()
            && template
                .iter()
                .zip(&path)
                .all(|(t, p)| (t.starts_with('{') && t.ends_with('}')) || t == p)
    };
    let untried: Vec<String> = petstore::http::access::ACCESS
        .iter()
        .filter(|(_, _, access)| {
            matches!(access, Access::Roles(roles) if !roles.contains(&Role::Customer))
        })
        .filter(|(method, template, _)| {
            !tried
                .iter()
                .any(|(m, path, _)| m == method && fills(template, path))
        })
        .map(|(method, template, _)| format!("{method} {template}"))
        .collect();
    assert!(
        untried.is_empty(),
        "staff-only operations of ACCESS that no customer tries: {untried:?}; add each \
         to staff_only in tests/roles.rs, with a body that would be valid"
    );
}

async fn call(
    app: &TestApp,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> crate::helpers::TestResponse {
    match body {
        Some(body) => app.send_json(method, path, body).await,
        None => app.send(method, path).await,
    }
}

#[tokio::test]
async fn a_customer_gets_403_for_every_staff_operation_and_nothing_changes() {
    // Given a shop and a customer
    let shop = shop().await;

    for (method, path, body) in staff_only(&shop) {
        // When the customer calls a staff operation
        let response = call(&shop.customer, method.clone(), &path, body.as_ref()).await;

        // Then it is the Error record FORBIDDEN, with every header
        response.assert_error(403, "FORBIDDEN");
        for header in [
            "x-request-id",
            "x-ratelimit-limit",
            "x-ratelimit-remaining",
            "x-ratelimit-reset",
            "ratelimit-policy",
            "ratelimit",
        ] {
            assert!(
                response.header(header).is_some(),
                "{method} {path}: no {header}"
            );
        }
    }

    // And nothing was changed
    let pet = shop
        .staff
        .get(&format!("/store/inventory/{}", shop.pet))
        .await;
    assert_eq!(pet.json()["quantity"], 4);
    let order = shop
        .staff
        .get(&format!("/store/orders/{}", shop.order))
        .await;
    assert_eq!(order.json()["complete"], false);
    shop.staff
        .get(&format!("/categories/{}", shop.category))
        .await
        .assert_status(200);
}

#[tokio::test]
async fn the_role_is_checked_before_the_body_is_read_or_any_record_looked_up() {
    let shop = shop().await;
    // A malformed body would be 400, a missing pet 404: the role comes first.
    let response = super::pets::raw(
        &shop.customer,
        Method::POST,
        "/pets",
        Some("application/json"),
        "{not json",
    )
    .await;
    response.assert_error(403, "FORBIDDEN");
    shop.customer
        .delete("/pets/9007199254740991")
        .await
        .assert_error(403, "FORBIDDEN");
    shop.customer
        .put("/store/inventory/9007199254740991", json!({"quantity": -1}))
        .await
        .assert_error(403, "FORBIDDEN");
}

#[tokio::test]
async fn a_403_is_counted_like_any_request() {
    let shop = shop().await;
    let remaining = |response: &crate::helpers::TestResponse| -> u64 {
        response
            .header("x-ratelimit-remaining")
            .and_then(|v| v.parse().ok())
            .unwrap_or(u64::MAX)
    };
    let first = shop
        .customer
        .post("/categories", json!({"name": "Cats"}))
        .await;
    let second = shop
        .customer
        .post("/categories", json!({"name": "Cats"}))
        .await;
    second.assert_error(403, "FORBIDDEN");
    assert_eq!(remaining(&first) - 1, remaining(&second));
}

#[tokio::test]
async fn a_customer_reads_the_catalogue_and_places_and_cancels_orders() {
    // Given a shop and a customer
    let shop = shop().await;
    let (c, p) = (shop.category, shop.pet);

    // Then every read of the catalogue and the inventory is allowed
    for path in [
        "/pets".to_string(),
        format!("/pets?ids={p}"),
        format!("/pets/{p}"),
        "/categories".to_string(),
        format!("/categories/{c}"),
        "/store/inventory".to_string(),
        format!("/store/inventory/{p}"),
        "/store/orders".to_string(),
    ] {
        shop.customer.get(&path).await.assert_status(200);
    }

    // And the customer places an order, reads it and cancels it
    let order = shop
        .customer
        .post("/store/orders", json!({"petId": p}))
        .await;
    order.assert_status(201);
    let path = format!("/store/orders/{}", order.id());
    shop.customer.get(&path).await.assert_status(200);
    shop.customer.delete(&path).await.assert_status(204);
}

#[tokio::test]
async fn staff_may_do_everything_a_customer_may_not() {
    let shop = shop().await;
    for (method, path, body) in staff_only(&shop) {
        let response = call(&shop.staff, method.clone(), &path, body.as_ref()).await;
        assert!(
            (200..300).contains(&response.status) || response.status == 409,
            "{method} {path}: {}",
            response.text()
        );
    }
}

#[tokio::test]
async fn the_openapi_document_needs_no_key_and_no_role() {
    let shop = shop().await;
    shop.customer
        .without_key()
        .get("/openapi.json")
        .await
        .assert_status(200);
    shop.customer.get("/openapi.json").await.assert_status(200);
}
