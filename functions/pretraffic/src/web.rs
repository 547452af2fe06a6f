//! The HTTP checks sent over HTTP(S) to a deployed API (`petstore-smoke
//! --url`): the same requests and verdicts as the pre-traffic check, through
//! API Gateway (or the custom domain) this time. A deployed stage's keys
//! cannot be made from here (its table is not this tool's to write): the
//! keyed check is sent only with a key given, and skipped, saying so, without.

use crate::checks::{self, Answer, Outcome, Probe, CHECKS};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use std::time::Duration;

type Https = hyper_rustls::HttpsConnector<HttpConnector>;

/// How long one request may take, connection included.
const TIMEOUT: Duration = Duration::from_secs(15);

/// Every HTTP check, sent to `base` (`https://api.example.com`, no trailing
/// slash needed); the keyed ones with `key`, and only when it is given.
pub async fn check(base: &str, key: Option<&str>) -> Result<Vec<Outcome>, String> {
    let client = client()?;
    let base = base.trim_end_matches('/');
    let mut outcomes = Vec::new();
    for check in CHECKS {
        let Probe::Http { method, path, .. } = check.probe else {
            continue;
        };
        let key = match (check.keyed(), key) {
            (false, _) => None,
            (true, Some(key)) => Some(key),
            (true, None) => {
                println!(
                    "skip  {}: {}: no key given (--key or PETSTORE_SMOKE_KEY); petstore-smoke --url makes none",
                    check.function.binary(),
                    check.name
                );
                continue;
            }
        };
        let result = match tokio::time::timeout(
            TIMEOUT,
            send(
                &client,
                method,
                &format!("{base}{}", checks::resolved(path)),
                key,
            ),
        )
        .await
        {
            Ok(Ok(answer)) => checks::judge_http(&check.probe, &answer),
            Ok(Err(why)) => Err(why),
            Err(_) => Err(format!("no answer within {} s", TIMEOUT.as_secs())),
        };
        outcomes.push(Outcome { check, result });
    }
    Ok(outcomes)
}

fn client() -> Result<Client<Https, Empty<Bytes>>, String> {
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_native_roots(rustls::crypto::ring::default_provider())
        .map_err(|e| format!("the system's TLS roots: {e}"))?
        .https_or_http()
        .enable_http1()
        .build();
    Ok(Client::builder(TokioExecutor::new()).build(https))
}

async fn send(
    client: &Client<Https, Empty<Bytes>>,
    method: &str,
    url: &str,
    key: Option<&str>,
) -> Result<Answer, String> {
    let mut request = http::Request::builder()
        .method(method)
        .uri(url)
        .header("user-agent", "petstore-smoke");
    if let Some(key) = key {
        request = request.header("x-api-key", key);
    }
    let request = request
        .body(Empty::new())
        .map_err(|e| format!("{url}: {e}"))?;
    let response = client
        .request(request)
        .await
        .map_err(|e| format!("{method} {url}: {e}"))?;
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_string(),
                v.to_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("{method} {url}: reading the body: {e}"))?
        .to_bytes();
    Ok(Answer {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}
