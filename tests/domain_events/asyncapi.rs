//! `asyncapi.yaml` holds the emitted events: each, as EventBridge delivers
//! it, is checked against its message's payload schema, read from the file.
//!
//! A small checker of the JSON Schema keywords `asyncapi.yaml` uses (it says
//! so when it meets another), rather than a validator crate and its tree.

use events::publish::Delivered;
use events::DomainEvent;
use serde_json::Value;

fn document() -> Value {
    let yaml = crate::deploy::read_yaml("asyncapi.yaml");
    serde_json::to_value(yaml).expect("asyncapi.yaml is JSON-compatible")
}

/// Checks every event against `asyncapi.yaml`; panics naming each failure.
pub fn assert_conform(events: &[DomainEvent]) {
    let document = document();
    let mut failures = Vec::new();
    for event in events {
        let delivered = serde_json::to_value(Delivered::of(event, "000000000000", "us-east-1"))
            .expect("an event serializes");
        let payload = &document["components"]["messages"][event.detail_type]["payload"];
        if payload.is_null() {
            failures.push(format!(
                "{}: no message in asyncapi.yaml",
                event.detail_type
            ));
            continue;
        }
        if let Err(why) = check(&document, payload, &delivered, "") {
            failures.push(format!("{}: {why}\n{delivered}", event.detail_type));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Checks `value` at `path` against `schema`.
fn check(document: &Value, schema: &Value, value: &Value, path: &str) -> Result<(), String> {
    let mut schema = schema;
    while let Some(pointer) = schema["$ref"].as_str() {
        schema = document
            .pointer(&pointer[1..])
            .ok_or_else(|| format!("unresolved $ref {pointer}"))?;
    }
    let fail = |why: String| Err(format!("{path}: {why}"));
    for (keyword, rule) in schema.as_object().into_iter().flatten() {
        match keyword.as_str() {
            "allOf" => {
                for part in rule.as_array().into_iter().flatten() {
                    check(document, part, value, path)?;
                }
            }
            "type" => {
                let ok = match rule.as_str() {
                    Some("object") => value.is_object(),
                    Some("integer") => value.is_u64() || value.is_i64(),
                    Some("string") => value.is_string(),
                    Some("boolean") => value.is_boolean(),
                    Some("array") => value.is_array(),
                    other => return fail(format!("unsupported type {other:?}")),
                };
                if !ok {
                    return fail(format!("{value} is not of type {rule}"));
                }
            }
            "required" => {
                for field in rule.as_array().into_iter().flatten() {
                    if value.get(field.as_str().unwrap_or_default()).is_none() {
                        return fail(format!("{field} is required"));
                    }
                }
            }
            "properties" => {
                for (field, part) in rule.as_object().into_iter().flatten() {
                    if let Some(inner) = value.get(field) {
                        check(document, part, inner, &format!("{path}/{field}"))?;
                    }
                }
            }
            "additionalProperties" if rule == false => {
                let known = &schema["properties"];
                for field in value.as_object().into_iter().flatten().map(|(k, _)| k) {
                    if known.get(field).is_none() {
                        return fail(format!("{field} is not in the schema"));
                    }
                }
            }
            "enum" if !rule.as_array().is_some_and(|a| a.contains(value)) => {
                return fail(format!("{value} is not one of {rule}"));
            }
            "const" if rule != value => return fail(format!("{value} is not {rule}")),
            "minimum" | "minLength" | "maximum" | "maxLength" | "maxItems"
                if !within(keyword, rule, value) =>
            {
                return fail(format!("{value} breaks {keyword} {rule}"));
            }
            "pattern" if rule == "^[0-9]+$" => {
                let s = value.as_str().unwrap_or_default();
                if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                    return fail(format!("{value} is not a decimal string"));
                }
            }
            "pattern" => return fail(format!("unsupported pattern {rule}")),
            "format" if rule == "date-time" => {
                let s = value.as_str().unwrap_or_default();
                if chrono::DateTime::parse_from_rfc3339(s).is_err() {
                    return fail(format!("{value} is not an RFC 3339 date-time"));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Whether `value` (a number, or a string's or array's length) keeps a
/// `min...`/`max...` bound.
fn within(keyword: &str, rule: &Value, value: &Value) -> bool {
    let size = match value {
        Value::String(s) => s.chars().count() as f64,
        Value::Array(a) => a.len() as f64,
        other => other.as_f64().unwrap_or(f64::NAN),
    };
    let bound = rule.as_f64().unwrap_or(f64::NAN);
    if keyword.starts_with("min") {
        size >= bound
    } else {
        size <= bound
    }
}

#[test]
fn asyncapi_describes_every_event_and_no_other() {
    let document = document();
    assert_eq!(document["asyncapi"], "3.0.0");
    let messages: Vec<&String> = document["components"]["messages"]
        .as_object()
        .expect("components.messages")
        .keys()
        .collect();
    let mut described: Vec<&str> = messages.iter().map(|m| m.as_str()).collect();
    let mut emitted = events::domain::DETAIL_TYPES.to_vec();
    described.sort();
    emitted.sort();
    assert_eq!(described, emitted);
}

#[test]
fn the_check_refuses_a_detail_the_schema_does_not_allow() {
    let document = document();
    let schema = &document["components"]["schemas"]["StockChangedDetail"];
    let good = serde_json::json!({
        "petId": 5, "quantity": 1, "previousQuantity": 0,
        "eventId": "e-0", "occurredAt": "2026-07-01T12:00:00.000Z", "sequence": "120"
    });
    assert_eq!(check(&document, schema, &good, ""), Ok(()));
    for (field, bad) in [
        ("quantity", serde_json::json!(-1)),
        ("sequence", serde_json::json!("12a")),
        ("occurredAt", serde_json::json!("yesterday")),
        ("extra", serde_json::json!(1)),
    ] {
        let mut detail = good.clone();
        detail[field] = bad;
        assert!(check(&document, schema, &detail, "").is_err(), "{field}");
    }
}
