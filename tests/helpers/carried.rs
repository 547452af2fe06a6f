//! Which optional properties of `openapi.yaml`'s answers a flow's responses
//! carried: a schema only catches what some answer sends, so a property
//! documented and never sent (or no longer sent) would pass every check.
//!
//! Properties are named by the component schema that declares them
//! (`Order.shipDate`), or by the answer for inline schemas (`GET /x 200.y`).
//! What a flow carried is collected per task ([`collecting`]): tests run in
//! parallel and may be filtered, so a whole-run collection would pass or fail
//! with what else ran; a flow collects exactly its own answers.

use serde_json::Value;
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::future::Future;

tokio::task_local! {
    static CARRIED: RefCell<BTreeSet<String>>;
}

/// Runs `flow`, collecting the optional properties its answers carry
/// (every answer held to `openapi.yaml` is seen, see `contract::check`).
pub async fn collecting<F: Future>(flow: F) -> (F::Output, BTreeSet<String>) {
    let flow = async {
        let output = flow.await;
        (output, CARRIED.with(|carried| carried.take()))
    };
    CARRIED.scope(RefCell::new(BTreeSet::new()), flow).await
}

/// Notes what `body`, an answer conforming to `schema` (a part of
/// `document`), carries, when a flow is [`collecting`].
pub fn record(document: &Value, schema: &Value, answer: &str, body: &Value) {
    let _ = CARRIED.try_with(|carried| {
        let mut found = Found::default();
        found.walk(document, schema, answer, Some(body), 0);
        carried.borrow_mut().extend(found.carried);
    });
}

/// Every optional property `schema` describes, named as above.
pub fn optional(document: &Value, schema: &Value, answer: &str) -> BTreeSet<String> {
    let mut found = Found::default();
    found.walk(document, schema, answer, None, 0);
    found.optional
}

/// How deep schemas may nest before one is taken to be recursive.
const MAX_DEPTH: usize = 32;

#[derive(Default)]
struct Found {
    optional: BTreeSet<String>,
    carried: BTreeSet<String>,
}

impl Found {
    /// Walks `schema` and, when given, the `value` it describes.
    fn walk(
        &mut self,
        document: &Value,
        schema: &Value,
        owner: &str,
        value: Option<&Value>,
        depth: usize,
    ) {
        if depth > MAX_DEPTH {
            return;
        }
        if let Some(reference) = schema["$ref"].as_str() {
            let name = reference.rsplit('/').next().unwrap_or(reference);
            if let Some(target) = document.pointer(reference.trim_start_matches('#')) {
                self.walk(document, target, name, value, depth + 1);
            }
            return;
        }
        for composed in ["allOf", "anyOf", "oneOf"] {
            for branch in schema[composed].as_array().into_iter().flatten() {
                self.walk(document, branch, owner, value, depth + 1);
            }
        }
        if let Some(items) = schema.get("items") {
            self.walk(document, items, owner, None, depth + 1);
            for item in value.and_then(Value::as_array).into_iter().flatten() {
                self.walk(document, items, owner, Some(item), depth + 1);
            }
        }
        let required: BTreeSet<&str> = schema["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        for (name, property) in schema["properties"].as_object().into_iter().flatten() {
            let path = format!("{owner}.{name}");
            let inner = value.and_then(|value| value.get(name));
            if !required.contains(name.as_str()) {
                self.optional.insert(path.clone());
                if inner.is_some() {
                    self.carried.insert(path.clone());
                }
            }
            self.walk(document, property, &path, inner, depth + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn optional_properties_are_named_by_their_component_and_seen_in_lists() {
        let document = json!({"components": {"schemas": {"Order": {
            "required": ["id"],
            "properties": {"id": {}, "shipDate": {}, "note": {}},
        }}}});
        let list = json!({"type": "array", "items": {"$ref": "#/components/schemas/Order"}});
        let expected: BTreeSet<String> = ["Order.note", "Order.shipDate"].map(String::from).into();
        assert_eq!(optional(&document, &list, "GET /orders 200"), expected);
        let mut found = Found::default();
        let body = json!([{"id": 1}, {"id": 2, "shipDate": "x"}]);
        found.walk(&document, &list, "GET /orders 200", Some(&body), 0);
        assert_eq!(found.carried, ["Order.shipDate".to_string()].into());
    }
}
