use super::*;
use chrono::TimeZone;
use petstore::db::Item;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// An item from its JSON (numbers become DynamoDB numbers).
fn item(value: Value) -> Item {
    let item: serde_dynamo::Item = serde_dynamo::to_item(value).expect("a JSON object");
    item.into()
}

fn pet(status: &str, stock: u32, open: u32) -> Item {
    item(json!({
        "PK": "PET#5", "SK": "PET", "GSI1PK": "PET#1", "id": 5, "name": "Rex",
        "categoryId": 2, "status": status, "stock": stock, "openOrders": open
    }))
}

/// A pet item with a stock item beside it: the record alone.
fn pet_record(status: &str) -> Item {
    item(json!({
        "PK": "PET#5", "SK": "PET", "GSI1PK": "PET#0", "id": 5, "name": "Rex",
        "categoryId": 2, "status": status
    }))
}

fn stock_item(status: &str, stock: u32, open: u32) -> Item {
    item(json!({
        "PK": "PET#5", "SK": "STOCK", "GSI5PK": "PET#5", "id": 5,
        "status": status, "stock": stock, "openOrders": open
    }))
}

fn order(complete: bool, ship_date: Option<&str>) -> Item {
    let mut order = json!({
        "PK": "ORDER#9", "SK": "ORDER", "id": 9, "petId": 5, "quantity": 2,
        "complete": complete, "ownerId": 7
    });
    if let Some(date) = ship_date {
        order["shipDate"] = json!(date);
    }
    item(order)
}

fn category(name: &str, pets: u64) -> Item {
    item(json!({"PK": "CATEGORY#2", "SK": "CATEGORY", "id": 2, "name": name, "petCount": pets}))
}

fn change(old: Option<Item>, new: Option<Item>) -> Change {
    Change {
        event_id: "e1".into(),
        sequence: "4200".into(),
        at: Utc.with_ymd_and_hms(2026, 7, 1, 12, 0, 0).unwrap(),
        old,
        new,
    }
}

fn types(change: &Change) -> Vec<&'static str> {
    events_of(change)
        .expect("readable images")
        .into_iter()
        .map(|e| e.detail_type)
        .collect()
}

#[test]
fn a_new_pet_is_created_with_its_first_stock_level() -> TestResult {
    let events = events_of(&change(None, Some(pet("available", 1, 0))))?;
    assert_eq!(events.len(), 2);
    assert_eq!(events[0].detail_type, "PetCreated");
    assert_eq!(
        events[0].detail,
        json!({
            "pet": {"id": 5, "name": "Rex", "categoryId": 2, "status": "available"},
            "eventId": "19f1d8ce200-e1-0", "occurredAt": "2026-07-01T12:00:00.000Z", "sequence": "42000"
        })
    );
    assert_eq!(events[1].detail_type, "StockChanged");
    assert_eq!(events[1].detail["quantity"], 1);
    assert_eq!(events[1].detail["previousQuantity"], 0);
    assert_eq!(
        (events[1].event_id(), events[1].sequence()),
        ("19f1d8ce200-e1-1", "42001")
    );
    Ok(())
}

#[test]
fn a_pet_change_announces_its_record_and_its_stock_apart() {
    // An order took the last unit: the pet went pending.
    let sold_out = change(Some(pet("available", 1, 0)), Some(pet("pending", 0, 1)));
    assert_eq!(types(&sold_out), ["PetUpdated", "StockChanged"]);
    // Only its open orders moved (completing an order of a pet in stock).
    let counted = change(Some(pet("available", 3, 1)), Some(pet("available", 3, 0)));
    assert!(types(&counted).is_empty());
    let restocked = change(Some(pet("sold", 0, 0)), Some(pet("available", 4, 0)));
    let events = events_of(&restocked).expect("readable");
    assert_eq!(events[0].detail["previous"]["status"], "sold");
    assert_eq!(events[0].detail["pet"]["status"], "available");
    assert_eq!(events[1].detail["previousQuantity"], 0);
    // A deleted pet's inventory entry goes with it unannounced.
    assert_eq!(
        types(&change(Some(pet("sold", 0, 0)), None)),
        ["PetDeleted"]
    );
}

#[test]
fn orders_are_placed_completed_and_cancelled() -> TestResult {
    let placed = events_of(&change(None, Some(order(false, None))))?;
    assert_eq!(placed[0].detail_type, "OrderPlaced");
    assert_eq!(
        placed[0].detail["order"],
        json!({"id": 9, "petId": 5, "quantity": 2, "complete": false, "ownerId": 7})
    );
    let when = Some("2026-07-02T00:00:00.000Z");
    assert_eq!(
        types(&change(Some(order(false, None)), Some(order(true, when)))),
        ["OrderCompleted"]
    );
    // A new ship date alone is no event of the contract's.
    assert!(types(&change(Some(order(false, None)), Some(order(false, when)))).is_empty());
    assert_eq!(
        types(&change(Some(order(false, None)), None)),
        ["OrderCancelled"]
    );
    let cancelled = events_of(&change(Some(order(false, None)), None))?;
    assert_eq!(cancelled[0].detail.get("lapsed"), None);
    Ok(())
}

#[test]
fn a_lapse_is_one_cancellation_marked_lapsed() -> TestResult {
    let marked = item(json!({
        "PK": "ORDER#9", "SK": "ORDER", "id": 9, "petId": 5, "quantity": 2,
        "complete": false, "ownerId": 7, "lapsing": true
    }));
    // The mark itself announces nothing: the removal that follows does.
    assert!(types(&change(Some(order(false, None)), Some(marked.clone()))).is_empty());
    let lapsed = events_of(&change(Some(marked), None))?;
    assert_eq!(
        types(&change(Some(order(false, None)), None)),
        ["OrderCancelled"]
    );
    assert_eq!(lapsed.len(), 1);
    assert_eq!(lapsed[0].detail_type, "OrderCancelled");
    assert_eq!(lapsed[0].detail["lapsed"], json!(true));
    assert_eq!(lapsed[0].detail["order"]["id"], json!(9));
    assert_eq!(lapsed[0].detail["order"].get("lapsing"), None);
    Ok(())
}

#[test]
fn categories_announce_their_record_not_their_pet_count() {
    assert_eq!(
        types(&change(None, Some(category("Dogs", 0)))),
        ["CategoryCreated"]
    );
    assert!(types(&change(
        Some(category("Dogs", 0)),
        Some(category("Dogs", 1))
    ))
    .is_empty());
    assert_eq!(
        types(&change(
            Some(category("Dogs", 1)),
            Some(category("Hounds", 1))
        )),
        ["CategoryUpdated"]
    );
    assert_eq!(
        types(&change(Some(category("Dogs", 0)), None)),
        ["CategoryDeleted"]
    );
}

#[test]
fn internal_items_announce_nothing() {
    for (pk, sk) in [
        ("APIKEY#ab", "APIKEY"),
        ("IDEMPOTENCY#7#cd", "IDEMPOTENCY"),
        ("CATEGORYNAME#dogs", "CATEGORYNAME"),
    ] {
        let internal = item(json!({"PK": pk, "SK": sk, "status": 201, "expiresAt": 1}));
        assert!(types(&change(None, Some(internal.clone()))).is_empty());
        assert!(types(&change(Some(internal), None)).is_empty());
    }
}

#[test]
fn a_record_that_names_a_kind_but_is_not_one_is_an_error() {
    let broken = item(json!({"PK": "ORDER#9", "SK": "ORDER", "id": "nine"}));
    assert!(events_of(&change(None, Some(broken))).is_err());
}

#[test]
fn a_redelivered_record_yields_the_same_events() {
    let record = change(Some(pet("available", 1, 0)), Some(pet("pending", 0, 1)));
    assert_eq!(
        events_of(&record).expect("readable"),
        events_of(&record.clone()).expect("readable")
    );
}

#[test]
fn a_pet_with_a_stock_item_is_created_with_its_first_stock_level_once() -> TestResult {
    // Its pet item announces both (the first level is the rules' initial
    // stock); the stock item made in the same transaction announces nothing.
    for (status, first) in [("available", 1), ("sold", 0)] {
        let events = events_of(&change(None, Some(pet_record(status))))?;
        let kinds: Vec<_> = events.iter().map(|e| e.detail_type).collect();
        assert_eq!(kinds, ["PetCreated", "StockChanged"]);
        assert_eq!(events[1].detail["quantity"], first);
        assert_eq!(events[1].detail["previousQuantity"], 0);
    }
    assert!(types(&change(None, Some(stock_item("available", 1, 0)))).is_empty());
    Ok(())
}

#[test]
fn a_stock_item_announces_its_stock_and_nothing_else() -> TestResult {
    let sold = change(
        Some(stock_item("available", 3, 0)),
        Some(stock_item("available", 1, 1)),
    );
    let events = events_of(&sold)?;
    assert_eq!(events.len(), 1);
    assert_eq!(
        (
            &events[0].detail["petId"],
            &events[0].detail["quantity"],
            &events[0].detail["previousQuantity"]
        ),
        (&json!(5), &json!(1), &json!(3))
    );
    // Its open orders or its status copy alone: no event (the pet item's
    // own change announces the status).
    let completed = change(
        Some(stock_item("pending", 0, 1)),
        Some(stock_item("sold", 0, 0)),
    );
    assert!(types(&completed).is_empty());
    // Removed with its pet: the pet item's removal announces it.
    assert!(types(&change(Some(stock_item("sold", 0, 0)), None)).is_empty());
    Ok(())
}

#[test]
fn a_pet_s_stock_moved_to_its_stock_item_announces_nothing() {
    // Migration 0001's stock-items backfill: the pet item loses its stock,
    // and the stock item is made with the same figures.
    let moved = change(Some(pet("available", 2, 1)), Some(pet_record("available")));
    assert!(types(&moved).is_empty());
    assert!(types(&change(None, Some(stock_item("available", 2, 1)))).is_empty());
}
