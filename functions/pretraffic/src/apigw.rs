//! A check's request as API Gateway's HTTP API (payload 2.0) sends it to a
//! function, and the function's answer read back, as API Gateway reads it.

use crate::checks::Answer;
use serde_json::{json, Value};

/// The address the check's requests come from: TEST-NET-1 (RFC 5737), never
/// a customer's, so its keyless counter in the rate-limit table is its own.
pub const SOURCE_IP: &str = "192.0.2.10";

/// The secret the optional front adds to every request it forwards
/// (template.yaml's `ORIGIN_SECRET`, given to the hook as to the functions it
/// checks): with the front on, a request without it is refused 403 before any
/// other work, so the checks send it, as CloudFront does.
pub fn origin_secret_from_env() -> Option<String> {
    std::env::var("ORIGIN_SECRET")
        .ok()
        .filter(|secret| !secret.is_empty())
}

/// The event API Gateway sends for `method path` (`path` may carry a query
/// string), with `key` in `x-api-key` and the front's `origin` secret in its
/// header when given.
pub fn http_event(
    method: &str,
    path: &str,
    request_id: &str,
    key: Option<&str>,
    origin: Option<&str>,
) -> Value {
    let host = "pretraffic.invalid";
    let (path, query) = path.split_once('?').unwrap_or((path, ""));
    let mut headers = json!({
        "accept": "*/*",
        "host": host,
        "user-agent": "petstore-pretraffic",
        "x-forwarded-for": SOURCE_IP,
        "x-forwarded-port": "443",
        "x-forwarded-proto": "https"
    });
    if let Some(key) = key {
        headers["x-api-key"] = json!(key);
    }
    if let Some(origin) = origin {
        headers[petstore::http::front::ORIGIN_HEADER] = json!(origin);
    }
    json!({
        "version": "2.0",
        "routeKey": format!("{method} {path}"),
        "rawPath": path,
        "rawQueryString": query,
        "headers": headers,
        "requestContext": {
            "accountId": "anonymous",
            "apiId": "pretraffic",
            "domainName": host,
            "domainPrefix": "pretraffic",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": SOURCE_IP,
                "userAgent": "petstore-pretraffic"
            },
            "requestId": request_id,
            "routeKey": format!("{method} {path}"),
            "stage": "$default",
            "time": "01/Jan/2026:00:00:00 +0000",
            "timeEpoch": 1_767_225_600_000_u64
        },
        "isBase64Encoded": false
    })
}

/// A function's answer to an API Gateway event (payload 2.0: `statusCode`,
/// `headers`, `body`, maybe base64).
pub fn answer(response: &Value) -> Result<Answer, String> {
    let status = response
        .get("statusCode")
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok())
        .ok_or_else(|| format!("no statusCode in the answer: {}", shorten(response)))?;
    let headers = response
        .get("headers")
        .and_then(Value::as_object)
        .map(|h| {
            h.iter()
                .map(|(k, v)| {
                    (
                        k.to_ascii_lowercase(),
                        v.as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let body = response
        .get("body")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let encoded = response.get("isBase64Encoded").and_then(Value::as_bool) == Some(true);
    // A binary body is only ever shown in a failure's message: its length is enough.
    let body = if encoded {
        format!("({} base64 characters)", body.len())
    } else {
        body.to_string()
    };
    Ok(Answer {
        status,
        headers,
        body,
    })
}

/// At most 200 characters of `value`, for a message.
pub fn shorten(value: &Value) -> String {
    value.to_string().chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_reads_status_and_headers_case_blind() {
        let got = answer(&json!({
            "statusCode": 401,
            "headers": {"X-RateLimit-Limit": "60", "content-type": "application/json"},
            "body": "{\"code\":\"API_KEY_MISSING\"}",
            "isBase64Encoded": false
        }));
        let got = got.unwrap_or_default();
        assert_eq!(got.status, 401);
        assert_eq!(got.headers["x-ratelimit-limit"], "60");
        assert!(answer(&json!({"errorMessage": "boom"})).is_err());
    }

    #[test]
    fn the_event_is_keyless_and_from_the_check_address() {
        let event = http_event("GET", "/pets", "r-1", None, None);
        assert_eq!(event["requestContext"]["http"]["sourceIp"], SOURCE_IP);
        assert!(event["headers"].get("x-api-key").is_none());
        assert_eq!(event["routeKey"], "GET /pets");
    }

    #[test]
    fn a_keyed_event_carries_the_key_and_its_query_apart() {
        let event = http_event("GET", "/store/orders?limit=1", "r-2", Some("psk_k"), None);
        assert_eq!(event["headers"]["x-api-key"], "psk_k");
        assert_eq!(event["rawPath"], "/store/orders");
        assert_eq!(event["rawQueryString"], "limit=1");
        assert_eq!(event["routeKey"], "GET /store/orders");
    }
}
