//! A path parameter of a form no record can have (contract section 2,
//! 1.3.0): an id that is not a positive int64 within 2^53-1, an `eventId`
//! longer than or other than its documented pattern. Each is answered 404
//! `NOT_FOUND`, or 400 where `openapi.yaml` says so, never a 5xx, and
//! reaches no database call: a key DynamoDB refuses (a sort key over 1,024
//! bytes) would be a 500 a caller causes at will, which is what a canary's
//! rollback alarm counts.
//!
//! Every operation with a path parameter is read from `openapi.yaml` (which
//! `routes` holds equal to the routers and the template), so a new one is
//! covered without a line here; each of its parameters is tried in turn,
//! the others of a form a record has. The calls are counted by the proxy
//! between the service and DynamoDB Local.

use super::{calls_since, counted, is_bookkeeping};
use crate::deploy::{openapi_operations, read_yaml};
use crate::helpers::TestApp;
use http::Method;
use serde_json::json;
use std::collections::BTreeMap;

/// A path parameter as `openapi.yaml` declares it: whether it is an
/// integer (an id), and the status its description gives for any other
/// form (400 where it says `400`, else 404: no record has it).
#[derive(Debug, Clone, Copy)]
struct Declared {
    integer: bool,
    refused_with: (u16, &'static str),
}

/// Every path parameter of `openapi.yaml`'s components, by name.
fn declared_path_parameters() -> BTreeMap<String, Declared> {
    let document = read_yaml("openapi.yaml");
    let parameters = document["components"]["parameters"]
        .as_mapping()
        .expect("openapi.yaml has components/parameters");
    let mut declared = BTreeMap::new();
    for (_, parameter) in parameters {
        if parameter["in"].as_str() != Some("path") {
            continue;
        }
        let name = parameter["name"].as_str().expect("a parameter's name");
        let description = parameter["description"].as_str().unwrap_or_default();
        let refused_with = match description.contains("400 `VALIDATION_FAILED`") {
            true => (400, "VALIDATION_FAILED"),
            false => (404, "NOT_FOUND"),
        };
        let integer = parameter["schema"]["type"].as_str() == Some("integer");
        declared.insert(
            name.to_string(),
            Declared {
                integer,
                refused_with,
            },
        );
    }
    declared
}

/// The names of `path`'s parameters, in order.
fn parameters_of(path: &str) -> Vec<String> {
    path.split('/')
        .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
        .map(str::to_string)
        .collect()
}

/// A time-prefixed event id's first part: a form every event id has.
const TIMED: &str = "19ac6a0f1e2";

/// The forms no record has, as they go in a path (percent-encoded where
/// they are not URL characters), each with what it shows.
fn refused_forms(integer: bool) -> Vec<(String, &'static str)> {
    let mut forms = vec![
        ("0".to_string(), "zero"),
        ("-1".to_string(), "negative"),
        ("9223372036854775808".to_string(), "over int64"),
        ("18446744073709551616".to_string(), "over uint64"),
    ];
    if integer {
        forms.extend([
            ("9".repeat(1_100), "too long"),
            ("9007199254740992".to_string(), "over 2^53-1"),
            ("12ab".to_string(), "wrong alphabet"),
            ("1.5".to_string(), "a fraction"),
            ("%C2%B9".to_string(), "a superscript digit"),
        ]);
    } else {
        forms.extend([
            (format!("{TIMED}-{}", "a".repeat(1_100)), "too long"),
            (format!("{TIMED}-{}", "a".repeat(117)), "one over maxLength"),
            (format!("{TIMED}-ping%20x"), "wrong alphabet: a space"),
            (format!("{TIMED}-ping%C3%A9"), "wrong alphabet: not ASCII"),
            ("ping_x".to_string(), "no time"),
            (
                format!("{}-ping_x", TIMED.to_uppercase()),
                "upper-case time",
            ),
        ]);
    }
    forms
}

#[tokio::test]
async fn every_path_parameter_of_a_form_no_record_has_is_refused_without_a_database_call() {
    // Given staff's own endpoint (so a webhook's other parameter names a
    // record the caller may reach), on an instance whose DynamoDB calls are
    // counted, its key already cached
    let app = TestApp::spawn().await;
    let webhook = crate::webhooks::register_default(&app).await;
    let (staff, proxy) = counted(&app).await;
    staff.get("/pets?limit=1").await.assert_status(200);
    let declared = declared_path_parameters();
    let valid = |name: &str| match declared.get(name) {
        Some(d) if d.integer => webhook.to_string(),
        _ => format!("{TIMED}-ping_0"),
    };

    let operations: Vec<(String, String)> = openapi_operations()
        .into_iter()
        .filter(|(_, path)| path.contains('{'))
        .collect();
    assert!(operations.len() >= 15, "{operations:?}");
    let mut tried = 0;
    for (method, path) in &operations {
        let method = Method::from_bytes(method.as_bytes()).expect("a method");
        for refused in parameters_of(path) {
            let Declared {
                integer,
                refused_with: (status, code),
            } = *declared
                .get(&refused)
                .unwrap_or_else(|| panic!("{path}: {refused} is not in components/parameters"));
            for (form, what) in refused_forms(integer) {
                // When it is called with that parameter in a form no record has
                let mut url = path.clone();
                for name in parameters_of(path) {
                    let value = if name == refused {
                        form.clone()
                    } else {
                        valid(&name)
                    };
                    url = url.replace(&format!("{{{name}}}"), &value);
                }
                let before = proxy.calls().len();
                let response = match method {
                    Method::POST | Method::PUT | Method::PATCH => {
                        staff.send_json(method.clone(), &url, &json!({})).await
                    }
                    _ => staff.send(method.clone(), &url).await,
                };

                // Then it is refused as the document says, naming an id
                let shown = format!("{method} {path}, {refused} {what}");
                assert_eq!(response.status, status, "{shown}: {}", response.text());
                response.assert_error(status, code);
                if status == 400 {
                    assert!(
                        response.text().contains(&refused),
                        "{shown}: the message names {refused}: {}",
                        response.text()
                    );
                }
                // And nothing but the limiter's bookkeeping reached DynamoDB
                // (its count; its key's look-up again, should the cache
                // have lapsed on a slow machine)
                let data: Vec<String> = calls_since(&proxy, before)
                    .into_iter()
                    .filter(|call| !is_bookkeeping(&app, call))
                    .map(|call| format!("{} {}", call.operation, call.body))
                    .collect();
                assert!(data.is_empty(), "{shown}: reached the data table: {data:?}");
                tried += 1;
            }
        }
    }
    println!(
        "{tried} requests over {} operations with a path parameter",
        operations.len()
    );
}
