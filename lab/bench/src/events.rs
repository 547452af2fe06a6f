//! The `events` function's work per change: each change of a scripted day is
//! sent alone to a `petstore-local` (which runs the events function's
//! consumer on DynamoDB Local's stream), and the events it appends to its
//! `EVENTS_FILE` in between are that change's. From the events per change
//! follow the `PutEvents` entries, and so the cost, per million changes.

use crate::client::{Conn, Error};
use crate::cost::eventbridge_per_million_changes;
use http::Method;
use serde::Serialize;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// One change and the events it gave.
#[derive(Debug, Clone, Serialize)]
pub struct ChangeEvents {
    pub change: String,
    pub events: Vec<String>,
}

/// What the scripted day gave, and its cost per million changes.
#[derive(Debug, Clone, Serialize)]
pub struct EventsPerChange {
    pub changes: Vec<ChangeEvents>,
    pub events_per_change: f64,
    pub usd_per_million_changes: f64,
}

/// The events file of the counted `petstore-local`, and its environment: its
/// events consumer reads the stream from `dynamodb` itself, around the
/// counting proxy, so the requests' DynamoDB calls stay their own.
pub fn service_env(dynamodb: SocketAddr, out: &Path) -> (PathBuf, [String; 2]) {
    let file = out.join("events.jsonl");
    let env = [
        format!("AWS_ENDPOINT_URL_DYNAMODB_STREAMS=http://{dynamodb}"),
        format!("EVENTS_FILE={}", file.display()),
    ];
    (file, env)
}

/// Measures, prints and writes `events.json` into `out`; the events per
/// change, or a note on failure.
pub async fn measure(
    addr: SocketAddr,
    api_key: Option<String>,
    file: &Path,
    out: &Path,
) -> Option<f64> {
    let measured = count(addr, api_key, file).await.and_then(|events| {
        print(&events);
        let json = serde_json::to_vec_pretty(&events)?;
        std::fs::write(out.join("events.json"), json)?;
        Ok(events.events_per_change)
    });
    measured
        .map_err(|error| eprintln!("bench: events per change not measured: {error}"))
        .ok()
}

/// Sends the day's changes one at a time; the events each appended to `file`.
pub async fn count(
    addr: SocketAddr,
    api_key: Option<String>,
    file: &Path,
) -> Result<EventsPerChange, Error> {
    let mut day = Day {
        conn: Conn::new(addr, api_key),
        file: file.to_path_buf(),
        changes: Vec::new(),
        key: None,
    };
    settle(file, 0).await;
    let name = || json!({"name": format!("Bench events {}", rand::random::<u32>())});
    let category = day.send("create category", Method::POST, "/categories", name());
    let category = category.await?;
    let pet = json!({"name": "Rex", "categoryId": category});
    let pet = day.send("create pet", Method::POST, "/pets", pet).await?;
    let stock = (format!("/store/inventory/{pet}"), json!({"quantity": 2}));
    day.send("set stock", Method::PUT, &stock.0, stock.1)
        .await?;
    let (orders, order) = ("/store/orders", json!({"petId": pet, "quantity": 2}));
    day.key = Some("bench-events-1");
    let placed = day.send(
        "place order (last units)",
        Method::POST,
        orders,
        order.clone(),
    );
    let placed = placed.await?;
    day.send("replayed order", Method::POST, orders, order)
        .await?;
    day.key = None;
    let cancel = format!("/store/orders/{placed}");
    day.send("cancel order", Method::DELETE, &cancel, Value::Null)
        .await?;
    let placed = day.send("place order", Method::POST, orders, json!({"petId": pet}));
    let complete = (
        format!("/store/orders/{}", placed.await?),
        json!({"complete": true}),
    );
    day.send("complete order", Method::PATCH, &complete.0, complete.1)
        .await?;
    let rename = format!("/categories/{category}");
    day.send("rename category", Method::PUT, &rename, name())
        .await?;
    Ok(day.summary())
}

struct Day {
    conn: Conn,
    file: PathBuf,
    changes: Vec<ChangeEvents>,
    /// The `Idempotency-Key` the next changes are sent with.
    key: Option<&'static str>,
}

impl Day {
    /// Sends one change and waits for its events; answers the id it created.
    async fn send(
        &mut self,
        name: &str,
        method: Method,
        path: &str,
        body: Value,
    ) -> Result<u64, Error> {
        let before = lines(&self.file).len();
        let body = (!body.is_null()).then_some(body);
        let reply = self
            .conn
            .send_with(method, path, body.as_ref(), self.key)
            .await?;
        if !reply.status.is_success() {
            return Err(format!(
                "{name}: {} {}",
                reply.status,
                String::from_utf8_lossy(&reply.body)
            )
            .into());
        }
        let after = settle(&self.file, before).await;
        let events = lines(&self.file)[before..after]
            .iter()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter_map(|event| event["detail-type"].as_str().map(str::to_string))
            .collect();
        self.changes.push(ChangeEvents {
            change: name.into(),
            events,
        });
        Ok(reply.created_id().unwrap_or_default())
    }

    fn summary(self) -> EventsPerChange {
        let events: usize = self.changes.iter().map(|c| c.events.len()).sum();
        let per_change = events as f64 / self.changes.len().max(1) as f64;
        EventsPerChange {
            changes: self.changes,
            events_per_change: per_change,
            usd_per_million_changes: eventbridge_per_million_changes(per_change),
        }
    }
}

fn lines(file: &Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Waits until the file has stopped growing past `before` lines (the local
/// reader polls every 100 ms; the contract gives it 2 s); its line count.
async fn settle(file: &Path, before: usize) -> usize {
    let started = Instant::now();
    let (mut seen, mut since) = (before, Instant::now());
    while started.elapsed() < Duration::from_millis(2500) {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = lines(file).len();
        if now != seen {
            (seen, since) = (now, Instant::now());
        } else if since.elapsed() > Duration::from_millis(if seen > before { 400 } else { 1200 }) {
            break;
        }
    }
    seen
}

/// The table `make bench` prints.
pub fn print(result: &EventsPerChange) {
    println!("\nEvents per change (the events function on DynamoDB Local's stream):");
    for change in &result.changes {
        println!("  {:<26} {}", change.change, change.events.join(", "));
    }
    println!(
        "  {:.2} events per change; about ${:.2} per million changes (EventBridge entries + Lambda)",
        result.events_per_change, result.usd_per_million_changes
    );
}
