//! Pets and categories (contract sections 1–3, tag Pets).

#[path = "common/mod.rs"]
mod common;

use common::TestApp;

#[tokio::test]
async fn a_created_pet_can_be_read_back() {
    // Given a category
    let app = TestApp::spawn().await;
    let category_id = app.create_category("Dogs").await;

    // When a pet is created in it
    let pet_id = app.create_pet("Rex", category_id, "available").await;

    // Then it reads back as created
    let response = app.get(&format!("/pets/{pet_id}")).await;
    response.assert_status(200);
    let pet = response.json();
    assert_eq!(pet["id"], pet_id);
    assert_eq!(pet["name"], "Rex");
    assert_eq!(pet["categoryId"], category_id);
    assert_eq!(pet["status"], "available");
}
