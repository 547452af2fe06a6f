//! The HTTP side of every SDK client of ours, under every layer that makes
//! a call: what goes around the SDK's HTTP client, each deciding what
//! happens to one call, and the client they go around.
//!
//! - [`client`]: the one wrapper ([`client::Around`]) and the SDK's client
//!   and connector plumbing for all of them;
//! - [`gate`]: a handler's calls held until its request's count admits it
//!   (its task-local is set by the rate-limit layer around the handler, so
//!   a [`crate::db::Db`]'s calls within a request wait there, unseen by
//!   `db/`);
//! - [`dry_run`]: the warm-up's calls answered in the process.
//!
//! [`crate::http_client`] assembles them, with [`crate::telemetry`]'s
//! count, around [`hyper_client`].

pub mod client;
pub mod dry_run;
pub mod gate;

use aws_sdk_dynamodb::config::SharedHttpClient;

/// The HTTP client under every DynamoDB client of ours: hyper and rustls
/// on ring. The SDK's default (`default-https-client`) is rustls on
/// aws-lc, whose first use costs hundreds of milliseconds on a throttled
/// 128 MB function (docs/performance.md, "Cold start as Lambda runs it");
/// ring's costs a few.
pub fn hyper_client() -> SharedHttpClient {
    use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};
    aws_smithy_http_client::Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::Ring))
        .build_https()
}
