//! Every refusal rule of every field of every request body, table-driven
//! from `openapi.yaml`: for each operation's JSON body and each property,
//! one value breaking each rule the property's schema states (its type, a
//! fraction where it is an integer, bounds, enum, format, lengths, pattern,
//! `x-refused-beyond-bmp`), sent in an otherwise valid body through the real
//! router. Each must be 400
//! `VALIDATION_FAILED` naming the property, so a field whose validation is
//! removed (or never written) fails here by name, without a test of its own.

use crate::helpers::schema::{closed, compile};
use crate::helpers::TestApp;
use http::Method;
use serde_json::{json, Map, Value};

/// One request that breaks one rule of one property.
struct Refusal {
    method: Method,
    /// As written in the document: `/pets/{petId}`.
    template: String,
    schema: String,
    property: String,
    /// The rule broken, as the schema states it (`maxLength 500`).
    rule: String,
    value: Value,
}

pub(crate) fn document() -> Value {
    let yaml = crate::deploy::read_yaml("openapi.yaml");
    serde_json::to_value(yaml).expect("openapi.yaml is JSON-compatible")
}

/// Every operation's JSON body schema, by name.
pub(crate) fn bodies(document: &Value) -> Vec<(Method, String, String)> {
    let mut bodies = Vec::new();
    for (template, item) in document["paths"].as_object().into_iter().flatten() {
        for (method, operation) in item.as_object().into_iter().flatten() {
            let schema = &operation["requestBody"]["content"]["application/json"]["schema"];
            let Some(name) = schema["$ref"].as_str().and_then(|r| r.rsplit('/').next()) else {
                continue;
            };
            let method = method.to_uppercase().parse().expect("an HTTP method");
            bodies.push((method, template.clone(), name.to_string()));
        }
    }
    bodies
}

/// The rules `property` states, each with a value breaking it.
fn broken(document: &Value, property: &Value) -> Vec<(String, Value)> {
    // A nullable alternative (`status: null` in a patch) is a meaning, not a rule.
    let schema = property["anyOf"].get(0).unwrap_or(property);
    let mut broken = Vec::new();
    let wrong_type = match schema["type"].as_str() {
        Some("string") => json!(1),
        Some("integer" | "number") => json!("1"),
        Some("boolean") => json!("true"),
        _ => Value::Null,
    };
    if !wrong_type.is_null() {
        broken.push((format!("type {}", schema["type"]), wrong_type));
    }
    if schema["type"] == "integer" {
        let within = schema["minimum"].as_i64().unwrap_or(0);
        broken.push((
            "type integer: a fraction".into(),
            json!(within as f64 + 0.5),
        ));
    }
    if let Some(min) = schema["minimum"].as_i64() {
        broken.push((format!("minimum {min}"), json!(min - 1)));
    }
    if let Some(max) = schema["maximum"].as_i64() {
        broken.push((format!("maximum {max}"), json!(max + 1)));
    }
    if let Some(allowed) = schema["enum"].as_array() {
        let outside = match schema["type"].as_str() {
            Some("boolean") => [true, false]
                .map(Value::from)
                .into_iter()
                .find(|v| !allowed.contains(v)),
            _ => Some(json!("none-of-these")),
        };
        broken.extend(outside.map(|value| (format!("enum {}", schema["enum"]), value)));
    }
    if schema["format"] == "date-time" {
        broken.push(("format date-time".into(), json!("tomorrow")));
    }
    if let Some(min) = schema["minLength"].as_u64().filter(|min| *min > 0) {
        broken.push((
            format!("minLength {min}"),
            json!("a".repeat(min as usize - 1)),
        ));
    }
    if let Some(max) = schema["maxLength"].as_u64() {
        broken.push((
            format!("maxLength {max}"),
            json!("a".repeat(max as usize + 1)),
        ));
    }
    if let Some(pattern) = schema["pattern"].as_str() {
        broken.extend(refused_by(document, pattern));
    }
    let beyond = schema["x-refused-beyond-bmp"]
        .as_array()
        .into_iter()
        .flatten();
    if let Some(first) = beyond.filter_map(Value::as_str).next() {
        let code = first
            .split('-')
            .next()
            .unwrap_or(first)
            .trim_start_matches("U+");
        let c = u32::from_str_radix(code, 16).ok().and_then(char::from_u32);
        let c = c.expect("x-refused-beyond-bmp lists U+XXXX code points");
        broken.push((
            format!("x-refused-beyond-bmp {first}"),
            json!(format!("a{c}b")),
        ));
    }
    broken
}

/// Values `pattern` refuses, as the service must: only whitespace, the first
/// character it refuses within text, and the shortest text too long for it.
fn refused_by(document: &Value, pattern: &str) -> Vec<(String, Value)> {
    let string = json!({"type": "string", "pattern": pattern});
    let validator = closed(document, &string).and_then(|schema| compile(&schema));
    let validator = validator.unwrap_or_else(|e| panic!("pattern {pattern}: {e}"));
    let refuses = |text: &str| !validator.is_valid(&json!(text));
    let mut refused = Vec::new();
    if refuses(" ") {
        refused.push(("pattern: only whitespace".to_string(), json!(" ")));
    }
    let inner = (0..=0xffff_u32)
        .filter_map(char::from_u32)
        .map(|c| format!("a{c}b"))
        .find(|text| refuses(text));
    if let Some(text) = inner {
        let c = text.chars().nth(1).map(u32::from).unwrap_or_default();
        refused.push((format!("pattern: U+{c:04X}"), json!(text)));
    }
    if let Some(long) = (1..=2048).map(|n| "a".repeat(n)).find(|text| refuses(text)) {
        let length = long.len();
        refused.push((format!("pattern: {length} characters"), json!(long)));
    }
    refused
}

/// Every refusal the document's bodies state.
fn refusals(document: &Value) -> Vec<Refusal> {
    let mut refusals = Vec::new();
    for (method, template, schema) in bodies(document) {
        let properties = document["components"]["schemas"][&schema]["properties"].as_object();
        for (property, stated) in properties.into_iter().flatten() {
            for (rule, value) in broken(document, stated) {
                refusals.push(Refusal {
                    method: method.clone(),
                    template: template.clone(),
                    schema: schema.clone(),
                    property: property.clone(),
                    rule,
                    value,
                });
            }
        }
    }
    refusals
}

/// A body of `schema` with its required properties valid: the ids of the
/// records `ids` names, else the document's examples.
fn valid_body(document: &Value, schema: &str, ids: &Map<String, Value>) -> Map<String, Value> {
    let schema = &document["components"]["schemas"][schema];
    let required = schema["required"].as_array().into_iter().flatten();
    required
        .filter_map(Value::as_str)
        .map(|name| {
            let example = &schema["properties"][name]["example"];
            (name.to_string(), ids.get(name).unwrap_or(example).clone())
        })
        .collect()
}

#[tokio::test]
async fn every_rule_of_every_body_field_is_refused_naming_the_field() {
    let document = document();
    let staff = TestApp::spawn().await;
    let category = staff.create_category("Dogs").await;
    let pet = staff.create_pet("Rex", category, "available").await;
    let stocked = staff
        .put(&format!("/store/inventory/{pet}"), json!({"quantity": 5}))
        .await;
    stocked.assert_status(200);
    let order = staff.post("/store/orders", json!({"petId": pet})).await;
    order.assert_status(201);
    let webhook = crate::webhooks::register_default(&staff).await;
    let ids =
        json!({"categoryId": category, "petId": pet, "orderId": order.id(), "webhookId": webhook});
    let ids = ids.as_object().cloned().unwrap_or_default();
    let refusals = refusals(&document);

    let mut accepted = Vec::new();
    for refusal in &refusals {
        let mut path = refusal.template.clone();
        for (name, id) in &ids {
            path = path.replace(&format!("{{{name}}}"), &id.to_string());
        }
        let mut body = valid_body(&document, &refusal.schema, &ids);
        body.insert(refusal.property.clone(), refusal.value.clone());
        let answer = staff
            .send_json(refusal.method.clone(), &path, &Value::Object(body))
            .await;
        let error: Value = serde_json::from_slice(&answer.body).unwrap_or_default();
        let message = error["message"].as_str().unwrap_or_default();
        let refused = answer.status == 400
            && error["code"] == "VALIDATION_FAILED"
            && message.contains(refusal.property.as_str());
        if !refused {
            let Refusal {
                method,
                template,
                schema,
                property,
                rule,
                ..
            } = refusal;
            accepted.push(format!(
                "{method} {template} {schema}.{property} ({rule}): {} {}",
                answer.status,
                answer.text()
            ));
        }
    }

    assert!(
        accepted.is_empty(),
        "openapi.yaml states rules these answers did not refuse naming the field (400 \
         VALIDATION_FAILED): validate the field in its body type's parse (shared/src/records/)\n{}",
        accepted.join("\n")
    );
    let fields: std::collections::BTreeSet<_> = refusals.iter().map(|r| &r.property).collect();
    assert!(fields.len() >= 8, "the bodies were read: {fields:?}");
}
