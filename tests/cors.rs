//! Browsers on other origins (contract section 7), through the real wrapper:
//! a listed origin's preflight is answered without a key and without
//! counting, and every answer to it exposes the contract's headers; any other
//! origin, and every origin when none is listed, sees no CORS at all. And
//! `template.yaml` gives API Gateway the same lists the local stacks use.

use crate::deploy::read_yaml;
use crate::helpers::{TestApp, TestResponse};
use crate::ratelimit::{config, pinned};
use axum::body::Body;
use http::{header, Method, Request};
use petstore::http::cors::{ALLOWED_HEADERS, ALLOWED_METHODS, EXPOSED_HEADERS, MAX_AGE};
use petstore::ratelimit::Plan;
use serde_json::json;
use serde_yaml_ng::Value;
use std::collections::BTreeSet;

const LISTED: &str = "https://shop.example.com";
const ALSO_LISTED: &str = "http://127.0.0.1:5173";
const UNLISTED: &str = "https://elsewhere.example.com";
const ORIGINS: &[(&str, &str)] = &[(
    "ALLOWED_ORIGINS",
    "https://shop.example.com, http://127.0.0.1:5173",
)];

/// The response headers every browser lets a page read (Fetch's
/// CORS-safelisted response-header names).
const SAFELISTED: [&str; 7] = [
    "cache-control",
    "content-language",
    "content-length",
    "content-type",
    "expires",
    "last-modified",
    "pragma",
];

/// Headers the service sends that a page cannot read, on purpose (the
/// contract's list, section 7, leaves them out), and why a page does without.
const NOT_EXPOSED: [(&str, &str); 4] = [
    ("allow", "a 405's Error record names the methods too"),
    ("location", "a 201's body holds the new record's id"),
    ("vary", "for caches, not for pages"),
    (
        "x-content-type-options",
        "for the browser itself (do not sniff), not for pages",
    ),
];

/// `method path` sent from a page on `origin`, with `headers`.
async fn from_origin(
    app: &TestApp,
    method: Method,
    path: &str,
    origin: &str,
    headers: &[(&str, &str)],
) -> TestResponse {
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header(header::ORIGIN, origin);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    app.request(request.body(Body::empty()).expect("a valid request"))
        .await
}

/// A browser's preflight for a keyed `GET` from `origin`.
async fn preflight(app: &TestApp, path: &str, origin: &str) -> TestResponse {
    let asks = [
        ("access-control-request-method", "GET"),
        ("access-control-request-headers", "x-api-key"),
    ];
    from_origin(app, Method::OPTIONS, path, origin, &asks).await
}

/// The CORS headers of a response (none, for an origin the service does not serve).
fn cors_headers(response: &TestResponse) -> Vec<String> {
    response
        .headers
        .keys()
        .map(|name| name.as_str().to_string())
        .filter(|name| name.starts_with("access-control-"))
        .collect()
}

/// A comma-separated header value as a lower-case set.
fn listed_in(response: &TestResponse, name: &str) -> BTreeSet<String> {
    response
        .header(name)
        .unwrap_or_else(|| panic!("{name} is missing (status {})", response.status))
        .split(',')
        .map(|item| item.trim().to_ascii_lowercase())
        .filter(|item| !item.is_empty())
        .collect()
}

#[track_caller]
fn assert_readable_from(response: &TestResponse, origin: &str) {
    assert_eq!(
        response.header("access-control-allow-origin"),
        Some(origin),
        "status {}",
        response.status
    );
    let exposed = listed_in(response, "access-control-expose-headers");
    for name in EXPOSED_HEADERS {
        assert!(exposed.contains(name), "{name} is not exposed: {exposed:?}");
    }
}

fn remaining(response: &TestResponse) -> u64 {
    response
        .header("x-ratelimit-remaining")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no x-ratelimit-remaining (status {})", response.status))
}

#[tokio::test]
async fn a_listed_origins_preflight_is_answered_without_a_key_and_not_counted() {
    // Given a store that lists two origins, and a key allowing 10 requests a minute
    let (app, _clock) = pinned(config(ORIGINS)).await;
    let keyed = app.with_new_key(Plan::Enterprise, Some((10, 1_000))).await;
    let before = remaining(&keyed.get("/categories").await);

    // When a page on either origin asks, without a key, to send a keyed GET
    for origin in [LISTED, ALSO_LISTED] {
        let answer = preflight(&keyed.without_key(), "/categories", origin).await;

        // Then it may: that origin, the contract's methods and request headers
        assert_eq!(answer.status, 200, "{}", answer.text());
        assert_eq!(answer.header("access-control-allow-origin"), Some(origin));
        let methods = listed_in(&answer, "access-control-allow-methods");
        for method in ALLOWED_METHODS {
            let method = method.as_str().to_ascii_lowercase();
            assert!(methods.contains(&method), "{method}: {methods:?}");
        }
        assert_eq!(
            listed_in(&answer, "access-control-allow-headers"),
            ALLOWED_HEADERS.iter().map(|h| h.to_string()).collect()
        );
        assert_eq!(
            answer.header("access-control-max-age"),
            Some(MAX_AGE.as_secs().to_string().as_str())
        );
        // and nothing of the API's own: it went no further than the CORS layer
        assert_eq!(answer.header("x-ratelimit-remaining"), None);
        assert!(answer.body.is_empty());
    }
    // A preflight that carries the key (a non-browser client's) is not counted either
    let answer = preflight(&keyed, "/categories", LISTED).await;
    assert_eq!(answer.status, 200);

    // And the key's next request finds only its own first one counted
    let after = keyed.get("/categories").await;
    after.assert_status(200);
    assert_eq!(remaining(&after), before - 1);
}

#[tokio::test]
async fn another_origin_sees_no_cors_and_its_options_is_answered_as_usual() {
    // Given a store that lists origins other than this page's
    let (app, _clock) = pinned(config(ORIGINS)).await;

    // When that page preflights, and sends a GET, with the key
    let answer = preflight(&app, "/pets", UNLISTED).await;
    let plain = app.send(Method::OPTIONS, "/pets").await;
    let get = from_origin(&app, Method::GET, "/pets", UNLISTED, &[]).await;

    // Then no answer carries a CORS header (the browser blocks the page), and
    // the OPTIONS is answered as one without an Origin: the contract's 405
    answer.assert_error(405, "METHOD_NOT_ALLOWED");
    assert_eq!(answer.header("allow"), plain.header("allow"));
    assert_eq!(cors_headers(&answer), Vec::<String>::new());
    get.assert_status(200);
    assert_eq!(cors_headers(&get), Vec::<String>::new());

    // And a listed origin's OPTIONS that is no preflight is answered as usual too
    let bare = from_origin(&app, Method::OPTIONS, "/pets", LISTED, &[]).await;
    bare.assert_error(405, "METHOD_NOT_ALLOWED");
    assert_eq!(cors_headers(&bare), Vec::<String>::new());
}

#[tokio::test]
async fn with_no_origin_listed_a_preflight_is_the_usual_405() {
    // Given a store with the default configuration
    let app = TestApp::spawn().await;

    // When a page anywhere preflights a keyed GET (sent with the key here)
    let answer = preflight(&app, "/pets", LISTED).await;
    let get = from_origin(&app, Method::GET, "/pets", LISTED, &[]).await;

    // Then it gets the 405 of any unserved method, and no CORS header anywhere
    answer.assert_error(405, "METHOD_NOT_ALLOWED");
    assert_eq!(cors_headers(&answer), Vec::<String>::new());
    get.assert_status(200);
    assert_eq!(cors_headers(&get), Vec::<String>::new());
}

#[tokio::test]
async fn every_answer_to_a_listed_origin_exposes_the_contracts_headers_refusals_included() {
    // Given a store that lists the page's origin, a key allowing one request a
    // minute, and a staff key
    let (staff, _clock) = pinned(config(ORIGINS)).await;
    let one_a_minute = staff.with_new_key(Plan::Enterprise, Some((1, 1_000))).await;
    let category = staff.create_category("Dogs").await;
    let pet = staff.create_pet("Rex", category, "available").await;
    staff.create_pet("Fido", category, "available").await;

    // When the page gets a 200, a 401 and a 429
    let served = from_origin(&one_a_minute, Method::GET, "/categories", LISTED, &[]).await;
    let limited = from_origin(&one_a_minute, Method::GET, "/categories", LISTED, &[]).await;
    let unkeyed = from_origin(&staff.without_key(), Method::GET, "/pets", LISTED, &[]).await;

    // Then each lets the page read the contract's headers, Retry-After included
    served.assert_status(200);
    limited.assert_error(429, "RATE_LIMITED");
    assert!(limited.header("retry-after").is_some());
    unkeyed.assert_error(401, "UNAUTHORIZED");
    for response in [&served, &limited, &unkeyed] {
        assert_readable_from(response, LISTED);
    }

    // And every header the service sends on a page of a list, a deprecated
    // read, a beta operation and a replayed change is one a page can read,
    // or one the contract leaves out on purpose
    let replay = [
        ("content-type", "application/json"),
        ("idempotency-key", "cors-1"),
    ];
    let body = json!({ "name": "Cats" }).to_string();
    let mut answers = vec![served, limited, unkeyed];
    for (method, path) in [
        (Method::GET, "/pets?limit=1".to_string()),
        (Method::GET, format!("/pets/{pet}")),
        (Method::GET, "/store/inventory".to_string()),
    ] {
        answers.push(from_origin(&staff, method, &path, LISTED, &[]).await);
    }
    for _ in 0..2 {
        let mut request = Request::builder()
            .method(Method::POST)
            .uri("/categories")
            .header(header::ORIGIN, LISTED);
        for (name, value) in replay {
            request = request.header(name, value);
        }
        let request = request
            .body(Body::from(body.clone()))
            .expect("a valid request");
        answers.push(staff.request(request).await);
    }
    let sent: BTreeSet<String> = answers
        .iter()
        .flat_map(|response| response.headers.keys().map(|n| n.as_str().to_string()))
        .collect();
    for name in [
        "link",
        "deprecation",
        "sunset",
        "x-api-stability",
        "idempotent-replayed",
    ] {
        assert!(sent.contains(name), "no answer above sent {name}: {sent:?}");
    }
    for name in &sent {
        let readable = EXPOSED_HEADERS.contains(&name.as_str())
            || SAFELISTED.contains(&name.as_str())
            || name.starts_with("access-control-");
        assert!(
            readable || NOT_EXPOSED.iter().any(|(left_out, _)| left_out == name),
            "the service sends {name}, which a page on another origin cannot read: \
             expose it (shared/src/http/cors.rs and the contract) or say why not here"
        );
    }
    for response in &answers {
        assert_readable_from(response, LISTED);
    }
}

/// What `value` holds under the CloudFormation tag `tag` (`Ref`, `If`, ...).
fn tagged<'a>(value: &'a Value, tag: &str) -> &'a Value {
    match value {
        Value::Tagged(tagged) if tagged.tag == tag => &tagged.value,
        other => panic!("expected !{tag}, found {other:?}"),
    }
}

/// A template list, lower-cased.
fn names(value: &Value) -> BTreeSet<String> {
    value
        .as_sequence()
        .unwrap_or_else(|| panic!("a list: {value:?}"))
        .iter()
        .map(|item| item.as_str().unwrap_or_default().to_ascii_lowercase())
        .collect()
}

#[test]
fn the_template_gives_api_gateway_the_local_stacks_lists_only_when_origins_are_set() {
    let template = read_yaml("template.yaml");

    // The parameter: empty by default, comma-separated origins
    let parameter = &template["Parameters"]["AllowedOrigins"];
    assert_eq!(parameter["Type"].as_str(), Some("String"));
    assert_eq!(parameter["Default"].as_str(), Some(""));

    // CorsConfiguration only under a condition that is false for the default
    let cors = tagged(
        &template["Resources"]["HttpApi"]["Properties"]["CorsConfiguration"],
        "If",
    );
    let condition = cors[0].as_str().expect("a condition name");
    let test = tagged(&template["Conditions"][condition], "Not");
    let equals = tagged(&test[0], "Equals");
    assert_eq!(tagged(&equals[0], "Ref").as_str(), Some("AllowedOrigins"));
    assert_eq!(equals[1].as_str(), Some(""));
    assert_eq!(tagged(&cors[2], "Ref").as_str(), Some("AWS::NoValue"));

    // and then exactly the lists the local stacks answer with
    let configured = &cors[1];
    let split = tagged(&configured["AllowOrigins"], "Split");
    assert_eq!(split[0].as_str(), Some(","));
    assert_eq!(tagged(&split[1], "Ref").as_str(), Some("AllowedOrigins"));
    let methods: BTreeSet<String> = ALLOWED_METHODS
        .iter()
        .map(|m| m.as_str().to_ascii_lowercase())
        .collect();
    assert_eq!(names(&configured["AllowMethods"]), methods);
    let allowed: BTreeSet<String> = ALLOWED_HEADERS.iter().map(|h| h.to_string()).collect();
    assert_eq!(names(&configured["AllowHeaders"]), allowed);
    let exposed: BTreeSet<String> = EXPOSED_HEADERS.iter().map(|h| h.to_string()).collect();
    assert_eq!(names(&configured["ExposeHeaders"]), exposed);
    assert_eq!(configured["MaxAge"].as_u64(), Some(MAX_AGE.as_secs()));
    assert_eq!(
        configured.get("AllowCredentials"),
        None,
        "keys travel in a header, never in cookies"
    );

    // The functions are not given the setting: API Gateway ignores what they would add
    let functions_env = [&template["Globals"]["Function"]["Environment"]["Variables"]];
    let resources = template["Resources"].as_mapping().expect("Resources");
    let own_envs = resources
        .values()
        .map(|resource| &resource["Properties"]["Environment"]["Variables"]);
    for variables in functions_env.into_iter().chain(own_envs) {
        assert_eq!(variables.get("ALLOWED_ORIGINS"), None);
    }
}

#[test]
fn openapi_yaml_names_what_a_page_may_send_and_read() {
    let document = read_yaml("openapi.yaml");
    let description = document["info"]["description"].as_str().unwrap_or_default();
    let section = description
        .split("## Browsers (CORS)")
        .nth(1)
        .expect("openapi.yaml's description has a section \"Browsers (CORS)\"")
        .to_ascii_lowercase();
    let methods = ALLOWED_METHODS.map(|m| m.as_str().to_ascii_lowercase());
    let names = methods
        .iter()
        .map(String::as_str)
        .chain(ALLOWED_HEADERS)
        .chain(EXPOSED_HEADERS);
    for name in names {
        assert!(
            section.contains(&format!("`{name}`")),
            "openapi.yaml, \"Browsers (CORS)\", does not name `{name}`"
        );
    }
}
