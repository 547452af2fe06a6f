//! The checks sent to a function version through Lambda's Invoke API: what
//! the hook sends the version being released, and what `petstore-smoke
//! --lambda-endpoint` sends `cargo lambda watch` locally.

use crate::apigw;
use crate::checks::{self, Check, Function, Outcome, Probe};
use aws_sdk_lambda::primitives::Blob;
use serde_json::{json, Value};

/// Sends checks to functions through one Lambda client.
pub struct Invoker {
    client: aws_sdk_lambda::Client,
    /// The front's secret, sent as the front sends it ([`apigw::origin_secret_from_env`]).
    origin: Option<String>,
}

impl Invoker {
    pub fn new(client: aws_sdk_lambda::Client) -> Invoker {
        Invoker {
            client,
            origin: apigw::origin_secret_from_env(),
        }
    }

    /// A client for Lambda's Invoke API at `endpoint` (cargo lambda watch),
    /// with the dummy credentials it ignores.
    pub fn local(endpoint: &str) -> Invoker {
        let credentials =
            aws_sdk_lambda::config::Credentials::new("local", "local", None, None, "local");
        let config = aws_sdk_lambda::Config::builder()
            .behavior_version(aws_sdk_lambda::config::BehaviorVersion::latest())
            .region(aws_sdk_lambda::config::Region::new("us-east-1"))
            .endpoint_url(endpoint)
            .credentials_provider(credentials)
            .http_client(crate::sdk_http_client())
            .build();
        Invoker::new(aws_sdk_lambda::Client::from_conf(config))
    }

    /// Every check of `function`, sent to `name` (at `version`, when given);
    /// the keyed ones with `key`, and failed with its error when it was not
    /// made ([`crate::key::mint`]).
    pub async fn check(
        &self,
        function: Function,
        name: &str,
        version: Option<&str>,
        key: &Result<String, String>,
    ) -> Vec<Outcome> {
        let mut outcomes = Vec::new();
        for (n, check) in checks::of(function).enumerate() {
            let result = match (check.keyed(), key) {
                (true, Err(why)) => Err(format!("no key to send: {why}")),
                (true, Ok(key)) => self.one(check, name, version, Some(key), n).await,
                (false, _) => self.one(check, name, version, None, n).await,
            };
            outcomes.push(Outcome { check, result });
        }
        outcomes
    }

    async fn one(
        &self,
        check: &Check,
        name: &str,
        version: Option<&str>,
        key: Option<&str>,
        n: usize,
    ) -> Result<(), String> {
        let payload = match check.probe {
            Probe::Http { method, path, .. } => apigw::http_event(
                method,
                &checks::resolved(path),
                &format!("pretraffic-{}-{n}", std::process::id()),
                key,
                self.origin.as_deref(),
            ),
            Probe::EmptyStreamBatch => json!({ "Records": [] }),
        };
        let response = self.invoke(name, version, &payload).await?;
        match &check.probe {
            probe @ Probe::Http { .. } => checks::judge_http(probe, &apigw::answer(&response)?),
            Probe::EmptyStreamBatch => {
                let failures = response.get("batchItemFailures").and_then(Value::as_array);
                match failures {
                    Some(f) if f.is_empty() => Ok(()),
                    _ => Err(format!(
                        "want no batchItemFailures, got {}",
                        apigw::shorten(&response)
                    )),
                }
            }
        }
    }

    /// The function's answer to `payload`, or why there is none.
    async fn invoke(
        &self,
        name: &str,
        version: Option<&str>,
        payload: &Value,
    ) -> Result<Value, String> {
        let sent = self
            .client
            .invoke()
            .function_name(name)
            .set_qualifier(version.map(str::to_string))
            .payload(Blob::new(payload.to_string()))
            .send()
            .await
            .map_err(|e| {
                format!(
                    "invoking {name}{}: {}",
                    version.map(|v| format!(":{v}")).unwrap_or_default(),
                    aws_sdk_lambda::error::DisplayErrorContext(&e)
                )
            })?;
        let body = sent.payload().map(|b| b.as_ref()).unwrap_or_default();
        let value: Value = serde_json::from_slice(body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()));
        if let Some(error) = sent.function_error() {
            return Err(format!(
                "the function failed ({error}): {}",
                apigw::shorten(&value)
            ));
        }
        Ok(value)
    }
}
