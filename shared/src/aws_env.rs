//! A function's AWS settings from its environment alone, as Lambda gives
//! them: the region (`AWS_REGION`), its role's credentials
//! (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`) and,
//! off Lambda, endpoint URLs (`AWS_ENDPOINT_URL_<SERVICE>`, then
//! `AWS_ENDPOINT_URL`, as the SDK's own loader reads them).
//!
//! `aws_config::defaults(..).load()` looks in the same places first, then
//! reads profile files at every cold start and links the providers a
//! function never reaches (profiles, SSO, web identity through STS,
//! containers, the instance metadata service): code in every zip and work
//! in every init. The functions build their clients from [`sdk_config`];
//! tools run by people (`petstore-admin`) keep the whole chain
//! ([`crate::App::from_env`]), since an operator's credentials may come
//! from a profile or SSO.

use aws_config::environment::EnvironmentVariableCredentialsProvider;
use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_dynamodb::config::{SharedCredentialsProvider, SharedHttpClient};
use aws_types::service_config::{LoadServiceConfig, ServiceConfigKey};
use std::time::Duration;

/// What the SDK's loader sets when nothing says otherwise
/// (`aws_config::default_provider::timeout_config`).
const CONNECT_TIMEOUT: Duration = Duration::from_millis(3100);

/// A setting the environment lacks.
#[derive(Debug, thiserror::Error)]
pub enum AwsEnvError {
    #[error("AWS_REGION is not set (Lambda sets it; a local run must)")]
    NoRegion,
    #[error("AWS_ACCESS_KEY_ID is not set (Lambda sets the role's; a local run must)")]
    NoCredentials,
}

/// The settings every client of a function starts from, with `http_client`.
pub fn sdk_config(http_client: SharedHttpClient) -> Result<SdkConfig, AwsEnvError> {
    sdk_config_from(http_client, |name| std::env::var(name).ok())
}

/// The same from `lookup` (the tests' environment).
pub fn sdk_config_from(
    http_client: SharedHttpClient,
    lookup: impl Fn(&str) -> Option<String> + Clone + Send + Sync + 'static,
) -> Result<SdkConfig, AwsEnvError> {
    let region = lookup("AWS_REGION")
        .or_else(|| lookup("AWS_DEFAULT_REGION"))
        .filter(|region| !region.is_empty())
        .ok_or(AwsEnvError::NoRegion)?;
    if lookup("AWS_ACCESS_KEY_ID").is_none_or(|id| id.is_empty()) {
        return Err(AwsEnvError::NoCredentials);
    }
    // Read at the first call, then held by the client's identity cache; a
    // function's credentials last as long as its instance.
    let credentials = EnvironmentVariableCredentialsProvider::new();
    let config = SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(region))
        .credentials_provider(SharedCredentialsProvider::new(credentials))
        .http_client(http_client)
        .retry_config(RetryConfig::standard())
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(CONNECT_TIMEOUT)
                .build(),
        )
        .service_config(EnvironmentEndpoints(Box::new(lookup)))
        .build();
    Ok(config)
}

/// A service's settings from the environment, as the SDK's loader reads
/// them without profiles: `<VARIABLE>_<SERVICE ID>` (upper case, spaces as
/// `_`: `AWS_ENDPOINT_URL_DYNAMODB`), then `<VARIABLE>`.
struct EnvironmentEndpoints(Box<Lookup>);

/// A variable's value by name: the process's environment, or a test's.
type Lookup = dyn Fn(&str) -> Option<String> + Send + Sync;

impl std::fmt::Debug for EnvironmentEndpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EnvironmentEndpoints")
    }
}

impl LoadServiceConfig for EnvironmentEndpoints {
    fn load_config(&self, key: ServiceConfigKey<'_>) -> Option<String> {
        let service = key.service_id().to_uppercase().replace(' ', "_");
        let specific = format!("{}_{service}", key.env());
        (self.0)(&specific).or_else(|| (self.0)(key.env()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn from(vars: &[(&str, &str)]) -> Result<SdkConfig, AwsEnvError> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        sdk_config_from(crate::sdk::hyper_client(), move |name| {
            vars.get(name).cloned()
        })
    }

    /// The endpoint URL a client of `service_id` is given (the SDK's
    /// generated `From<&SdkConfig>` asks the service config so).
    fn endpoint_of(config: &SdkConfig, service_id: &str) -> Option<String> {
        let key = ServiceConfigKey::builder()
            .service_id(service_id)
            .env("AWS_ENDPOINT_URL")
            .profile("endpoint_url")
            .build()
            .ok()?;
        config.service_config()?.load_config(key)
    }

    #[test]
    fn a_function_reads_its_region_credentials_and_endpoints_from_the_environment() {
        let lambda = [("AWS_REGION", "eu-west-1"), ("AWS_ACCESS_KEY_ID", "AKIA")];
        let config = from(&lambda).expect("Lambda's environment");
        assert_eq!(config.region().map(Region::as_ref), Some("eu-west-1"));
        assert_eq!(endpoint_of(&config, "DynamoDB"), None, "the SDK's own");
        let local = [
            ("AWS_REGION", "us-east-1"),
            ("AWS_ACCESS_KEY_ID", "local"),
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:1"),
            ("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:8000"),
        ];
        let config = from(&local).expect("a local run's environment");
        let dynamodb = endpoint_of(&config, "DynamoDB");
        assert_eq!(dynamodb.as_deref(), Some("http://127.0.0.1:8000"));
        let sqs = endpoint_of(&config, "SQS");
        assert_eq!(sqs.as_deref(), Some("http://127.0.0.1:1"), "the global one");
    }

    #[test]
    fn without_a_region_or_credentials_a_function_does_not_start() {
        let no_region = from(&[("AWS_ACCESS_KEY_ID", "AKIA")]);
        assert!(matches!(no_region, Err(AwsEnvError::NoRegion)));
        let no_key = from(&[("AWS_REGION", "eu-west-1")]);
        assert!(matches!(no_key, Err(AwsEnvError::NoCredentials)));
    }
}
