//! Every sample API Gateway event in `events/` (the ones `cargo lambda invoke
//! --data-file` takes) replayed through the real Lambda path: `lambda_http`
//! turns the event JSON into a request, exactly as `lambda_http::run` does, and
//! the function's own service (`service(pets::routes(), app)`, the store's
//! or the webhooks', the value each `main` hands to `lambda_http::run`)
//! answers it. Every operation of `openapi.yaml` has at least one.
//!
//! `events/expected.json` says, per file, which function the event is for and
//! the status (and error code) it must get. Each replay gets a fresh store
//! holding the events' key, and the records its event names (`{{petId}}`,
//! ...), made as `make invoke` makes them (`petstore_local::sample_events`).
//! Each answer, and so the expectation it met, is also held to the
//! operation's closed schema in `openapi.yaml` (`helpers/contract.rs`).

use crate::deploy::{openapi_operations, template_routes, TemplateRoute};
use crate::helpers::{repo_root, TestApp, TestResponse};
use futures::StreamExt;
use petstore_local::sample_events::{create_events_key, prepare, EVENTS_API_KEY};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Clone)]
struct Expected {
    function: String,
    status: u16,
    code: Option<String>,
}

fn expectations() -> BTreeMap<String, Expected> {
    let path = repo_root().join("events/expected.json");
    let text = std::fs::read_to_string(&path).expect("events/expected.json is readable");
    let table: BTreeMap<String, Value> =
        serde_json::from_str(&text).expect("events/expected.json is a JSON object");
    table
        .into_iter()
        .map(|(file, entry)| {
            let expected = Expected {
                function: entry["function"].as_str().expect("function").to_string(),
                status: entry["status"].as_u64().expect("status") as u16,
                code: entry["code"].as_str().map(str::to_string),
            };
            (file, expected)
        })
        .collect()
}

fn event_files() -> BTreeSet<String> {
    std::fs::read_dir(repo_root().join("events"))
        .expect("events/ is readable")
        .map(|entry| {
            entry
                .expect("a directory entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name.ends_with(".json") && name != "expected.json")
        .collect()
}

#[test]
fn every_event_has_an_expectation_and_every_expectation_an_event() {
    let files = event_files();
    let expected: BTreeSet<String> = expectations().into_keys().collect();
    assert!(!files.is_empty(), "events/ has no sample events");
    assert_eq!(
        files.difference(&expected).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "events without an entry in events/expected.json"
    );
    assert_eq!(
        expected.difference(&files).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "entries in events/expected.json without an event file"
    );
}

/// Every operation of `openapi.yaml` has a sample event, with its
/// expectation: the event is how `make invoke` and `make test-run-lambda`
/// reach the operation through its function as Lambda runs it, so a route
/// added without one fails here, by name. An event names the operation whose
/// path template its `rawPath` fills, under its method.
#[test]
fn every_operation_has_a_sample_event_with_its_expectation() {
    let operations = openapi_operations();
    let covered: BTreeSet<&(String, String)> = expectations()
        .into_keys()
        .flat_map(|file| {
            let event = read_event(&file);
            let method = event["requestContext"]["http"]["method"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let path = event["rawPath"].as_str().unwrap_or_default().to_string();
            operations
                .iter()
                .filter(move |(m, template)| *m == method && matches(template, &path))
                .collect::<Vec<_>>()
        })
        .collect();
    let missing: Vec<String> = operations
        .iter()
        .filter(|operation| !covered.contains(operation))
        .map(|(method, path)| format!("{method} {path}"))
        .collect();
    assert!(
        missing.is_empty(),
        "operations of openapi.yaml with no sample event: {missing:?}; add \
         events/<resource>-<operation>.json (a copy of one beside it, its routeKey, \
         rawPath, requestContext and requestId changed) and its entry in \
         events/expected.json (function, status, code)"
    );
}

/// Whether `path` (concrete) matches the route's `pattern` (`/pets/{petId}`).
fn matches(pattern: &str, path: &str) -> bool {
    let (pattern, path): (Vec<_>, Vec<_>) =
        (pattern.split('/').collect(), path.split('/').collect());
    pattern.len() == path.len()
        && pattern
            .iter()
            .zip(&path)
            .all(|(p, s)| (p.starts_with('{') && p.ends_with('}') && !s.is_empty()) || p == s)
}

/// The route API Gateway picks for a request: a method route, else the
/// path's `ANY` route, else `$default`.
fn route_for<'a>(routes: &'a [TemplateRoute], method: &str, path: &str) -> &'a TemplateRoute {
    let on_path = |m: &str| {
        routes.iter().find(|r| {
            r.method.as_deref() == Some(m)
                && r.path
                    .as_deref()
                    .is_some_and(|pattern| matches(pattern, path))
        })
    };
    on_path(method)
        .or_else(|| on_path("ANY"))
        .or_else(|| routes.iter().find(|r| r.path.is_none()))
        .expect("template.yaml has a $default route")
}

#[test]
fn every_event_is_what_api_gateway_would_send_to_its_function() {
    let routes = template_routes();
    for (file, expected) in expectations() {
        let event = read_event(&file);
        let method = event["requestContext"]["http"]["method"]
            .as_str()
            .expect("http.method");
        // Any id will do for picking the route.
        let path = event["rawPath"]
            .as_str()
            .expect("rawPath")
            .replace("{{", "")
            .replace("}}", "");
        let route = route_for(&routes, method, &path);
        assert_eq!(event["routeKey"], route.route_key(), "{file}: routeKey");
        assert_eq!(
            event["requestContext"]["routeKey"],
            route.route_key(),
            "{file}: requestContext.routeKey"
        );
        assert_eq!(
            route.function, expected.function,
            "{file}: template.yaml sends it to {}",
            route.function
        );
        assert_eq!(event["version"], "2.0", "{file}: payload format 2.0");
        assert_eq!(
            event["requestContext"]["http"]["path"], event["rawPath"],
            "{file}: http.path"
        );
        assert!(
            event["requestContext"]["requestId"].is_string(),
            "{file}: requestId"
        );
        assert!(
            event["requestContext"]["http"]["sourceIp"].is_string(),
            "{file}: sourceIp"
        );
        assert_eq!(
            event["headers"]["x-api-key"], EVENTS_API_KEY,
            "{file}: x-api-key"
        );
        // Else the edge would refuse it unread, and every answer be a 401.
        assert!(petstore::ratelimit::keys::is_well_formed(EVENTS_API_KEY));
        let template_params: BTreeSet<String> = route
            .path
            .as_deref()
            .unwrap_or("")
            .split('/')
            .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
            .map(str::to_string)
            .collect();
        let event_params: BTreeSet<String> = event["pathParameters"]
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        assert_eq!(event_params, template_params, "{file}: pathParameters");
    }
}

fn read_event(file: &str) -> Value {
    serde_json::from_str(&read_event_text(file))
        .unwrap_or_else(|e| panic!("{file} is not JSON: {e}"))
}

fn read_event_text(file: &str) -> String {
    let path = repo_root().join("events").join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Replays one event on a fresh store; `Err` says what went wrong.
async fn replay(file: String, expected: Expected) -> Result<(), String> {
    let app = TestApp::spawn().await;
    create_events_key(&app.app, &app.endpoint)
        .await
        .map_err(|e| format!("{file}: the events' key: {e}"))?;
    let text = prepare(&app.app, &read_event_text(&file))
        .await
        .map_err(|e| format!("{file}: {e}"))?;
    let request_id = read_event(&file)["requestContext"]["requestId"]
        .as_str()
        .expect("requestId")
        .to_string();

    // What lambda_http::run does with the event, then the function's own service.
    let request = lambda_http::request::from_str(&text)
        .map_err(|e| format!("{file}: not an API Gateway event: {e}"))?;
    let service = match expected.function.as_str() {
        "pets" => petstore::http::service(pets::routes(), app.app.clone()),
        "store" => petstore::http::service(store::routes(), app.app.clone()),
        "webhooks" => {
            let routes = webhooks::routes(app.hooks.webhooks());
            petstore::http::service(routes, app.app.clone())
        }
        other => return Err(format!("{file}: unknown function {other}")),
    };
    let (method, path) = (request.method().clone(), request.uri().path().to_string());
    let response = TestResponse::read(service, request).await;
    let mut problems = Vec::new();
    // The answer, and so the expectation it met, is one openapi.yaml describes.
    if let Err(faults) = response.contract_faults(&method, &path) {
        problems.push(faults);
    }
    let TestResponse {
        status,
        headers,
        body,
    } = response;
    let text = String::from_utf8_lossy(&body);
    if status != expected.status {
        problems.push(format!("status {} (expected {})", status, expected.status));
    }
    if let Some(code) = &expected.code {
        match serde_json::from_slice::<Value>(&body) {
            Ok(error) if error["code"] == code.as_str() && error["status"] == expected.status => {}
            _ => problems.push(format!("not the Error record with code {code}")),
        }
    }
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if header("x-request-id") != Some(request_id.as_str()) {
        problems.push(format!(
            "X-Request-Id {:?} is not the event's requestId {request_id:?}",
            header("x-request-id")
        ));
    }
    // `GET /docs` is the one HTML page; the contract check above holds
    // every documented answer's Content-Type to openapi.yaml's.
    let html_page = method == http::Method::GET && path == "/docs";
    if !body.is_empty() && !html_page && header("content-type") != Some("application/json") {
        problems.push(format!("Content-Type {:?}", header("content-type")));
    }
    if expected.status == 201 && header("location").is_none() {
        problems.push("201 without Location".into());
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{file} ({}): {}; body: {text}",
            expected.function,
            problems.join("; ")
        ))
    }
}

#[tokio::test]
async fn every_event_gets_its_expected_answer_through_its_function() {
    let results: Vec<Result<(), String>> = futures::stream::iter(expectations())
        .map(|(file, expected)| replay(file, expected))
        .buffer_unordered(8)
        .collect()
        .await;
    let failures: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    assert!(
        failures.is_empty(),
        "{} event(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
