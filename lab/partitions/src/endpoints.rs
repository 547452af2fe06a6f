//! The replay's webhook endpoints, registered through the API as a caller
//! registers them: one for the staff key, subscribed to every type, and one
//! for each customer key (its own orders' events), all at the model's
//! [`Receiver`]. Then, after the mix, the wait until every event the mix
//! made has been fanned out and every delivery attempted, and the check,
//! through the API, that none is left `pending`.

use crate::model::WebhookRun;
use crate::receiver::{Received, Receiver};
use http::Method;
use petstore_bench::client::{Conn, Error, Reply};
use petstore_bench::webhook_lines::count_lines;
use serde::Deserialize;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

/// Whose an endpoint is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    Staff,
    Customer(usize),
}

/// One endpoint the replay registered.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub id: u64,
    /// The key identity that registered it.
    pub owner_id: u64,
    pub owner: Owner,
}

/// The part of `POST /webhooks`'s answer the model keeps.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Registered {
    id: u64,
    owner_id: u64,
}

/// The receiver's path for an endpoint of `owner`.
fn path_of(owner: Owner) -> String {
    match owner {
        Owner::Staff => "staff".into(),
        Owner::Customer(i) => format!("customer/{i}"),
    }
}

/// Registers the staff key's endpoint and each customer key's, no `events`
/// given: every type the key may receive (section 9), which is every type
/// for staff and its own orders' `order.*` for a customer.
pub async fn register(
    addr: SocketAddr,
    staff: &str,
    customers: &[String],
    receiver: &Receiver,
) -> Result<Vec<Endpoint>, Error> {
    let keys = std::iter::once((Owner::Staff, staff)).chain(
        customers
            .iter()
            .enumerate()
            .map(|(i, key)| (Owner::Customer(i), key.as_str())),
    );
    let mut endpoints = Vec::new();
    for (owner, key) in keys {
        let mut conn = Conn::new(addr, Some(key.to_string()));
        let body = json!({
            "url": receiver.url(&path_of(owner)),
            "description": "the partition model's receiver",
        });
        let reply = conn.send(Method::POST, "/webhooks", Some(&body)).await?;
        let registered = serde_json::from_slice::<Registered>(&reply.body)
            .ok()
            .filter(|_| reply.status.is_success());
        let Some(registered) = registered else {
            let body = String::from_utf8_lossy(&reply.body);
            return Err(format!("POST /webhooks answered {}: {body}", reply.status).into());
        };
        endpoints.push(Endpoint {
            id: registered.id,
            owner_id: registered.owner_id,
            owner,
        });
    }
    Ok(endpoints)
}

/// How long nothing may happen before the deliveries are taken as done:
/// the stream is read every 100 ms, a retry (should one be needed) comes
/// after the replay's one-second waits, and the fan-out's batches are
/// short.
const QUIET: Duration = Duration::from_secs(4);
/// The most a wait may take, the mix's backlog of deliveries included.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(600);

/// Waits until the events file (the stream follower's) and the receiver
/// have both been still for [`QUIET`]: every event read and fanned out, and
/// every delivery attempted. What the receiver had by then.
pub async fn settle(events: &Path, receiver: &Receiver) -> Result<Received, Error> {
    let started = Instant::now();
    let (mut lines, mut changed) = (count_lines(events), Instant::now());
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let now = count_lines(events);
        if now != lines {
            (lines, changed) = (now, Instant::now());
        }
        let still = changed.max(receiver.last_request()).elapsed();
        if still >= QUIET {
            return Ok(receiver.received());
        }
        if started.elapsed() > SETTLE_TIMEOUT {
            let seconds = SETTLE_TIMEOUT.as_secs();
            return Err(format!("the deliveries did not settle within {seconds} s").into());
        }
    }
}

/// What the endpoints' delivery lists say, through the API.
#[derive(Debug, Default, PartialEq)]
pub struct Listed {
    pub deliveries: usize,
    /// Not yet `delivered` (`pending` or `failed`).
    pub undelivered: usize,
}

/// Pages through every endpoint's deliveries (`GET
/// /webhooks/{id}/deliveries`, staff may read any) and counts them.
pub async fn listed(
    addr: SocketAddr,
    staff: &str,
    endpoints: &[Endpoint],
) -> Result<Listed, Error> {
    let mut conn = Conn::new(addr, Some(staff.to_string()));
    let mut listed = Listed::default();
    for endpoint in endpoints {
        let mut path = Some(format!("/webhooks/{}/deliveries?limit=100", endpoint.id));
        while let Some(page) = path.take() {
            let reply = conn.send(Method::GET, &page, None).await?;
            let items: Vec<Value> = serde_json::from_slice(&reply.body)
                .ok()
                .filter(|_| reply.status.is_success())
                .ok_or_else(|| format!("GET {page} answered {}", reply.status))?;
            listed.deliveries += items.len();
            listed.undelivered += items.iter().filter(|d| d["state"] != "delivered").count();
            path = next_page(&reply);
        }
    }
    Ok(listed)
}

/// The path of `Link: <path>; rel="next"`, if the answer has one.
fn next_page(reply: &Reply) -> Option<String> {
    let link = reply.headers.get(http::header::LINK)?.to_str().ok()?;
    let (target, rel) = link.split_once(';')?;
    rel.contains("rel=\"next\"").then(|| {
        target
            .trim()
            .trim_start_matches('<')
            .trim_end_matches('>')
            .to_string()
    })
}

impl Listed {
    /// Whether the lists show every delivery the receiver was sent, and
    /// each delivered: else the model would miss attempts.
    pub fn all_delivered(&self, delivered: &Received) -> Result<(), Error> {
        if self.undelivered > 0 || self.deliveries != delivered.deliveries {
            return Err(format!(
                "of {} deliveries the endpoints list, {} are not delivered, and the receiver was \
                 sent {}: the model would miss attempts",
                self.deliveries, self.undelivered, delivered.deliveries
            )
            .into());
        }
        Ok(())
    }
}

/// What the replay did with webhooks: the endpoints registered, and the
/// mix's deliveries (what the receiver had by the end, less the seed's).
pub fn run_of(
    registered: &[Endpoint],
    seeded: &Received,
    delivered: &Received,
    listed: &Listed,
) -> WebhookRun {
    WebhookRun {
        staff_endpoints: registered
            .iter()
            .filter(|e| e.owner == Owner::Staff)
            .count(),
        customer_endpoints: registered
            .iter()
            .filter(|e| e.owner != Owner::Staff)
            .count(),
        deliveries: delivered.deliveries - seeded.deliveries,
        attempts: delivered.attempts - seeded.attempts,
        listed: listed.deliveries,
        undelivered: listed.undelivered,
        names: names(registered),
    }
}

/// Whose each id the webhooks' keys may carry is: each endpoint's, and its
/// key identity's.
fn names(endpoints: &[Endpoint]) -> Vec<(u64, String)> {
    let mut names = Vec::new();
    for endpoint in endpoints {
        let (endpoint_name, key_name) = match endpoint.owner {
            Owner::Staff => ("the staff endpoint", "the staff key"),
            Owner::Customer(_) => ("a customer endpoint", "a customer key"),
        };
        names.push((endpoint.id, endpoint_name.to_string()));
        names.push((endpoint.owner_id, key_name.to_string()));
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply_with_link(link: Option<&str>) -> Reply {
        let mut headers = http::HeaderMap::new();
        if let Some(link) = link {
            headers.insert(http::header::LINK, link.parse().expect("a header value"));
        }
        Reply {
            status: http::StatusCode::OK,
            headers,
            body: bytes::Bytes::from_static(b"[]"),
        }
    }

    #[test]
    fn the_next_page_is_the_link_s_target() {
        let link = "</webhooks/7/deliveries?limit=100&cursor=abc>; rel=\"next\"";
        let next = next_page(&reply_with_link(Some(link)));
        assert_eq!(
            next.as_deref(),
            Some("/webhooks/7/deliveries?limit=100&cursor=abc")
        );
        assert_eq!(next_page(&reply_with_link(None)), None);
    }
}
