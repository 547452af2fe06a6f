//! What every DynamoDB client of ours adds to the SDK's configuration, so
//! that a call costs less CPU for the same request on the wire.
//!
//! The SDK does some work on every call that gives the same answer every
//! time in a process like ours (one region, one set of tables, credentials
//! from the environment). Each piece here replaces such work with its answer,
//! through the SDK's public configuration, and says what it leaves unchanged.

use aws_runtime::invocation_id::InvocationIdInterceptor;
use aws_runtime::user_agent::UserAgentInterceptor;
use aws_sdk_dynamodb::config::endpoint::{DefaultResolver, Params, ResolveEndpoint};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::endpoint::EndpointFuture;
use aws_smithy_runtime_api::client::interceptors::context::{
    BeforeSerializationInterceptorContextRef, BeforeTransmitInterceptorContextMut,
};
use aws_smithy_runtime_api::client::interceptors::{disable_interceptor, Intercept};
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;
use aws_smithy_types::endpoint::Endpoint;
use std::sync::{Mutex, OnceLock};

/// `builder` with the pieces below.
pub fn lean(builder: aws_sdk_dynamodb::config::Builder) -> aws_sdk_dynamodb::config::Builder {
    builder
        .endpoint_resolver(RememberedEndpoints::default())
        .interceptor(FixedHeaders)
        // Stalled-stream protection watches a body's throughput while it
        // streams: it wraps each request and response body in a timer that
        // fails an attempt whose body makes no progress for its grace
        // period (5 s). It is for long streams (S3's objects). DynamoDB's
        // bodies are one JSON document each, at most a few MB, read whole
        // within the attempt; the watch cost about 12-14k instructions a call
        // under callgrind (more for a page of items, polled in more frames).
        // Without it a body that stops half-way fails at the function's
        // timeout (10 s for pets and store, 60 s for webhooks) instead of
        // being retried after 5 s; a call that stalls before its headers
        // had no such guard with it either.
        .stalled_stream_protection(
            aws_sdk_dynamodb::config::StalledStreamProtectionConfig::disabled(),
        )
}

/// How many distinct endpoint parameters a process remembers. DynamoDB's
/// parameters name the tables a call touches (`ResourceArn`, and for a
/// transaction `ResourceArnList`), so a process sees a few: its two tables,
/// and one list per shape of transaction it writes.
const REMEMBERED: usize = 16;

/// The SDK's own endpoint rules, with their answers remembered per set of
/// parameters. The SDK's resolver remembers one answer: a process that
/// alternates between the rate limiter's table and the data table (every
/// keyed request: the count, then the read) misses it on each call and runs
/// the rules again (about 10k instructions a call under callgrind). The
/// answer is the rules' own for the same parameters, so the region, the
/// partition, FIPS, dual-stack and an endpoint URL from the environment
/// (`AWS_ENDPOINT_URL_DYNAMODB`, DynamoDB Local) are honoured exactly as
/// without it; an error is never remembered.
#[derive(Debug, Default)]
pub struct RememberedEndpoints {
    rules: DefaultResolver,
    /// Oldest first; at most [`REMEMBERED`].
    answers: Mutex<Vec<(Params, Endpoint)>>,
}

impl RememberedEndpoints {
    fn recall(&self, params: &Params) -> Option<Endpoint> {
        let answers = self.answers.lock().ok()?;
        answers
            .iter()
            .find(|(known, _)| known == params)
            .map(|(_, endpoint)| endpoint.clone())
    }

    fn remember(&self, params: &Params, endpoint: &Endpoint) {
        let Ok(mut answers) = self.answers.lock() else {
            return;
        };
        if answers.iter().any(|(known, _)| known == params) {
            return;
        }
        if answers.len() >= REMEMBERED {
            answers.remove(0);
        }
        answers.push((params.clone(), endpoint.clone()));
    }
}

impl ResolveEndpoint for RememberedEndpoints {
    fn resolve_endpoint<'a>(&'a self, params: &'a Params) -> EndpointFuture<'a> {
        if let Some(endpoint) = self.recall(params) {
            return EndpointFuture::ready(Ok(endpoint));
        }
        EndpointFuture::new(async move {
            let endpoint = self.rules.resolve_endpoint(params).await?;
            self.remember(params, &endpoint);
            Ok(endpoint)
        })
    }
}

/// The `user-agent` every call sends: this service, and the SDK's crate
/// and version.
pub fn user_agent() -> &'static str {
    static VALUE: OnceLock<String> = OnceLock::new();
    VALUE.get_or_init(|| {
        format!(
            "petstore/{} aws-sdk-dynamodb/{}",
            env!("CARGO_PKG_VERSION"),
            aws_sdk_dynamodb::meta::PKG_VERSION
        )
    })
}

/// Headers that are the same on every call, in place of two the SDK builds
/// again for each. DynamoDB needs none of them; they tell AWS about its
/// callers. The SDK lets a configuration switch a (non-permanent)
/// interceptor off for an operation (`disable_interceptor`, read from the
/// operation's config bag before each of its hooks); this one does so first
/// thing, before the SDK's interceptors have run any hook:
///
/// - the user agent (`UserAgentInterceptor`): built per call from the
///   environment's OS and language and the features the call used, into
///   `user-agent` and `x-amz-user-agent` (about 30k instructions a call under
///   callgrind, and `x-amz-user-agent` is signed, so SigV4 hashes it too).
///   [`user_agent`] is sent instead, so that a call in CloudTrail still says
///   who made it;
/// - the invocation id (`InvocationIdInterceptor`): a random UUID per
///   operation in `amz-sdk-invocation-id`, which lets AWS tie a retry to its
///   first attempt. Nothing of ours reads it; the attempt number AWS and our
///   telemetry read (`amz-sdk-request: attempt=2; max=3`) stays.
#[derive(Debug)]
struct FixedHeaders;

impl Intercept for FixedHeaders {
    fn name(&self) -> &'static str {
        "FixedHeaders"
    }

    fn read_before_execution(
        &self,
        _context: &BeforeSerializationInterceptorContextRef<'_>,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        cfg.interceptor_state()
            .store_put(disable_interceptor::<UserAgentInterceptor>(
                "petstore::sdk_config::FixedHeaders sends a fixed user agent",
            ))
            .store_put(disable_interceptor::<InvocationIdInterceptor>(
                "petstore::sdk_config::FixedHeaders: no invocation id",
            ));
        Ok(())
    }

    fn modify_before_signing(
        &self,
        context: &mut BeforeTransmitInterceptorContextMut<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        context
            .request_mut()
            .headers_mut()
            .insert("user-agent", user_agent());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sdk::{self, client::Around};
    use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
    use aws_smithy_runtime_api::client::http::{HttpConnectorFuture, SharedHttpConnector};
    use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
    use aws_smithy_types::body::SdkBody;
    use std::sync::Arc;

    /// A request's URI and headers.
    type Sent = (String, Vec<(String, String)>);

    /// Answers every call with an empty object, keeping each request's URI and headers.
    #[derive(Debug, Default)]
    struct Capture(Arc<Mutex<Vec<Sent>>>);

    impl Around for Capture {
        fn call(&self, _inner: &SharedHttpConnector, request: HttpRequest) -> HttpConnectorFuture {
            let headers = request
                .headers()
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect();
            if let Ok(mut seen) = self.0.lock() {
                seen.push((request.uri().to_string(), headers));
            }
            HttpConnectorFuture::ready(Ok(HttpResponse::new(
                200.try_into().expect("a status"),
                SdkBody::from("{}"),
            )))
        }
    }

    /// A call from a client built as ours are (no endpoint URL: real AWS)
    /// goes to the region's endpoint, signed, with our one user agent and
    /// none of the SDK's.
    #[tokio::test]
    async fn a_call_goes_signed_to_the_regions_endpoint_with_our_user_agent() {
        let capture = Capture::default();
        let seen = capture.0.clone();
        let config = lean(aws_sdk_dynamodb::Config::builder())
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("eu-west-1"))
            .credentials_provider(Credentials::new(
                "AKIDEXAMPLE",
                "secret",
                None,
                None,
                "test",
            ))
            .http_client(sdk::client::wrap(sdk::hyper_client(), capture))
            .build();
        let client = aws_sdk_dynamodb::Client::from_conf(config);
        for _ in 0..2 {
            client
                .describe_limits()
                .send()
                .await
                .expect("the captured answer parses");
        }
        let seen = seen.lock().expect("not poisoned");
        assert_eq!(seen.len(), 2);
        for (uri, headers) in seen.iter() {
            let header = |name: &str| {
                headers
                    .iter()
                    .filter(|(n, _)| n == name)
                    .map(|(_, v)| v.as_str())
                    .collect::<Vec<_>>()
            };
            assert_eq!(uri, "https://dynamodb.eu-west-1.amazonaws.com/");
            assert_eq!(header("user-agent"), [user_agent()]);
            assert!(header("x-amz-user-agent").is_empty(), "{headers:?}");
            assert!(header("amz-sdk-invocation-id").is_empty(), "{headers:?}");
            assert_eq!(header("amz-sdk-request"), ["attempt=1; max=3"]);
            let authorization = header("authorization");
            assert_eq!(authorization.len(), 1, "{headers:?}");
            assert!(
                authorization[0].starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
                    && authorization[0].contains("/eu-west-1/dynamodb/aws4_request"),
                "{authorization:?}"
            );
        }
    }

    fn params(region: &str) -> aws_sdk_dynamodb::config::endpoint::ParamsBuilder {
        Params::builder()
            .region(region)
            .use_fips(false)
            .use_dual_stack(false)
    }

    async fn both(params: Params) -> (Result<String, String>, Result<String, String>) {
        let url = |r: Result<Endpoint, aws_smithy_runtime_api::box_error::BoxError>| {
            r.map(|e| e.url().to_string()).map_err(|e| e.to_string())
        };
        let remembered = RememberedEndpoints::default();
        // Asked twice: the second answer is the remembered one.
        let first = url(remembered.resolve_endpoint(&params).await);
        let second = url(remembered.resolve_endpoint(&params).await);
        assert_eq!(first, second, "{params:?}");
        (
            second,
            url(DefaultResolver::new().resolve_endpoint(&params).await),
        )
    }

    /// The remembered answer is the rules' answer, for the parameters our
    /// stack uses and for those it does not (FIPS, dual-stack, another
    /// partition, an endpoint URL, a table's ARN).
    #[tokio::test]
    async fn answers_as_the_sdk_rules_do() {
        let cases = [
            params("us-east-1").build(),
            params("eu-west-1").resource_arn("petstore-data").build(),
            params("us-east-1").use_fips(true).build(),
            params("us-east-1").use_dual_stack(true).build(),
            params("cn-north-1").build(),
            params("us-gov-west-1").use_fips(true).build(),
            params("us-east-1")
                .endpoint("http://127.0.0.1:8000")
                .build(),
            params("us-east-1")
                .account_id("123456789012")
                .account_id_endpoint_mode("required")
                .build(),
            params("us-east-1")
                .resource_arn("arn:aws:dynamodb:us-east-1:123456789012:table/petstore")
                .build(),
        ];
        for case in cases {
            let case = case.expect("valid parameters");
            let (remembered, rules) = both(case.clone()).await;
            assert_eq!(remembered, rules, "{case:?}");
        }
        let (ours, _) = both(params("us-east-1").build().expect("valid")).await;
        assert_eq!(
            ours.as_deref(),
            Ok("https://dynamodb.us-east-1.amazonaws.com")
        );
    }

    #[test]
    fn stalled_stream_protection_is_off() {
        let config = lean(aws_sdk_dynamodb::Config::builder()).build();
        let protection = config.stalled_stream_protection();
        assert_eq!(protection.map(|p| p.is_enabled()), Some(false));
    }

    /// Distinct parameters get distinct answers, and an old one is forgotten
    /// rather than the memory growing.
    #[tokio::test]
    async fn remembers_each_set_of_parameters_up_to_a_bound() {
        let remembered = RememberedEndpoints::default();
        let east = params("us-east-1").build().expect("valid");
        let west = params("us-west-2").build().expect("valid");
        for _ in 0..2 {
            let e = remembered.resolve_endpoint(&east).await.expect("resolves");
            let w = remembered.resolve_endpoint(&west).await.expect("resolves");
            assert_eq!(e.url(), "https://dynamodb.us-east-1.amazonaws.com");
            assert_eq!(w.url(), "https://dynamodb.us-west-2.amazonaws.com");
        }
        for table in 0..2 * REMEMBERED {
            let table = params("us-east-1")
                .resource_arn(format!("table-{table}"))
                .build();
            remembered
                .resolve_endpoint(&table.expect("valid"))
                .await
                .expect("resolves");
        }
        let answers = remembered.answers.lock().expect("not poisoned");
        assert_eq!(answers.len(), REMEMBERED);
        assert!(!answers.iter().any(|(known, _)| *known == east));
    }
}
