//! The webhooks step: order events delivered to a receiver on this machine
//! ([`crate::receiver`]) by a `petstore-local` of its own, which runs the
//! delivery handlers Lambda runs (`petstore::webhooks::deliver`) on its
//! in-process queue, with its DynamoDB behind the counting proxy and a
//! capture (as [`crate::calls`]), logging as in Lambda.
//!
//! A customer registers one endpoint for `order.placed`, then places orders
//! one at a time. After each order's answer the meter is emptied (the
//! order's own request is not the delivery's), and whatever comes next until
//! the delivery's last attempt line and the fan-out of each of the order's
//! events is the delivery's: the fan-outs and the attempts, their DynamoDB
//! calls and units, and the delivery path's log lines (the fan-out's, each
//! attempt's and its metrics line; the events consumer's and the stream
//! reader's are not counted). An order also changes the pet's stock, whose
//! `stock.changed` no endpoint takes: that event's fan-out is measured on
//! its own (a restock by staff) and taken off, and priced per event. Three
//! receivers: answering 200; 500 to an event's first attempt, then 200; 500
//! to every attempt, through all the schedule's attempts (its waits
//! shortened to a second each, as many as the deployed schedule has).
//!
//! A delivery that does not arrive within a generous timeout is a note, and
//! the case is left out; the step never fails the bench.

use crate::calls::{Meter, Sent, LAMBDA_LOGGING};
use crate::capacity::{item_size, read_units};
use crate::client::{Conn, Error, Reply};
use crate::dynamo::DynamoDb;
use crate::processes::PetstoreLocal;
use crate::processes::NO_HOLD_SWEEP;
use crate::receiver::{Answer, Receiver};
use crate::webhook_cost::deployed_schedule;
use crate::webhook_lines::{
    attempt_fields, count_lines, fanned_events, is_delivery_line, lines_with, summarize,
    ATTEMPT_METRICS,
};
use crate::webhook_results::{
    WebhookBasis, Webhooks, ALL_FAILED, DELIVERED_FIRST, DELIVERED_SECOND, EMPTY_FAN_OUT,
};
use http::Method;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long one attempt or fan-out may take to show, its wait included:
/// far beyond what it takes (milliseconds, and a second between attempts).
const TIMEOUT: Duration = Duration::from_secs(30);

/// What the step needs from the runner.
pub struct Setup<'a> {
    /// The repository (the deployed schedule's source).
    pub root: &'a Path,
    /// `petstore-local`, release.
    pub service: &'a Path,
    pub admin: &'a Path,
    pub dynamodb: SocketAddr,
    pub out: &'a Path,
    /// A staff key, which stocks the pet the orders are for; none: one is
    /// issued in the tables the step's service makes.
    pub staff_key: Option<&'a str>,
    pub repeats: usize,
}

/// Measures; the records, their basis still to be priced
/// ([`crate::webhook_cost::costs`]), or notes saying what is missing.
pub async fn measure(setup: &Setup<'_>) -> Webhooks {
    eprintln!("bench: delivering webhooks (DynamoDB calls, units, log bytes, time per delivery)");
    let mut webhooks = Webhooks::default();
    let schedule = setup.root.join("shared/src/webhooks/schedule.rs");
    let source = std::fs::read_to_string(&schedule).unwrap_or_default();
    let Some(waits) = deployed_schedule(&source) else {
        let shown = schedule.display();
        webhooks.notes.push(format!(
            "webhooks not measured: no DEFAULT_SCHEDULE in {shown}"
        ));
        return webhooks;
    };
    let schedule_run = vec!["1"; waits.len()].join(",");
    let mut basis = WebhookBasis {
        schedule_run,
        ..WebhookBasis::default()
    };
    let log = setup.out.join("petstore-local-webhooks.log");
    let events = setup.out.join("webhook-events.jsonl");
    // The consumer appends; its count of events must be this run's alone.
    let _ = std::fs::remove_file(&events);
    let env = service_env(setup.dynamodb, &events, &basis.schedule_run);
    let started = async {
        let receiver = Receiver::start().await?;
        let mut meter = Meter::start(setup.dynamodb, &log).await?;
        let url = format!("http://{}", meter.proxy.addr);
        let service = PetstoreLocal::start(setup.service, &url, &log, &env).await?;
        meter.keep_lines(is_delivery_line);
        Ok::<_, Error>((receiver, meter, service))
    };
    let (receiver, meter, mut service) = match started.await {
        Ok(started) => started,
        Err(e) => {
            webhooks.notes.push(format!("webhooks not measured: {e}"));
            return webhooks;
        }
    };
    // A staff key to stock the pet: the caller's, or one issued there.
    let dynamodb = format!("http://{}", setup.dynamodb);
    let staff_key = match setup.staff_key {
        Some(key) => Some(key.to_string()),
        None => crate::api_key::obtain(setup.admin, &dynamodb, &mut webhooks.notes).await,
    };
    let Some(staff_key) = staff_key else {
        service.stop().await;
        return webhooks;
    };
    let mut step = Step {
        meter,
        log,
        events,
        receiver,
        customer: Conn::new(service.addr, None),
        staff: Conn::new(service.addr, Some(staff_key.to_string())),
        pet_id: 0,
        restocks: 0,
        events_per_order: 1,
    };
    let run = step.run(setup, waits.len() + 1, &mut webhooks).await;
    if let Err(e) = run {
        let shown = step.log.display();
        webhooks
            .notes
            .push(format!("webhooks: the step stopped: {e} (see {shown})"));
    }
    service.stop().await;
    basis.early_receive_read_units = step.delivery_read_units(setup.dynamodb).await;
    basis.schedule_waits_s = waits;
    webhooks.basis = Some(basis);
    webhooks
}

/// The service's environment: Lambda's logging, its events consumer reading
/// the stream around the proxy (as the counts' does) into `events`, and
/// the schedule `schedule_run`.
fn service_env(dynamodb: SocketAddr, events: &Path, schedule_run: &str) -> Vec<String> {
    let env = [
        format!("AWS_ENDPOINT_URL_DYNAMODB_STREAMS=http://{dynamodb}"),
        format!("EVENTS_FILE={}", events.display()),
        // Lambda's INFO (`telemetry::lambda_level`): the attempts' lines are INFO.
        "RUST_LOG=info".into(),
        "WEBHOOKS_ALLOW_LOOPBACK=1".into(),
        format!("WEBHOOK_RETRY_SCHEDULE={schedule_run}"),
        NO_HOLD_SWEEP.into(),
    ];
    LAMBDA_LOGGING
        .map(str::to_string)
        .into_iter()
        .chain(env)
        .collect()
}

/// What makes the events measured: an order (customer), or a restock
/// (staff), whose one `stock.changed` no endpoint takes.
enum Change {
    Order,
    Restock,
}

struct Step {
    meter: Meter,
    log: PathBuf,
    /// The events the service's consumer read from the stream.
    events: PathBuf,
    receiver: Receiver,
    customer: Conn,
    staff: Conn,
    pet_id: u64,
    restocks: u32,
    events_per_order: usize,
}

impl Step {
    async fn run(
        &mut self,
        setup: &Setup<'_>,
        attempts: usize,
        webhooks: &mut Webhooks,
    ) -> Result<(), Error> {
        self.prepare(setup).await?;
        if let Err(why) = self.warm_up().await? {
            webhooks.notes.push(format!("webhooks not measured: {why}"));
            return Ok(());
        }
        self.meter.attach().await?;
        let mut empty = Sent::default();
        for _ in 0..setup.repeats.div_ceil(4) {
            let Some(one) = self.window(Change::Restock, 0, 1).await? else {
                webhooks
                    .notes
                    .push("webhooks: a restock's fan-out did not come".into());
                return Ok(());
            };
            empty.merge(one);
        }
        let empty = summarize((EMPTY_FAN_OUT, "none"), empty, None);
        let cases = [
            (DELIVERED_FIRST, Answer::Ok, 1, setup.repeats),
            (
                DELIVERED_SECOND,
                Answer::FailOnce,
                2,
                setup.repeats.div_ceil(4),
            ),
            // The first makes the endpoint failing (a write per endpoint,
            // not per delivery); the next is measured.
            ("", Answer::Fail, attempts, 1),
            (ALL_FAILED, Answer::Fail, attempts, 1),
        ];
        for (case, answer, attempts, deliveries) in cases {
            self.receiver.answer(answer);
            let mut sent = Sent::default();
            for _ in 0..deliveries {
                let Some(one) = self
                    .window(Change::Order, attempts, self.events_per_order)
                    .await?
                else {
                    webhooks
                        .notes
                        .push(format!("webhooks: {case}: a delivery did not come"));
                    return Ok(());
                };
                sent.merge(one);
            }
            if !case.is_empty() {
                let measured = summarize((case, answer.as_str()), sent, Some(&empty.per_delivery));
                webhooks.measured.push(measured);
            }
        }
        webhooks.measured.push(empty);
        Ok(())
    }

    /// A pet in stock (staff), a customer, and its endpoint for `order.placed`.
    async fn prepare(&mut self, setup: &Setup<'_>) -> Result<(), Error> {
        let category = json!({"name": format!("Webhooks {}", rand::random::<u32>())});
        let category = created(&mut self.staff, "/categories", &category).await?;
        let pet = json!({"name": "Hooked", "categoryId": category});
        self.pet_id = created(&mut self.staff, "/pets", &pet).await?;
        self.restock().await?;
        let dynamodb = format!("http://{}", setup.dynamodb);
        let key = crate::api_key::issue(setup.admin, &dynamodb, &[], "customer", 1).await?;
        self.customer = Conn::new(self.staff.addr(), key.into_iter().next());
        let endpoint = json!({"url": self.receiver.url(), "events": ["order.placed"]});
        created(&mut self.customer, "/webhooks", &endpoint).await?;
        Ok(())
    }

    async fn restock(&mut self) -> Result<Reply, Error> {
        // A new quantity each time: each restock is a change, one event.
        self.restocks += 1;
        let stock = json!({"quantity": 100_000 + self.restocks});
        let path = format!("/store/inventory/{}", self.pet_id);
        ok(
            self.staff.send(Method::PUT, &path, Some(&stock)).await?,
            &path,
        )
    }

    /// One delivery, as a function that has delivered before: the key
    /// cache, the connections and the endpoint's slots warm, and every
    /// event the consumer read from the stream so far (a new consumer reads
    /// it from its start) fanned out. It tells how many events an order makes.
    async fn warm_up(&mut self) -> Result<Result<(), &'static str>, Error> {
        if !self.settled().await {
            return Ok(Err("the events read at start were not all fanned out"));
        }
        // The order's events all name its pet, the step's own.
        let pet = format!("{}", self.pet_id);
        let before = lines_with(&self.events, &pet);
        if self.window(Change::Order, 1, 1).await?.is_none() {
            return Ok(Err("the first delivery did not arrive"));
        }
        if !self.settled().await {
            return Ok(Err("the first order's events were not all fanned out"));
        }
        self.events_per_order = lines_with(&self.events, &pet).saturating_sub(before).max(1);
        Ok(Ok(()))
    }

    /// Whether every event read so far has been fanned out, and no more
    /// came for a while (the stream is read every 100 ms), within the timeout.
    async fn settled(&self) -> bool {
        let deadline = Instant::now() + TIMEOUT;
        let (mut seen, mut since) = (count_lines(&self.events), Instant::now());
        while Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let events = count_lines(&self.events);
            if events != seen {
                (seen, since) = (events, Instant::now());
            } else if since.elapsed() > Duration::from_secs(1) && fanned_events(&self.log) >= events
            {
                return true;
            }
        }
        false
    }

    /// Makes `change`, then waits for `attempts` attempt lines and
    /// `fan_outs` events fanned out; what came in between, or `None` if they
    /// did not all come.
    async fn window(
        &mut self,
        change: Change,
        attempts: usize,
        fan_outs: usize,
    ) -> Result<Option<Sent>, Error> {
        let attempted = lines_with(&self.log, ATTEMPT_METRICS) + attempts;
        let fanned = fanned_events(&self.log) + fan_outs;
        match change {
            Change::Order => {
                let order = json!({"petId": self.pet_id, "quantity": 1});
                let reply = self
                    .customer
                    .send(Method::POST, "/store/orders", Some(&order));
                ok(reply.await?, "POST /store/orders")?;
            }
            Change::Restock => {
                self.restock().await?;
            }
        }
        self.meter.skip().await?;
        let deadline = Instant::now() + TIMEOUT * (attempts + 1) as u32;
        let done = |log: &Path| {
            lines_with(log, ATTEMPT_METRICS) >= attempted && fanned_events(log) >= fanned
        };
        while !done(&self.log) {
            if Instant::now() > deadline {
                return Ok(None);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let mut sent = Sent {
            requests: 1,
            ..Sent::default()
        };
        self.meter.add_to(&mut sent).await?;
        // The handling time: the DynamoDB calls (less the capture's reads
        // around them, which `per_request` takes off) and the attempts.
        let tally = sent.tally.values();
        let calls_ms: f64 = tally.map(|t| t.upstream_ms + t.tap_ms).sum();
        let attempts_ms: f64 = attempt_fields(&sent.lines).map(|a| a.duration_ms).sum();
        sent.total_ms = calls_ms + attempts_ms;
        Ok(Some(sent))
    }

    /// The last delivery item's read units, as a message back before its
    /// time reads it (one consistent `GetItem`), from the item itself.
    async fn delivery_read_units(&self, dynamodb: SocketAddr) -> Option<f64> {
        let log = std::fs::read_to_string(&self.log).ok()?;
        let lines: Vec<String> = log.lines().map(str::to_string).collect();
        let last = attempt_fields(&lines).last()?;
        let mut dynamodb = DynamoDb::new(dynamodb);
        let tables = dynamodb.call("ListTables", &json!({})).await.ok()?;
        for table in tables["TableNames"]
            .as_array()?
            .iter()
            .filter_map(Value::as_str)
        {
            // Found by its event, wherever its endpoint's shard put it (the
            // bench's table is small: a scan is quick, and this reading is
            // not one the bench prices).
            let request = json!({
                "TableName": table,
                "FilterExpression": "SK = :sk",
                "ExpressionAttributeValues": {":sk": {"S": format!("DELIVERY#{}", last.event_id)}},
                "ConsistentRead": true,
            });
            let Ok(got) = dynamodb.call("Scan", &request).await else {
                continue;
            };
            if let Some(item) = got["Items"][0].as_object() {
                return Some(read_units(item_size(item), true));
            }
        }
        None
    }
}

/// The id of what a `POST` created.
async fn created(conn: &mut Conn, path: &str, body: &Value) -> Result<u64, Error> {
    let reply = ok(conn.send(Method::POST, path, Some(body)).await?, path)?;
    reply
        .created_id()
        .ok_or_else(|| format!("POST {path} gave no id").into())
}

fn ok(reply: Reply, what: &str) -> Result<Reply, Error> {
    if reply.status.is_success() {
        return Ok(reply);
    }
    let body = String::from_utf8_lossy(&reply.body);
    Err(format!("{what}: {} {body}", reply.status).into())
}
