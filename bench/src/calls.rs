//! DynamoDB calls, capacity units and bytes per operation: each operation is
//! sent alone, one at a time, to a `petstore-local` whose DynamoDB is the
//! counting [`Proxy`], so the calls counted in between are that operation's.
//! The order changes are counted a second time sent with an `Idempotency-Key`
//! (rows marked "+ key"): as many calls, one more item in the write.

use crate::client::{Conn, Error, Reply};
use crate::cost;
use crate::load::Fixture;
use crate::proxy::{self, Proxy, Tally};
use crate::results::{OperationCalls, StatusCounts};
use http::Method;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Instant;

/// DynamoDB Local reports plain `CapacityUnits`; these calls spend read
/// units, the others write units.
const READ_CALLS: &[&str] = &[
    "GetItem",
    "Query",
    "Scan",
    "BatchGetItem",
    "TransactGetItems",
];

/// Sends each operation `repeats` times; the calls by operation, averaged.
pub async fn count(
    proxy: &Proxy,
    addr: SocketAddr,
    api_key: Option<String>,
    fixture: &Fixture,
    repeats: usize,
) -> Result<BTreeMap<String, OperationCalls>, Error> {
    let mut counter = Counter {
        conn: Conn::new(addr, api_key),
        proxy,
        by_operation: BTreeMap::new(),
    };
    // Let the key cache and connection pool settle, as in a warm function.
    counter
        .conn
        .send(Method::GET, "/pets?limit=1", None)
        .await?;
    proxy.take();
    let ids: Vec<String> = fixture.pet_ids.iter().take(5).map(u64::to_string).collect();
    let ids = ids.join(",");
    for i in 0..repeats {
        let pet_id = fixture.pet_ids[i % fixture.pet_ids.len()];
        counter.reads(&ids, pet_id).await?;
        counter.writes(fixture.category_ids[0]).await?;
        counter.changes(pet_id, Some(i)).await?;
    }
    Ok(counter
        .by_operation
        .into_iter()
        .map(|(operation, sent)| (operation, sent.per_request()))
        .collect())
}

/// One operation's requests and the calls they made.
#[derive(Default)]
pub struct Sent {
    pub requests: usize,
    pub statuses: StatusCounts,
    pub tally: Tally,
    pub total_ms: f64,
}

impl Sent {
    pub fn per_request(self) -> OperationCalls {
        let per = |total: f64| total / self.requests as f64;
        let (mut reads, mut writes, mut index, mut bytes, mut calls, mut upstream_ms) =
            (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
        let mut by_call = BTreeMap::new();
        for (call, tally) in &self.tally {
            let kind = call.split(' ').next().unwrap_or(call);
            if READ_CALLS.contains(&kind) {
                reads += tally.capacity_units;
            } else {
                writes += tally.capacity_units;
            }
            index += tally.index_units;
            bytes += (tally.request_bytes + tally.response_bytes) as f64;
            calls += tally.calls as f64;
            upstream_ms += tally.upstream_ms;
            by_call.insert(call.clone(), per(tally.calls as f64));
        }
        OperationCalls {
            repeats: self.requests,
            statuses: self.statuses,
            calls_per_request: per(calls),
            by_call,
            read_units_per_request: per(reads),
            write_units_per_request: per(writes),
            index_units_per_request: per(index),
            dynamodb_bytes_per_request: per(bytes),
            request_ms: per(self.total_ms),
            dynamodb_ms: per(upstream_ms),
            dynamodb_usd_per_million: cost::dynamodb_per_million(per(reads), per(writes)),
        }
    }
}

struct Counter<'a> {
    conn: Conn,
    proxy: &'a Proxy,
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
        Ok(())
    }

    /// A new pet, and its changes.
    async fn writes(&mut self, category_id: u64) -> Result<(), Error> {
        let pet = json!({"name": "Counted pet", "categoryId": category_id});
        let pet = self.send_keyed("POST /pets", (Method::POST, "/pets"), Some(pet), None);
        let pet_id = pet.await?.created_id().ok_or("POST /pets gave no id")?;
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
        proxy::merge(&mut sent.tally, self.proxy.take());
        Ok(reply)
    }
}
