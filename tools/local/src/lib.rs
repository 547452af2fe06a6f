//! What every local stack sets up, shared by `petstore-local`'s commands
//! (`make run`, `make run-lambda`, `make invoke`) and the tests:
//! the demo keys ([`demo`]), and the sample events' key and records
//! ([`sample_events`]). The events consumer fans events out to the webhooks
//! itself (`events::WithWebhooks`), as the `events` function does in Lambda.

pub mod demo;
pub mod sample_events;

/// Whether `endpoint` is a DynamoDB on this machine: the only kind local
/// stacks write their published keys to.
pub fn is_local_endpoint(endpoint: &str) -> bool {
    let host = endpoint
        .split_once("://")
        .map_or(endpoint, |(_, rest)| rest)
        .split('/')
        .next()
        .unwrap_or_default();
    let host = match host.rsplit_once(':') {
        Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name,
        _ => host,
    };
    matches!(host, "127.0.0.1" | "localhost" | "[::1]")
}

#[cfg(test)]
mod tests {
    use super::is_local_endpoint;

    #[test]
    fn only_this_machine_is_local() {
        assert!(is_local_endpoint("http://127.0.0.1:8000"));
        assert!(is_local_endpoint("http://localhost:8150/"));
        assert!(is_local_endpoint("http://[::1]:8000"));
        assert!(!is_local_endpoint(
            "https://dynamodb.us-east-1.amazonaws.com"
        ));
        assert!(!is_local_endpoint("http://127.0.0.1.example.com:8000"));
    }
}
