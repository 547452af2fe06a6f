//! Lists of pets: pages with a next link that keeps the filters, the
//! filters, and look-up by ids.

use super::{ids, next_url};
use crate::helpers::TestApp;

#[tokio::test]
async fn pets_list_in_pages_with_a_next_link_keeping_the_filters() {
    let app = TestApp::spawn().await;
    let dogs = app.create_category("Dogs").await;
    let cats = app.create_category("Cats").await;
    let mut available_dogs = Vec::new();
    for i in 0..5 {
        available_dogs.push(app.create_pet(&format!("Dog {i}"), dogs, "available").await);
    }
    let sold_dog = app.create_pet("Old dog", dogs, "sold").await;
    let cat = app.create_pet("Cat", cats, "available").await;

    // Default page holds everything here; ids ascend.
    let all = ids(&app.get("/pets").await);
    assert_eq!(all.len(), 7);
    assert!(all.windows(2).all(|w| w[0] < w[1]));

    // Filters, alone and together.
    assert_eq!(
        ids(&app.get(&format!("/pets?categoryId={cats}")).await),
        vec![cat]
    );
    assert_eq!(ids(&app.get("/pets?status=sold").await), vec![sold_dog]);
    assert_eq!(
        ids(&app
            .get(&format!("/pets?categoryId={dogs}&status=available"))
            .await),
        available_dogs
    );

    // Paging through a filtered list.
    let mut seen = Vec::new();
    let mut next = Some(format!("/pets?categoryId={dogs}&status=available&limit=2"));
    let mut pages = 0;
    while let Some(url) = next {
        let page = app.get(&url).await;
        page.assert_status(200);
        seen.extend(ids(&page));
        next = next_url(&page);
        if let Some(url) = &next {
            assert!(
                url.contains(&format!("categoryId={dogs}"))
                    && url.contains("status=available")
                    && url.contains("limit=2"),
                "{url}"
            );
        }
        pages += 1;
        assert!(pages <= 3, "paging must end");
    }
    assert_eq!(seen, available_dogs);
}

#[tokio::test]
async fn bad_list_parameters_are_400() {
    let app = TestApp::spawn().await;
    for query in [
        "limit=0",
        "limit=101",
        "limit=ten",
        "status=lost",
        "categoryId=-3",
        "cursor=abc",
        "ids=1,x",
    ] {
        let response = app.get(&format!("/pets?{query}")).await;
        response.assert_error(400, "VALIDATION_FAILED");
    }
    // A cursor from another list is not valid here.
    let category = app.create_category("A").await;
    app.create_category("B").await;
    let _ = category;
    let page = app.get("/categories?limit=1").await;
    let foreign = next_url(&page).unwrap_or_default();
    let cursor = foreign
        .split("cursor=")
        .nth(1)
        .unwrap_or_default()
        .to_string();
    app.get(&format!("/pets?cursor={cursor}"))
        .await
        .assert_error(400, "VALIDATION_FAILED");
}

#[tokio::test]
async fn ids_look_up_pets_in_the_order_asked_leaving_out_missing_ones() {
    let app = TestApp::spawn().await;
    let category = app.create_category("Dogs").await;
    let a = app.create_pet("A", category, "available").await;
    let b = app.create_pet("B", category, "pending").await;
    let c = app.create_pet("C", category, "sold").await;

    let response = app.get(&format!("/pets?ids={c},4242424242,{a},{b}")).await;

    response.assert_status(200);
    assert_eq!(ids(&response), vec![c, a, b]);
    assert_eq!(
        ids(&app
            .get(&format!("/pets?ids={c},{a},{b}&status=pending"))
            .await),
        vec![b]
    );
    let too_many: Vec<String> = (1..=101).map(|i| i.to_string()).collect();
    app.get(&format!("/pets?ids={}", too_many.join(",")))
        .await
        .assert_error(400, "VALIDATION_FAILED");
    let hundred: Vec<String> = (1..=100).map(|i| i.to_string()).collect();
    app.get(&format!("/pets?ids={}", hundred.join(",")))
        .await
        .assert_status(200);
}
