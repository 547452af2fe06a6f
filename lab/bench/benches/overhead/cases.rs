//! What the bench times: requests through each function's router, and bare
//! SDK calls as references, to tell the SDK's own cost per call from ours.

use crate::service::Routers;
use axum::body::Body;
use axum::Router;
use http::{Method, Request};
use tower::ServiceExt;

/// One thing the bench repeats, under the name it reports.
pub struct Case {
    pub name: &'static str,
    timed: Timed,
}

enum Timed {
    Route(RouteRequest),
    Sdk(SdkCall),
}

/// A request through a function's router and wrapper.
/// The bench's key, which the stub DynamoDB knows as an enterprise staff key.
const BENCH_KEY: &str = "psk_benchbenchbenchbenchbenchbenchbenchbench000";

struct RouteRequest {
    router: Router,
    method: Method,
    path: &'static str,
    body: Option<&'static str>,
}

impl Case {
    fn route(name: &'static str, router: &Router, method: Method, path: &'static str) -> Case {
        let request = RouteRequest {
            router: router.clone(),
            method,
            path,
            body: None,
        };
        Case {
            name,
            timed: Timed::Route(request),
        }
    }

    fn sdk(name: &'static str, call: SdkCall) -> Case {
        Case {
            name,
            timed: Timed::Sdk(call),
        }
    }

    fn with_body(mut self, body: &'static str) -> Case {
        if let Timed::Route(request) = &mut self.timed {
            request.body = Some(body);
        }
        self
    }

    /// Runs it once; the status it answered.
    pub async fn once(&self) -> u16 {
        match &self.timed {
            Timed::Route(request) => request.once().await,
            Timed::Sdk(call) => call.once().await,
        }
    }
}

impl RouteRequest {
    fn request(&self) -> Request<Body> {
        let mut builder = Request::builder()
            .method(self.method.clone())
            .uri(self.path)
            // An issued key's form (psk_ and 43 base64url characters): any
            // other is refused before a look-up, and the case would time that.
            .header("x-api-key", BENCH_KEY)
            .header("host", "localhost");
        let body = match self.body {
            Some(body) => {
                builder = builder.header("content-type", "application/json");
                Body::from(body)
            }
            None => Body::empty(),
        };
        // A method, path and headers of our own, all valid.
        builder.body(body).expect("the case's request builds")
    }

    async fn once(&self) -> u16 {
        let Ok(response) = self.router.clone().oneshot(self.request()).await;
        let status = response.status().as_u16();
        // Read the body, as lambda_http and hyper would.
        let _ = http_body_util::BodyExt::collect(response.into_body()).await;
        status
    }
}

/// A bare SDK call against the stub.
enum SdkCall {
    GetItem(aws_sdk_dynamodb::Client),
    UpdateItem(aws_sdk_dynamodb::Client),
    /// A page of 20 pets: the SDK's own parsing of the response, no conversion.
    Query(aws_sdk_dynamodb::Client),
}

impl SdkCall {
    async fn once(&self) -> u16 {
        use aws_sdk_dynamodb::types::AttributeValue::{N, S};
        let ok = match self {
            SdkCall::GetItem(client) => client
                .get_item()
                .table_name("petstore")
                .key("PK", S("PET#1".into()))
                .key("SK", S("PET".into()))
                .consistent_read(true)
                .send()
                .await
                .is_ok(),
            SdkCall::UpdateItem(client) => client
                .update_item()
                .table_name("petstore-ratelimits")
                .key("PK", S("LIMIT#KEY#1".into()))
                .update_expression("ADD minuteCount :one, dayCount :one")
                .expression_attribute_values(":one", N("1".into()))
                .return_values(aws_sdk_dynamodb::types::ReturnValue::AllNew)
                .send()
                .await
                .is_ok(),
            SdkCall::Query(client) => client
                .query()
                .table_name("petstore")
                .index_name("GSI1")
                .key_condition_expression("#pk = :pk")
                .expression_attribute_names("#pk", "GSI1PK")
                .expression_attribute_values(":pk", S("PET".into()))
                .limit(21)
                .send()
                .await
                .is_ok_and(|out| out.items().len() == 20),
        };
        if ok {
            200
        } else {
            500
        }
    }
}

pub fn all(routers: &Routers, client: &aws_sdk_dynamodb::Client) -> Vec<Case> {
    let Routers { pets, store } = routers;
    vec![
        Case::sdk(
            "SDK GetItem alone (reference)",
            SdkCall::GetItem(client.clone()),
        ),
        Case::sdk(
            "SDK UpdateItem alone (reference)",
            SdkCall::UpdateItem(client.clone()),
        ),
        Case::sdk(
            "SDK Query, 20 pets (reference)",
            SdkCall::Query(client.clone()),
        ),
        Case::route("404 (wrapper only)", pets, Method::GET, "/nothing-here"),
        Case::route("GET /pets?limit=20", pets, Method::GET, "/pets?limit=20"),
        Case::route(
            "GET /pets?ids=(5)",
            pets,
            Method::GET,
            "/pets?ids=1,2,3,4,5",
        ),
        Case::route(
            "GET /store/inventory?limit=20",
            store,
            Method::GET,
            "/store/inventory?limit=20",
        ),
        Case::route("POST /pets", pets, Method::POST, "/pets")
            .with_body("{\"name\":\"Rex\",\"categoryId\":7}"),
        Case::route("POST /store/orders", store, Method::POST, "/store/orders")
            .with_body("{\"petId\":1,\"quantity\":1}"),
        Case::route(
            "DELETE /store/orders/{id}",
            store,
            Method::DELETE,
            "/store/orders/9",
        ),
    ]
}
