//! `asyncapi.yaml` holds the emitted events: each, as EventBridge delivers
//! it, is validated against its message's payload schema, closed (a field
//! the schema does not list fails) and compiled once, by the `jsonschema`
//! crate (`helpers/schema.rs` says how the schemas are read; an unknown
//! `format` fails to compile). Every event a test's bus is given
//! ([`super::Collect`]) passes through [`assert_conform`].
//!
//! A schema only catches what some event carries, so one scenario here
//! announces every message with every optional field set at least once,
//! and fails naming a message or a field it never saw: a field added to
//! `asyncapi.yaml` must be added to the scenario too.

use super::stream_events;
use crate::helpers::schema::{closed, compile, violations};
use crate::helpers::TestApp;
use events::publish::Delivered;
use events::DomainEvent;
use jsonschema::Validator;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

/// Each message of `asyncapi.yaml`, by `detail-type`: its closed payload
/// schema and that schema compiled.
fn messages() -> &'static BTreeMap<String, (Value, Validator)> {
    static MESSAGES: OnceLock<BTreeMap<String, (Value, Validator)>> = OnceLock::new();
    MESSAGES.get_or_init(|| {
        let document = document();
        let messages = document["components"]["messages"].as_object();
        let messages = messages.expect("asyncapi.yaml has components.messages");
        messages
            .iter()
            .map(|(name, message)| {
                let compiled = closed(&document, &message["payload"])
                    .and_then(|schema| compile(&schema).map(|validator| (schema, validator)));
                let compiled =
                    compiled.unwrap_or_else(|e| panic!("asyncapi.yaml, message {name}: {e}"));
                (name.clone(), compiled)
            })
            .collect()
    })
}

fn document() -> Value {
    let yaml = crate::deploy::read_yaml("asyncapi.yaml");
    serde_json::to_value(yaml).expect("asyncapi.yaml is JSON-compatible")
}

/// `event` as EventBridge delivers it to a rule's target.
fn delivered(event: &DomainEvent) -> Value {
    serde_json::to_value(Delivered::of(event, "000000000000", "us-east-1"))
        .expect("an event serializes")
}

/// Whether `event` is what its message in `asyncapi.yaml` says; `Err` names
/// the message and each field at fault.
fn conforms(event: &DomainEvent) -> Result<(), String> {
    let Some((_, validator)) = messages().get(event.detail_type) else {
        return Err(format!(
            "{}: no message in asyncapi.yaml",
            event.detail_type
        ));
    };
    let delivered = delivered(event);
    let faults = violations(validator, &delivered);
    if faults.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{}: the event breaks asyncapi.yaml:\n  {}\n  event: {delivered}",
        event.detail_type,
        faults.join("\n  ")
    ))
}

/// Checks every event against `asyncapi.yaml`; panics naming each failure.
pub fn assert_conform(events: &[DomainEvent]) {
    let failures: Vec<String> = events.iter().filter_map(|e| conforms(e).err()).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every field a schema describes (`detail.order.shipDate`), each with
/// whether it is optional; the branches of an `allOf` are one object.
fn fields(schema: &Value, prefix: &str, out: &mut BTreeMap<String, bool>) {
    let mut properties = BTreeMap::new();
    let mut required = BTreeSet::new();
    merge(schema, &mut properties, &mut required);
    for (name, property) in properties {
        let path = match prefix {
            "" => name.clone(),
            _ => format!("{prefix}.{name}"),
        };
        out.insert(path.clone(), !required.contains(&name));
        fields(property, &path, out);
    }
}

fn merge<'a>(
    schema: &'a Value,
    properties: &mut BTreeMap<String, &'a Value>,
    required: &mut BTreeSet<String>,
) {
    for (name, property) in schema["properties"].as_object().into_iter().flatten() {
        properties.entry(name.clone()).or_insert(property);
    }
    let names = schema["required"].as_array().into_iter().flatten();
    required.extend(names.filter_map(Value::as_str).map(str::to_string));
    for branch in schema["allOf"].as_array().into_iter().flatten() {
        merge(branch, properties, required);
    }
}

/// Every field `value` carries, as `fields` names them.
fn present(value: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    for (name, inner) in value.as_object().into_iter().flatten() {
        let path = match prefix {
            "" => name.clone(),
            _ => format!("{prefix}.{name}"),
        };
        present(inner, &path, out);
        out.insert(path);
    }
}

/// The messages no event in `events` is, and each message's optional
/// fields none of its events carries (`Message: field`).
fn unseen(events: &[DomainEvent]) -> Vec<String> {
    let mut seen: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for event in events {
        let fields = seen.entry(event.detail_type).or_default();
        present(&delivered(event), "", fields);
    }
    let mut unseen = Vec::new();
    for (name, (schema, _)) in messages() {
        let Some(carried) = seen.get(name.as_str()) else {
            unseen.push(format!("{name}: no such event"));
            continue;
        };
        let mut described = BTreeMap::new();
        fields(schema, "", &mut described);
        let optional = described.into_iter().filter(|(_, optional)| *optional);
        let never = |field: &str| NEVER_SET.iter().any(|(n, f, _)| *n == name && *f == field);
        for (field, _) in optional.filter(|(field, _)| !carried.contains(field) && !never(field)) {
            unseen.push(format!("{name}: {field} never set"));
        }
    }
    unseen
}

/// Optional fields of a shared record that an event never carries, and why.
const NEVER_SET: [(&str, &str, &str); 1] = [(
    "OrderCompleted",
    "detail.order.lapsesAt",
    "a complete order holds nothing, so it shows no lapse",
)];

/// A trading day that sets every optional field of every event.
async fn every_kind_of_change() -> TestApp {
    let staff = TestApp::spawn().await;
    let customer = staff.as_customer().await;
    let described = json!({"name": "Dogs", "description": "Loyal"});
    let dogs = staff.post("/categories", described).await;
    dogs.assert_status(201);
    let dogs = dogs.id();
    let renamed = json!({"name": "Hounds", "description": "Loyal"});
    let category = format!("/categories/{dogs}");
    staff.put(&category, renamed).await.assert_status(200);
    let rex = staff.create_pet("Rex", dogs, "available").await;
    let stock = json!({"quantity": 3});
    let inventory = format!("/store/inventory/{rex}");
    staff.put(&inventory, stock).await.assert_status(200);
    let ship_date = (chrono::Utc::now() + chrono::Duration::days(1)).to_rfc3339();
    let dated = json!({"petId": rex, "shipDate": ship_date});
    for fate in ["cancel", "complete"] {
        let order = customer.post("/store/orders", dated.clone()).await;
        order.assert_status(201);
        let order = format!("/store/orders/{}", order.id());
        let answer = match fate {
            "cancel" => customer.delete(&order).await,
            _ => staff.patch(&order, json!({"complete": true})).await,
        };
        assert!(answer.status < 300, "{fate}: {}", answer.text());
    }
    // A third order lapses: the hold sweep, as if two months had passed.
    let held = customer.post("/store/orders", dated.clone()).await;
    held.assert_status(201);
    let later = chrono::Utc::now() + chrono::Duration::days(62);
    let swept = events::holds::sweep(&staff.app.db, later).await;
    assert_eq!(
        swept.map(|s| s.lapsed).ok(),
        Some(1),
        "the held order lapses"
    );
    let pet = format!("/pets/{rex}");
    let patch = json!({"status": "sold"});
    staff.patch(&pet, patch).await.assert_status(200);
    staff.delete(&pet).await.assert_status(204);
    staff.delete(&category).await.assert_status(204);
    staff
}

#[tokio::test]
async fn every_event_and_every_optional_field_is_announced_and_conforms() {
    let staff = every_kind_of_change().await;

    let events = stream_events(&staff).await;

    assert_conform(&events);
    let unseen = unseen(&events);
    assert!(
        unseen.is_empty(),
        "asyncapi.yaml describes what this scenario never announced; set it in \
         every_kind_of_change (tests/domain_events/asyncapi.rs):\n{}",
        unseen.join("\n")
    );
}

#[test]
fn asyncapi_describes_every_event_and_no_other() {
    let document = document();
    assert_eq!(document["asyncapi"], "3.0.0");
    let described: Vec<&str> = messages().keys().map(String::as_str).collect();
    let mut emitted = events::domain::DETAIL_TYPES.to_vec();
    emitted.sort();
    assert_eq!(described, emitted);
}

#[test]
fn the_check_refuses_a_detail_the_schema_does_not_allow() {
    let document = document();
    let schema = &document["components"]["schemas"]["StockChangedDetail"];
    let schema = closed(&document, schema).expect("translates");
    let validator = compile(&schema).expect("compiles");
    let good = json!({
        "petId": 5, "quantity": 1, "previousQuantity": 0,
        "eventId": "e-0", "occurredAt": "2026-07-01T12:00:00.000Z", "sequence": "120"
    });
    assert_eq!(violations(&validator, &good), Vec::<String>::new());
    for (field, bad) in [
        ("quantity", json!(-1)),
        ("sequence", json!("12a")),
        ("occurredAt", json!("yesterday")),
        ("extra", json!(1)),
    ] {
        let mut detail = good.clone();
        detail[field] = bad;
        let faults = violations(&validator, &detail);
        assert!(
            faults.iter().any(|f| f.contains(field)),
            "{field}: {faults:?}"
        );
    }
}

#[test]
fn a_field_no_event_sets_is_named() {
    let schema = json!({"allOf": [
        {"type": "object", "required": ["detail"]},
        {"properties": {"detail": {"properties": {"a": {}, "b": {}}, "required": ["a"]}}},
    ]});
    let mut described = BTreeMap::new();
    fields(&schema, "", &mut described);
    let expected = [("detail", false), ("detail.a", false), ("detail.b", true)];
    let expected = expected.map(|(field, optional)| (field.to_string(), optional));
    assert_eq!(described, BTreeMap::from(expected));
}
