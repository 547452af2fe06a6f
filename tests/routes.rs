//! The routes in `template.yaml` (what API Gateway sends where), the routers
//! (what each function serves) and `openapi.yaml` (what the contract
//! documents) are one and the same set.
//!
//! The routers are asked by probing: a route they serve never answers the
//! router's own "no such route" 404 or a 405, and a method they do not serve on
//! a path answers 405 with `Allow` listing exactly the methods they do.

use crate::deploy::{self, fill_params, openapi_operations, template_routes, TemplateRoute};
use crate::helpers::{TestApp, API_KEY_HEADER};
use axum::body::Body;
use http::{HeaderValue, Method, Request};
use petstore::db::tables::Projects;
use petstore::http::service;
use std::collections::{BTreeMap, BTreeSet};
use tower::ServiceExt;

type Operation = (String, String);

/// The function that serves the API reference's static files: its routes are
/// files, not operations (`docs_assets_are_the_docs_function_s_only_routes`).
const DOCS_ASSETS_FUNCTION: &str = "docs";

/// The template's method routes (not `ANY`, not `$default`, not the docs
/// function's static files) as operations.
fn template_operations(routes: &[TemplateRoute]) -> BTreeSet<Operation> {
    routes
        .iter()
        .filter(|r| r.function != DOCS_ASSETS_FUNCTION)
        .filter_map(|r| match (&r.method, &r.path) {
            (Some(method), Some(path)) if method != "ANY" => Some((method.clone(), path.clone())),
            _ => None,
        })
        .collect()
}

fn show(set: &BTreeSet<Operation>) -> String {
    set.iter()
        .map(|(m, p)| format!("{m} {p}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn template_routes_are_the_openapi_operations() {
    let template = template_operations(&template_routes());
    let openapi = openapi_operations();
    assert!(!template.is_empty(), "template.yaml has no HttpApi routes");
    let only_template: BTreeSet<_> = template.difference(&openapi).cloned().collect();
    let only_openapi: BTreeSet<_> = openapi.difference(&template).cloned().collect();
    assert!(
        only_template.is_empty() && only_openapi.is_empty(),
        "template.yaml and openapi.yaml disagree.\n  only in template.yaml: {}\n  only in openapi.yaml: {}",
        show(&only_template),
        show(&only_openapi)
    );
}

#[test]
fn the_access_table_is_the_set_of_template_and_openapi_operations() {
    // Deny by default: an operation missing from the access table is refused
    // to everyone, so the table must list exactly the deployed operations.
    let table: BTreeSet<Operation> = petstore::http::access::ACCESS
        .iter()
        .map(|(method, route, _)| (method.to_string(), route.to_string()))
        .collect();
    for (name, operations) in [
        ("template.yaml", template_operations(&template_routes())),
        ("openapi.yaml", openapi_operations()),
    ] {
        assert_eq!(
            show(&table),
            show(&operations),
            "the access table and {name} list different operations"
        );
    }
}

#[test]
fn every_path_has_one_function_and_an_any_route_to_it() {
    let routes = template_routes();
    let mut owners: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut any_routes: BTreeMap<String, String> = BTreeMap::new();
    for route in &routes {
        let (Some(method), Some(path)) = (&route.method, &route.path) else {
            continue;
        };
        if method == "ANY" {
            let previous = any_routes.insert(path.clone(), route.function.clone());
            assert!(previous.is_none(), "two ANY routes for {path}");
        } else {
            owners
                .entry(path.clone())
                .or_default()
                .insert(route.function.clone());
        }
    }
    for (path, functions) in &owners {
        assert_eq!(
            functions.len(),
            1,
            "{path} is split between functions {functions:?}"
        );
        let owner = functions.iter().next().unwrap();
        assert_eq!(
            any_routes.get(path),
            Some(owner),
            "{path} needs `ANY {path}` to {owner}, so unsupported methods get the contract's 405"
        );
    }
    for path in any_routes.keys() {
        assert!(
            owners.contains_key(path),
            "ANY {path} has no method routes beside it"
        );
    }
    let defaults: Vec<_> = routes.iter().filter(|r| r.path.is_none()).collect();
    assert_eq!(
        defaults.len(),
        1,
        "exactly one $default route: {defaults:?}"
    );
    assert_eq!(defaults[0].method, None, "the $default route has no method");
    assert_eq!(
        defaults[0].function, "pets",
        "$default goes to the pets function"
    );
}

/// A response, read.
struct Probe {
    status: u16,
    allow: Option<String>,
    body: serde_json::Value,
}

impl Probe {
    /// The router found no route: its JSON 404, or a 405.
    fn missed(&self) -> bool {
        self.status == 405 || (self.status == 404 && self.body["message"] == "no such route")
    }

    /// The methods in `Allow`, without the HEAD axum adds to every GET.
    fn allowed(&self) -> BTreeSet<String> {
        self.allow
            .as_deref()
            .unwrap_or("")
            .split(',')
            .map(|m| m.trim().to_ascii_uppercase())
            .filter(|m| !m.is_empty() && m != "HEAD")
            .collect()
    }
}

/// Sends `method path` (path parameters filled in) through `router`, as the
/// test app's key holder, with an empty JSON body where one is expected.
async fn probe(app: &TestApp, router: &axum::Router, method: &str, path: &str) -> Probe {
    let mut request = Request::builder()
        .method(Method::from_bytes(method.as_bytes()).expect("a valid method"))
        .uri(fill_params(path, "1"));
    if matches!(method, "POST" | "PUT" | "PATCH") {
        request = request.header(http::header::CONTENT_TYPE, "application/json");
    }
    let body = if matches!(method, "POST" | "PUT" | "PATCH") {
        "{}"
    } else {
        ""
    };
    let mut request = request.body(Body::from(body)).expect("request is valid");
    if let Some(key) = &app.api_key {
        request.headers_mut().insert(
            API_KEY_HEADER,
            HeaderValue::from_str(key).expect("a valid key"),
        );
    }
    let response = router
        .clone()
        .oneshot(request)
        .await
        .unwrap_or_else(|never| match never {});
    let status = response.status().as_u16();
    let allow = response
        .headers()
        .get(http::header::ALLOW)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body is read");
    let body = serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
    Probe {
        status,
        allow,
        body,
    }
}

/// Methods per path.
fn by_path(operations: &BTreeSet<Operation>) -> BTreeMap<String, BTreeSet<String>> {
    let mut paths: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (method, path) in operations {
        paths
            .entry(path.clone())
            .or_default()
            .insert(method.clone());
    }
    paths
}

#[tokio::test]
async fn the_local_router_serves_exactly_the_documented_routes() {
    let app = TestApp::spawn().await;
    let router = app.hooks.service(&app.app);
    let routes = template_routes();
    let expected: BTreeSet<Operation> = template_operations(&routes)
        .union(&openapi_operations())
        .cloned()
        .collect();

    for (path, methods) in by_path(&expected) {
        for method in deploy::METHODS {
            let answer = probe(&app, &router, method, &path).await;
            if methods.contains(method) {
                assert!(
                    !answer.missed(),
                    "{method} {path} is documented but the router has no such route: {} {}",
                    answer.status,
                    answer.body
                );
            } else {
                assert_eq!(
                    answer.status, 405,
                    "{method} {path} is not documented but answers: {}",
                    answer.body
                );
                assert_eq!(
                    answer.body["code"], "METHOD_NOT_ALLOWED",
                    "{method} {path}: {}",
                    answer.body
                );
                assert_eq!(
                    answer.allowed(),
                    methods,
                    "{method} {path}: Allow ({:?}) lists what the router serves on the path",
                    answer.allow
                );
            }
        }
        // A method no route has anywhere: the router lists what it serves on the path.
        let answer = probe(&app, &router, "OPTIONS", &path).await;
        assert_eq!(answer.status, 405, "OPTIONS {path}");
        assert_eq!(
            answer.allowed(),
            methods,
            "the router's methods for {path} (Allow: {:?})",
            answer.allow
        );
    }

    let unknown = probe(&app, &router, "GET", "/no/such/route").await;
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.body["code"], "NOT_FOUND");
}

#[tokio::test]
async fn each_function_serves_the_routes_the_template_sends_it() {
    let app = TestApp::spawn().await;
    let router_of = |function: &str| match function {
        "pets" => service(pets::routes(), app.app.clone()),
        "store" => service(store::routes(), app.app.clone()),
        "webhooks" => service(webhooks::routes(app.hooks.webhooks()), app.app.clone()),
        DOCS_ASSETS_FUNCTION => docs::routes(),
        other => panic!("template.yaml names an unknown function binary `{other}`"),
    };
    for route in template_routes() {
        let router = router_of(&route.function);
        match (route.method.as_deref(), route.path.as_deref()) {
            (Some("ANY"), Some(path)) => {
                // Whatever method arrives, the function knows the path: 405 with Allow, never 404.
                let answer = probe(&app, &router, "OPTIONS", path).await;
                assert_eq!(
                    answer.status, 405,
                    "`ANY {path}` goes to {}, whose router does not know the path: {}",
                    route.function, answer.body
                );
            }
            (Some(method), Some(path)) => {
                let answer = probe(&app, &router, method, path).await;
                assert!(
                    !answer.missed(),
                    "`{method} {path}` goes to {}, whose router does not serve it: {} {}",
                    route.function,
                    answer.status,
                    answer.body
                );
            }
            _ => {
                // $default: any other path gets the JSON 404.
                let answer = probe(&app, &router, "GET", "/no/such/route").await;
                assert_eq!(answer.status, 404, "$default: {}", answer.body);
                assert_eq!(
                    answer.body["code"], "NOT_FOUND",
                    "$default: {}",
                    answer.body
                );
            }
        }
    }
}

#[test]
fn docs_assets_are_the_docs_function_s_only_routes() {
    let docs: BTreeSet<String> = template_routes()
        .iter()
        .filter(|r| r.function == DOCS_ASSETS_FUNCTION)
        .map(TemplateRoute::route_key)
        .collect();
    let expected: BTreeSet<String> = ["GET /docs/assets/{file}", "ANY /docs/assets/{file}"]
        .map(String::from)
        .into();
    assert_eq!(docs, expected);
}

#[test]
fn the_template_projects_the_indexes_as_the_code_creates_them() {
    // Every index of every layout the template's states hold (layout 1's
    // GSI1-GSI4 until they are deleted, layout 2's GSI1v2-GSI4v2, GSI5).
    // `None` is ALL: the whole item.
    let in_code: BTreeMap<String, Option<BTreeSet<String>>> = petstore::db::Layout::ALL
        .iter()
        .flat_map(|layout| layout.indexes().iter())
        .map(|(name, projects)| {
            let attributes = match projects {
                Projects::All => None,
                Projects::Only(attributes) => {
                    Some(attributes.iter().map(|a| a.to_string()).collect())
                }
            };
            (name.to_string(), attributes)
        })
        .collect();
    assert_eq!(deploy::template_data_table_indexes(), in_code);
}
