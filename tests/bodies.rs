//! Request bodies against `openapi.yaml`, for every operation with a JSON
//! body, through the real router, with no test per field:
//!
//! - a field a body accepts is in that operation's request schema: each
//!   field of the operation's answer that the request schema lacks is sent,
//!   with a valid value other than the one the record has, and must not be
//!   taken (the request schemas are open: unknown fields are ignored);
//! - `PUT` replaces: each optional field, set by one `PUT` and left out of
//!   the next, is gone (or back at its stated `default`);
//! - `PATCH` merges: each field patched alone changes, and every other field
//!   the patch schema names keeps its value.
//!
//! A field added to a record and its parsing but not to the request schema,
//! or a `PUT` that keeps what it was not sent, fails here by name.

use crate::helpers::{TestApp, TestResponse};
use crate::refusals::{bodies, document};
use crate::webhooks::{resolving, RECEIVER};
use http::Method;
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

/// The service under test, with the records the bodies refer to.
struct Store {
    app: TestApp,
    document: Value,
    /// Ids by the name a body or a path calls them (`petId`), and the
    /// webhook receiver's `url`.
    ids: Map<String, Value>,
    /// Another record of each kind a body refers to, to change a reference to.
    others: Map<String, Value>,
    /// Makes each text value unique (category names are).
    made: u64,
}

impl Store {
    async fn new() -> Store {
        let app = TestApp::spawn().await;
        resolving(&app);
        let category = app.create_category("Bodies").await;
        let other_category = app.create_category("Other bodies").await;
        let pet = app.create_pet("Rex", category, "available").await;
        let stocked = app
            .put(
                &format!("/store/inventory/{pet}"),
                json!({"quantity": 1000}),
            )
            .await;
        stocked.assert_status(200);
        let order = app.post("/store/orders", json!({"petId": pet})).await;
        order.assert_status(201);
        let other_pet = app.create_pet("Max", category, "available").await;
        let webhook = crate::webhooks::register_default(&app).await;
        let others = json!({"categoryId": other_category, "petId": other_pet});
        let ids = json!({"categoryId": category, "petId": pet, "orderId": order.id(),
                         "webhookId": webhook, "url": RECEIVER});
        Store {
            app,
            document: document(),
            ids: ids.as_object().cloned().unwrap_or_default(),
            others: others.as_object().cloned().unwrap_or_default(),
            made: 0,
        }
    }

    fn schema(&self, name: &str) -> &Value {
        &self.document["components"]["schemas"][name]
    }

    /// The properties schema `name` states.
    fn properties(&self, name: &str) -> Map<String, Value> {
        self.schema(name)["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default()
    }

    /// The schema of `method template`'s successful answer, by name.
    fn answer_schema(&self, method: &Method, template: &str) -> Option<String> {
        let operation = &self.document["paths"][template][method.as_str().to_lowercase()];
        let answers = operation["responses"].as_object()?;
        answers
            .iter()
            .filter(|(status, _)| status.starts_with('2'))
            .find_map(|(_, answer)| {
                let schema = &answer["content"]["application/json"]["schema"]["$ref"];
                schema.as_str()?.rsplit('/').next().map(str::to_string)
            })
    }

    /// Valid values of `property`, the schema's example first: one is
    /// picked that differs from what a record holds.
    fn allowed(&mut self, name: &str, property: &Value) -> Vec<Value> {
        self.made += 1;
        if let (Some(id), Some(other)) = (self.ids.get(name), self.others.get(name)) {
            return vec![id.clone(), other.clone()];
        }
        let schema = property["anyOf"].get(0).unwrap_or(property);
        let mut values: Vec<Value> = schema.get("example").cloned().into_iter().collect();
        values.extend(schema["enum"].as_array().into_iter().flatten().cloned());
        match (schema["type"].as_str(), schema["format"].as_str()) {
            (Some("integer"), _) => {
                let min = schema["minimum"].as_i64().unwrap_or(1);
                let max = schema["maximum"].as_i64().unwrap_or(min + 100);
                values.extend([min, min + 1, max].map(Value::from));
            }
            (Some("boolean"), _) => values.extend([true, false].map(Value::from)),
            (Some("string"), Some("date-time")) => {
                values.extend(["2027-03-04T05:06:07Z", "2027-04-05T06:07:08Z"].map(Value::from));
            }
            (Some("string"), Some("uri")) => {
                values = vec![json!(format!("{RECEIVER}/{}", self.made))];
            }
            (Some("string"), _) if !schema["enum"].is_array() => {
                let text = schema["example"].as_str().unwrap_or(name);
                values = vec![json!(format!("{text} {}", self.made))];
            }
            (Some("array"), _) => {
                let items = schema["items"]["enum"].as_array().into_iter().flatten();
                values = items.take(2).map(|item| json!([item])).collect();
            }
            _ => {}
        }
        values
    }

    /// A valid value of `property` other than `held`.
    fn other_than(&mut self, name: &str, property: &Value, held: &Value) -> Option<Value> {
        self.allowed(name, property)
            .into_iter()
            .find(|value| !same(value, held))
    }

    /// A body of request schema `schema` with its required fields: the ids
    /// the store holds, else a valid value.
    fn required(&mut self, schema: &str) -> Map<String, Value> {
        let required: Vec<String> = self.schema(schema)["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|name| name.as_str().map(str::to_string))
            .collect();
        let properties = self.properties(schema);
        let mut body = Map::new();
        for name in required {
            let value = match self.ids.get(&name) {
                Some(id) => id.clone(),
                None => self.allowed(&name, &properties[&name]).remove(0),
            };
            body.insert(name, value);
        }
        body
    }

    /// The path of a record `template` names: a new one made by the
    /// collection's `POST` when there is one, else the store's own.
    async fn record(&mut self, template: &str) -> String {
        let (collection, _) = template.rsplit_once('/').unwrap_or((template, ""));
        let post = &self.document["paths"][collection]["post"]["requestBody"];
        let schema = post["content"]["application/json"]["schema"]["$ref"].as_str();
        let schema = schema
            .and_then(|s| s.rsplit('/').next())
            .map(str::to_string);
        let mut path = template.to_string();
        if let Some(schema) = schema {
            let body = Value::Object(self.required(&schema));
            let made = self.app.post(collection, body).await;
            assert!(made.status < 300, "POST {collection}: {}", made.text());
            let parameter = template.rsplit('/').next().unwrap_or_default();
            path = path.replace(parameter, &made.id().to_string());
        }
        for (name, id) in &self.ids {
            path = path.replace(&format!("{{{name}}}"), &id.to_string());
        }
        path
    }

    async fn send(&self, method: &Method, path: &str, body: &Map<String, Value>) -> TestResponse {
        let body = Value::Object(body.clone());
        self.app.send_json(method.clone(), path, &body).await
    }
}

/// Whether two field values are the same: date-times as instants (the
/// service answers them in its own form).
fn same(a: &Value, b: &Value) -> bool {
    let instant = |v: &Value| {
        v.as_str()
            .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
    };
    match (instant(a), instant(b)) {
        (Some(a), Some(b)) => a == b,
        _ => a == b,
    }
}

fn answered(response: &TestResponse) -> Value {
    if response.status < 300 {
        response.json()
    } else {
        Value::Null
    }
}

#[tokio::test]
async fn a_body_field_its_request_schema_lacks_is_not_taken() {
    let mut store = Store::new().await;
    let mut taken = Vec::new();
    let mut tried = BTreeSet::new();
    for (method, template, request) in bodies(&store.document) {
        let Some(answer) = store.answer_schema(&method, &template) else {
            continue;
        };
        let stated = store.properties(&request);
        for (field, property) in store.properties(&answer) {
            if stated.contains_key(&field) {
                continue;
            }
            let path = store.record(&template).await;
            let body = store.required(&request);
            let without = answered(&store.send(&method, &path, &body).await);
            let Some(value) = store.other_than(&field, &property, &without[&field]) else {
                continue;
            };
            // Fresh required values: a second POST of a unique name is a conflict.
            let mut body = store.required(&request);
            body.insert(field.clone(), value.clone());
            let with = answered(&store.send(&method, &path, &body).await);
            tried.insert(format!("{method} {template} {field}"));
            if same(&with[&field], &value) {
                taken.push(format!("{method} {template}: {field} = {value} was taken"));
            }
        }
    }
    assert!(
        taken.is_empty(),
        "these bodies accept a field their request schema in openapi.yaml lacks: add it to \
         the operation's request schema (and say so in the contract), or stop reading it\n{}",
        taken.join("\n")
    );
    assert!(tried.len() >= 8, "the bodies were read: {tried:?}");
}

#[tokio::test]
async fn put_replaces_an_absent_optional_field_is_cleared() {
    let mut store = Store::new().await;
    let mut kept = Vec::new();
    let mut tried = BTreeSet::new();
    for (method, template, request) in bodies(&store.document) {
        if method != Method::PUT {
            continue;
        }
        let required: BTreeSet<String> = store.required(&request).keys().cloned().collect();
        for (field, property) in store.properties(&request) {
            if required.contains(&field) {
                continue;
            }
            let path = store.record(&template).await;
            let bare = store.required(&request);
            let default = property.get("default").cloned().unwrap_or(Value::Null);
            let Some(value) = store.other_than(&field, &property, &default) else {
                continue;
            };
            let mut full = bare.clone();
            full.insert(field.clone(), value.clone());
            let set = answered(&store.send(&method, &path, &full).await);
            assert!(
                same(&set[&field], &value),
                "PUT {template} with {field} = {value}: {set}"
            );
            let replaced = answered(&store.send(&method, &path, &bare).await);
            let read = answered(&store.app.get(&path).await);
            tried.insert(format!("PUT {template} {field}"));
            if replaced.is_null()
                || !same(&replaced[&field], &default)
                || !same(&read[&field], &default)
            {
                kept.push(format!(
                    "PUT {template} without {field} (was {value}): answered {replaced}, then read {read}"
                ));
            }
        }
    }
    assert!(
        kept.is_empty(),
        "PUT replaces the record: an optional field left out is cleared (or its default)\n{}",
        kept.join("\n")
    );
    assert!(!tried.is_empty(), "no PUT body has an optional field");
}

#[tokio::test]
async fn patch_merges_each_field_alone_changes_only_itself() {
    let mut store = Store::new().await;
    let mut broken = Vec::new();
    let mut tried = BTreeSet::new();
    for (method, template, request) in bodies(&store.document) {
        if method != Method::PATCH {
            continue;
        }
        let fields = store.properties(&request);
        for (field, property) in &fields {
            let path = store.record(&template).await;
            let before = answered(&store.app.get(&path).await);
            let Some(value) = store.other_than(field, property, &before[field]) else {
                continue;
            };
            let patch = Map::from_iter([(field.clone(), value.clone())]);
            let after = answered(&store.send(&method, &path, &patch).await);
            tried.insert(format!("PATCH {template} {field}"));
            // A field the record had keeps it (one the service fills in
            // as a consequence, a completed order's shipDate, may appear).
            let changed: Vec<&String> = fields
                .keys()
                .filter(|other| *other != field && !before[*other].is_null())
                .filter(|other| !same(&after[*other], &before[*other]))
                .collect();
            if after.is_null() || !same(&after[field], &value) || !changed.is_empty() {
                broken.push(format!(
                    "PATCH {template} {{{field}: {value}}}: before {before}, after {after}"
                ));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "PATCH merges: the field sent changes, every other keeps its value\n{}",
        broken.join("\n")
    );
    assert!(tried.len() >= 5, "the patches were read: {tried:?}");
}
