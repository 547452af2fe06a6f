//! A release's pre-traffic check, and the same checks against a deployed URL.
//!
//! [`checks`] says what a healthy version answers: a few requests that need
//! no key and change nothing (the contract's `GET /openapi.json`, a keyless
//! `GET /pets` and `GET /store/inventory` answered 401 with the rate-limit
//! headers, which goes through the whole wrapper and the counter table, an
//! API reference file), one with a key ([`key`]: a short-lived key the check
//! makes itself) that reads the customer's own order list through the owner
//! index, and, for the stream's function, an empty batch.
//! Each check is sent one of two ways:
//!
//! - [`invoke`]: to one function version through Lambda's Invoke API, in the
//!   event shape API Gateway sends ([`apigw`]). The CodeDeploy hook
//!   ([`hook`], the `pretraffic` binary) does this to the version being
//!   released, before it gets any traffic, and reports the verdict; locally,
//!   `petstore-smoke --lambda-endpoint` does it to `cargo lambda watch`.
//! - [`web`]: over HTTP(S) to a deployed API (`petstore-smoke --url`), as the
//!   pipeline does after a deploy.

pub mod apigw;
pub mod checks;
pub mod hook;
pub mod invoke;
pub mod key;
pub mod web;

/// The HTTPS client of the AWS SDK clients here: rustls on ring, as every
/// function of the project (shared/src/lib.rs, `http_client`).
pub fn sdk_http_client() -> aws_sdk_lambda::config::SharedHttpClient {
    use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};
    aws_smithy_http_client::Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::Ring))
        .build_https()
}
