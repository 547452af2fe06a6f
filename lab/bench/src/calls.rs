//! DynamoDB calls, units and log output per operation: each operation is
//! sent alone, one at a time, to a `petstore-local` whose DynamoDB is the
//! counting [`Proxy`] with a [`Capture`] attached, so the calls, the items
//! written and read, and the lines logged in between are that operation's.
//! Units are DynamoDB's rules applied to those items ([`crate::capacity`]).
//! The service logs as in Lambda (`AWS_LAMBDA_FUNCTION_NAME` set: its JSON
//! lines on stdout, which the [`Meter`] reads from its log file).
//! The order changes are counted a second time sent with an `Idempotency-Key`
//! (rows marked "+ key"): as many calls, one more item in the write.

use crate::capture::{Capture, Captured};
use crate::client::{Conn, Error, Reply};
use crate::dynamo::DynamoDb;
use crate::load::Fixture;
use crate::proxy::{self, Proxy, Tally};
use crate::results::{OperationCalls, StatusCounts};
use http::Method;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// What the counted service needs in its environment to log as in Lambda:
/// the JSON lines of `telemetry::json` and the metrics line on stdout, at the
/// level and in the format the template gives Lambda (as `lab/coldstart`
/// spawns the functions); `store`, the longer of the two functions' names,
/// is the metrics line's `Function`.
pub const LAMBDA_LOGGING: [&str; 3] = [
    "AWS_LAMBDA_FUNCTION_NAME=store",
    "AWS_LAMBDA_LOG_FORMAT=JSON",
    "AWS_LAMBDA_LOG_LEVEL=INFO",
];

/// DynamoDB Streams calls, which `petstore-local`'s events consumer makes
/// through the same endpoint.
const STREAM_CALLS: [&str; 4] = [
    "DescribeStream",
    "GetRecords",
    "GetShardIterator",
    "ListStreams",
];

/// The counting proxy, its capture, and the counted service's log.
pub struct Meter {
    pub proxy: Proxy<Capture>,
    upstream: SocketAddr,
    capture: Option<Arc<Capture>>,
    log: PathBuf,
    log_at: u64,
    /// Which of the log's lines are counted (all unless set), and kept in
    /// [`Sent::lines`]: the webhooks step counts the delivery path's alone.
    keep: Option<fn(&str) -> bool>,
}

impl Meter {
    /// A counting proxy in front of DynamoDB at `upstream`; the service it
    /// counts logs to `log`.
    pub async fn start(upstream: SocketAddr, log: &Path) -> Result<Meter, Error> {
        Ok(Meter {
            proxy: Proxy::start(upstream).await?,
            upstream,
            capture: None,
            log: log.to_path_buf(),
            log_at: 0,
            keep: None,
        })
    }

    /// From now on, counts only the log lines `keep` accepts, and keeps them.
    pub fn keep_lines(&mut self, keep: fn(&str) -> bool) {
        self.keep = Some(keep);
    }

    /// Captures every table there is from now on (call once the service
    /// has made its tables); forgets what came before.
    pub async fn attach(&mut self) -> Result<(), Error> {
        let listed = DynamoDb::new(self.upstream)
            .call("ListTables", &json!({}))
            .await?;
        let tables: Vec<&str> = listed["TableNames"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let capture = Arc::new(Capture::of_tables(&tables, self.upstream).await?);
        self.proxy.attach(capture.clone());
        self.capture = Some(capture);
        self.skip().await
    }

    /// Forgets what was counted so far.
    pub async fn skip(&mut self) -> Result<(), Error> {
        self.proxy.take();
        if let Some(capture) = &self.capture {
            capture.take().await?;
        }
        self.log_at = std::fs::metadata(&self.log).map_or(0, |m| m.len());
        Ok(())
    }

    /// Adds what was counted since the last take to `sent`.
    pub async fn add_to(&mut self, sent: &mut Sent) -> Result<(), Error> {
        let mut tally = self.proxy.take();
        // The events consumer's polls of the stream are no request's.
        tally.retain(|call, _| !STREAM_CALLS.iter().any(|c| call.starts_with(c)));
        proxy::merge(&mut sent.tally, tally);
        if let Some(capture) = &self.capture {
            sent.units.add(capture, &capture.take().await?);
        }
        let log = std::fs::read(&self.log).unwrap_or_default();
        let new = log.get(self.log_at as usize..).unwrap_or_default();
        match self.keep {
            None => {
                sent.log_bytes += new.len();
                sent.log_lines += new.iter().filter(|b| **b == b'\n').count();
            }
            Some(keep) => {
                let text = String::from_utf8_lossy(new);
                for line in text.lines().filter(|line| keep(line)) {
                    sent.log_bytes += line.len() + 1;
                    sent.log_lines += 1;
                    sent.lines.push(line.to_string());
                }
            }
        }
        self.log_at = log.len() as u64;
        Ok(())
    }
}

/// Units by DynamoDB's rules, summed over requests.
#[derive(Default)]
pub struct Units {
    pub read: f64,
    pub write: f64,
    pub index_write: f64,
    pub refused_write: f64,
    pub write_by_table: BTreeMap<String, f64>,
}

impl Units {
    fn add(&mut self, capture: &Capture, captured: &Captured) {
        self.read += captured.reads.iter().map(|r| r.units).sum::<f64>();
        for call in &captured.writes {
            let Some(layout) = capture.layout(&call.table) else {
                continue;
            };
            for change in &call.items {
                for write in layout.writes(change, call.transactional, call.succeeded) {
                    self.write += write.units;
                    if write.scope != "table" {
                        self.index_write += write.units;
                    }
                    if !call.succeeded {
                        self.refused_write += write.units;
                    }
                    *self.write_by_table.entry(call.table.clone()).or_default() += write.units;
                }
            }
        }
    }
}

/// Sends each operation `repeats` times; the calls by operation, averaged.
pub async fn count(
    meter: &mut Meter,
    addr: SocketAddr,
    api_key: Option<String>,
    fixture: &Fixture,
    repeats: usize,
) -> Result<BTreeMap<String, OperationCalls>, Error> {
    let mut counter = Counter {
        conn: Conn::new(addr, api_key),
        meter,
        by_operation: BTreeMap::new(),
    };
    // Let the key cache and connection pool settle, as in a warm function.
    counter
        .conn
        .send(Method::GET, "/pets?limit=1", None)
        .await?;
    counter.meter.attach().await?;
    let ids: Vec<String> = fixture.pet_ids.iter().take(5).map(u64::to_string).collect();
    let ids = ids.join(",");
    for i in 0..repeats {
        let pet_id = fixture.pet_ids[i % fixture.pet_ids.len()];
        counter.reads(&ids, pet_id).await?;
        counter.writes(fixture.category_ids[0], i).await?;
        counter.changes(pet_id, Some(i)).await?;
    }
    Ok(counter
        .by_operation
        .into_iter()
        .map(|(operation, sent)| (operation, sent.per_request()))
        .collect())
}

/// One operation's requests and what they made.
#[derive(Default)]
pub struct Sent {
    pub requests: usize,
    pub statuses: StatusCounts,
    pub tally: Tally,
    pub units: Units,
    pub log_bytes: usize,
    pub log_lines: usize,
    /// The lines counted, when the [`Meter`] keeps them.
    pub lines: Vec<String>,
    pub total_ms: f64,
}

impl Sent {
    pub fn merge(&mut self, other: Sent) {
        self.requests += other.requests;
        self.total_ms += other.total_ms;
        for (status, n) in other.statuses {
            *self.statuses.entry(status).or_insert(0) += n;
        }
        proxy::merge(&mut self.tally, other.tally);
        let (mine, theirs) = (&mut self.units, other.units);
        mine.read += theirs.read;
        mine.write += theirs.write;
        mine.index_write += theirs.index_write;
        mine.refused_write += theirs.refused_write;
        for (table, units) in theirs.write_by_table {
            *mine.write_by_table.entry(table).or_default() += units;
        }
        self.log_bytes += other.log_bytes;
        self.log_lines += other.log_lines;
        self.lines.extend(other.lines);
    }

    pub fn per_request(self) -> OperationCalls {
        let per = |total: f64| total / self.requests.max(1) as f64;
        let (mut bytes, mut calls, mut upstream_ms, mut tap_ms) = (0.0, 0.0, 0.0, 0.0);
        let mut by_call = BTreeMap::new();
        for (call, tally) in &self.tally {
            bytes += (tally.request_bytes + tally.response_bytes) as f64;
            calls += tally.calls as f64;
            upstream_ms += tally.upstream_ms;
            tap_ms += tally.tap_ms;
            by_call.insert(call.clone(), per(tally.calls as f64));
        }
        let units = &self.units;
        OperationCalls {
            repeats: self.requests,
            statuses: self.statuses.clone(),
            calls_per_request: per(calls),
            by_call,
            read_units_per_request: per(units.read),
            write_units_per_request: per(units.write),
            index_write_units_per_request: per(units.index_write),
            refused_write_units_per_request: per(units.refused_write),
            write_units_by_table: units
                .write_by_table
                .iter()
                .map(|(table, w)| (table.clone(), per(*w)))
                .collect(),
            dynamodb_bytes_per_request: per(bytes),
            log_bytes_per_request: per(self.log_bytes as f64),
            log_lines_per_request: per(self.log_lines as f64),
            // Less the capture's own reads, which a request in Lambda never waits for.
            request_ms: per(self.total_ms - tap_ms),
            dynamodb_ms: per(upstream_ms),
        }
    }
}

struct Counter<'a> {
    conn: Conn,
    meter: &'a mut Meter,
    by_operation: BTreeMap<String, Sent>,
}

impl Counter<'_> {
    async fn reads(&mut self, ids: &str, pet_id: u64) -> Result<(), Error> {
        self.get("GET /pets?limit=20", "/pets?limit=20").await?;
        self.get("GET /pets?ids=(5)", &format!("/pets?ids={ids}"))
            .await?;
        self.get("GET /pets/{id} (deprecated)", &format!("/pets/{pet_id}"))
            .await?;
        self.get("GET /store/inventory?limit=20", "/store/inventory?limit=20")
            .await?;
        // Sharded lists: a page queries every shard (orders 32, categories 1).
        self.get("GET /store/orders?limit=20", "/store/orders?limit=20")
            .await?;
        self.get("GET /categories?limit=20", "/categories?limit=20")
            .await?;
        let inventory = format!("/store/inventory/{pet_id}");
        self.get("GET /store/inventory/{id}", &inventory).await?;
        // A key's own view: its limits' use is read from the counters the
        // admission already holds, so it should cost a keyed read at most.
        self.get("GET /me", "/me").await?;
        Ok(())
    }

    /// The catalogue's edits (a category made and renamed, a pet made and
    /// renamed), then the new pet's changes.
    async fn writes(&mut self, category_id: u64, round: usize) -> Result<(), Error> {
        let category = json!({"name": format!("Counted category {round}")});
        let request = (Method::POST, "/categories");
        let made = self.send_keyed("POST /categories", request, Some(category), None);
        let made = made
            .await?
            .created_id()
            .ok_or("POST /categories gave no id")?;
        let renamed = json!({"name": format!("Counted category {round} renamed")});
        let request = (Method::PUT, format!("/categories/{made}"));
        let request = (request.0, request.1.as_str());
        self.send_keyed("PUT /categories/{id}", request, Some(renamed), None)
            .await?;
        let pet = json!({"name": "Counted pet", "categoryId": category_id});
        let pet = self.send_keyed("POST /pets", (Method::POST, "/pets"), Some(pet), None);
        let pet_id = pet.await?.created_id().ok_or("POST /pets gave no id")?;
        let path = format!("/pets/{pet_id}");
        let rename = Some(json!({"name": "Counted pet renamed"}));
        self.send_keyed("PATCH /pets/{id}", (Method::PATCH, &path), rename, None)
            .await?;
        self.changes(pet_id, None).await
    }

    /// The pet restocked, an order of it cancelled (read back first when
    /// sent without keys), another completed; in `round`, each change with a
    /// key of its own, counted under the operation's name with " + key".
    async fn changes(&mut self, pet_id: u64, round: Option<usize>) -> Result<(), Error> {
        let key = |change: &str| round.map(|round| format!("bench-{round}-{change}"));
        let inventory = format!("/store/inventory/{pet_id}");
        let stock = Some(json!({"quantity": 10}));
        let request = (Method::PUT, inventory.as_str());
        let operation = "PUT /store/inventory/{id}";
        self.send_keyed(operation, request, stock, key("stock"))
            .await?;
        for fate in ["cancel", "complete"] {
            let order = Some(json!({"petId": pet_id, "quantity": 1}));
            let request = (Method::POST, "/store/orders");
            let place = key(&format!("place-{fate}"));
            let placed = self.send_keyed("POST /store/orders", request, order, place);
            let id = placed.await?.created_id();
            let path = format!(
                "/store/orders/{}",
                id.ok_or("POST /store/orders gave no id")?
            );
            let (operation, method, body) = match fate {
                "cancel" => ("DELETE /store/orders/{id}", Method::DELETE, None),
                _ => (
                    "PATCH /store/orders/{id} (complete)",
                    Method::PATCH,
                    Some(json!({"complete": true})),
                ),
            };
            if fate == "cancel" && round.is_none() {
                self.get("GET /store/orders/{id}", &path).await?;
            }
            self.send_keyed(operation, (method, &path), body, key(fate))
                .await?;
        }
        Ok(())
    }

    async fn get(&mut self, operation: &str, path: &str) -> Result<Reply, Error> {
        self.send_keyed(operation, (Method::GET, path), None, None)
            .await
    }

    async fn send_keyed(
        &mut self,
        operation: &str,
        (method, path): (Method, &str),
        body: Option<Value>,
        idempotency_key: Option<String>,
    ) -> Result<Reply, Error> {
        let started = Instant::now();
        let key = idempotency_key.as_deref();
        let reply = self
            .conn
            .send_with(method, path, body.as_ref(), key)
            .await?;
        let took_ms = started.elapsed().as_secs_f64() * 1e3;
        let suffix = if key.is_some() { " + key" } else { "" };
        let sent = self
            .by_operation
            .entry(format!("{operation}{suffix}"))
            .or_default();
        sent.requests += 1;
        sent.total_ms += took_ms;
        *sent.statuses.entry(reply.status.as_u16()).or_insert(0) += 1;
        self.meter.add_to(sent).await?;
        Ok(reply)
    }
}
