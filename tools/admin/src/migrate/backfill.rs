//! Running one backfill: a parallel scan of the table in segments, each
//! candidate item changed by its own conditional transaction
//! (`petstore::db::migration`), the writes throttled, each segment's
//! position saved after each page ([`super::progress`]).

use super::progress::{self, Counts, Ledger, Progress};
use crate::scan::{BoxError, ProgressBar};
use aws_sdk_dynamodb::types::AttributeValue;
use futures::stream::{self, StreamExt};
use petstore::db::migration::Backfilled;
use petstore::db::{Changes, DbError, Item};
use petstore::records::Id;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

/// The write rate when the table has no provisioned capacity (on demand):
/// 200 item writes a second, 400 write units as transactions bill them,
/// a tenth of what an on-demand table takes at once without throttling
/// (4,000 write units a second), so the service keeps the rest.
pub const DEFAULT_WRITES_PER_SECOND: u32 = 200;

/// The share of a provisioned table's write capacity a backfill takes.
pub const PROVISIONED_SHARE: f64 = 0.25;

/// Items a segment changes at once within a page.
const IN_FLIGHT: usize = 4;

/// A backfill of migration 0001.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backfill {
    /// Open orders placed before holds were counted: `lapsesAt` and counted.
    Holds,
    /// Category names claimed before the NFKC comparison: current claims.
    NameClaims,
    /// Pets whose pet item holds their stock (1.0.0's form): stock items.
    StockItems,
}

impl Backfill {
    pub fn named(name: &str) -> Option<Backfill> {
        match name {
            "holds" => Some(Backfill::Holds),
            "name-claims" => Some(Backfill::NameClaims),
            "stock-items" => Some(Backfill::StockItems),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Backfill::Holds => "holds",
            Backfill::NameClaims => "name-claims",
            Backfill::StockItems => "stock-items",
        }
    }

    /// Item writes one change makes (each item of its transaction).
    fn writes(self) -> u32 {
        match self {
            Backfill::Holds => 2,
            Backfill::NameClaims => 3,
            // The pet item's update and the stock item's put.
            Backfill::StockItems => 2,
        }
    }

    /// The scan's filter: the items this backfill may change.
    fn filter(self) -> (&'static str, &'static [(&'static str, &'static str)]) {
        match self {
            Backfill::Holds => (
                "SK = :order AND #complete = :open AND attribute_not_exists(lapsesAt)",
                &[("#complete", "complete")],
            ),
            Backfill::NameClaims => ("SK = :category", &[]),
            // A pet item holding its stock; stock items and moved pets are not.
            Backfill::StockItems => (
                "SK = :pet AND attribute_exists(#stock)",
                &[("#stock", "stock")],
            ),
        }
    }

    /// Whether an item this backfill changes is left on `table` once it is
    /// done. Only `stock-items` can have any: until the switch, the
    /// functions read layout 1 and create pets that hold their stock (as
    /// release 1.0.0 did), so a pet created after the scan passed its place
    /// is one more to move. Holds and name claims are made the new way by
    /// every write of this release. A consistent scan, stopped at the first
    /// such pet.
    pub async fn left_over(
        self,
        client: &aws_sdk_dynamodb::Client,
        table: &str,
    ) -> Result<bool, BoxError> {
        if self != Backfill::StockItems {
            return Ok(false);
        }
        let (filter, names) = self.filter();
        let mut start = None;
        loop {
            let mut request = client
                .scan()
                .table_name(table)
                .consistent_read(true)
                .filter_expression(filter)
                .expression_attribute_values(":pet", AttributeValue::S("PET".into()))
                .select(aws_sdk_dynamodb::types::Select::Count)
                .set_exclusive_start_key(start.take());
            for (placeholder, name) in names {
                request = request.expression_attribute_names(*placeholder, *name);
            }
            let out = request.send().await?;
            if out.count() > 0 {
                return Ok(true);
            }
            start = out.last_evaluated_key;
            if start.is_none() {
                return Ok(false);
            }
        }
    }

    async fn apply(
        self,
        changes: &Changes,
        id: Id,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Backfilled, DbError> {
        match self {
            Backfill::Holds => changes.backfill_hold(id, now).await,
            Backfill::NameClaims => changes.backfill_name_claim(id).await,
            Backfill::StockItems => changes.backfill_stock_item(id).await,
        }
    }
}

/// How a backfill runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Item writes a second at most (see [`DEFAULT_WRITES_PER_SECOND`]).
    pub max_writes_per_second: u32,
    /// Parallel scan segments of a new run (a resumed one keeps its own).
    pub segments: u32,
    /// Items a scan page examines at most (`None`: DynamoDB's 1 MB pages).
    pub page_size: Option<i32>,
    /// Stop once this many pages were saved, as an interruption would
    /// (`--pages`; the tests' interruption).
    pub stop_after_pages: Option<u64>,
    /// Set to stop at the next saved page (Ctrl-C).
    pub stop: Arc<AtomicBool>,
}

/// What one run of a backfill did.
#[derive(Debug, Clone, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub backfill: &'static str,
    pub scanned: u64,
    pub changed: u64,
    pub skipped: u64,
    pub conflicts: u64,
    /// Stopped before the end (resume with `run` again).
    pub stopped: bool,
    pub seconds: f64,
}

/// Spaces writes evenly at a rate, across every segment.
struct Throttle {
    interval: Duration,
    next: Mutex<Instant>,
}

impl Throttle {
    fn new(per_second: u32) -> Throttle {
        Throttle {
            interval: Duration::from_secs_f64(1.0 / f64::from(per_second.max(1))),
            next: Mutex::new(Instant::now()),
        }
    }

    async fn take(&self, writes: u32) {
        let at = {
            let mut next = self.next.lock().await;
            let at = (*next).max(Instant::now());
            *next = at + self.interval * writes;
            at
        };
        tokio::time::sleep_until(at.into()).await;
    }
}

/// What every segment of one run shares.
struct Run<'a> {
    backfill: Backfill,
    changes: &'a Changes,
    ledger: Ledger,
    throttle: Throttle,
    options: &'a Options,
    bar: &'a ProgressBar,
    pages: AtomicU64,
    now: chrono::DateTime<chrono::Utc>,
}

/// Runs `backfill` on `changes`' table to its end, resuming from `found`
/// (its progress item) if it started before; or until stopped.
pub async fn run(
    backfill: Backfill,
    changes: &Changes,
    migration: u32,
    found: Option<&Progress>,
    options: &Options,
    bar: &ProgressBar,
) -> Result<Outcome, BoxError> {
    let started = Instant::now();
    let (client, table) = (changes.client(), changes.table());
    let segments = found.map_or(options.segments.max(1), |p| p.segments);
    let ledger = Ledger::begin(client, table, migration, backfill.name(), segments, found).await?;
    let run = Run {
        backfill,
        changes,
        ledger,
        throttle: Throttle::new(options.max_writes_per_second),
        options,
        bar,
        pages: AtomicU64::new(0),
        now: chrono::Utc::now(),
    };
    let starts: Vec<Option<Option<Item>>> = match found {
        Some(progress) => progress.positions.clone(),
        None => vec![None; segments as usize],
    };
    let done = futures::future::try_join_all(
        (0..segments)
            .zip(starts)
            .map(|(segment, start)| run.segment(segment, segments, start)),
    )
    .await?;
    let finished = done.iter().all(|reached_end| *reached_end);
    if finished {
        run.ledger.finish().await?;
    }
    let total = progress::read(client, table, migration, backfill.name()).await?;
    Ok(Outcome {
        backfill: backfill.name(),
        scanned: total.as_ref().map_or(0, |p| p.scanned),
        changed: total.as_ref().map_or(0, |p| p.changed),
        skipped: total.as_ref().map_or(0, |p| p.skipped),
        conflicts: total.as_ref().map_or(0, |p| p.conflicts),
        stopped: !finished,
        seconds: started.elapsed().as_secs_f64(),
    })
}

impl Run<'_> {
    /// Scans one segment from `start` (`Some(None)`: it was done), changing
    /// each candidate; `true` when it reached its end.
    async fn segment(
        &self,
        segment: u32,
        segments: u32,
        start: Option<Option<Item>>,
    ) -> Result<bool, BoxError> {
        let mut start = match start {
            Some(None) => return Ok(true),
            Some(Some(last)) => Some(last),
            None => None,
        };
        let (filter, names) = self.backfill.filter();
        loop {
            if self.stopping() {
                return Ok(false);
            }
            let mut request = self
                .changes
                .client()
                .scan()
                .table_name(self.changes.table())
                .segment(segment as i32)
                .total_segments(segments as i32)
                .filter_expression(filter)
                .projection_expression("id")
                .set_limit(self.options.page_size)
                .set_exclusive_start_key(start.take());
            for (placeholder, name) in names {
                request = request.expression_attribute_names(*placeholder, *name);
            }
            let values = [
                (":order", AttributeValue::S("ORDER".into())),
                (":category", AttributeValue::S("CATEGORY".into())),
                (":pet", AttributeValue::S("PET".into())),
                (":open", AttributeValue::Bool(false)),
            ];
            for (placeholder, value) in values {
                if filter.contains(placeholder) {
                    request = request.expression_attribute_values(placeholder, value);
                }
            }
            let out = request.send().await?;
            let mut counts = self.page(out.items()).await?;
            counts.scanned = u64::try_from(out.scanned_count()).unwrap_or(0);
            self.bar.inc(counts.scanned);
            start = out.last_evaluated_key;
            self.ledger.save(segment, start.clone(), counts).await?;
            self.pages.fetch_add(1, Ordering::SeqCst);
            if start.is_none() {
                return Ok(true);
            }
        }
    }

    /// Changes each candidate of a page: what it came to, counted.
    async fn page(&self, items: &[Item]) -> Result<Counts, BoxError> {
        let ids = items.iter().filter_map(|item| {
            let id = item.get("id")?.as_n().ok()?.parse::<u64>().ok();
            id.and_then(Id::new)
        });
        let results: Vec<Result<Backfilled, DbError>> = stream::iter(ids)
            .map(|id| async move {
                self.throttle.take(self.backfill.writes()).await;
                self.backfill.apply(self.changes, id, self.now).await
            })
            .buffer_unordered(IN_FLIGHT)
            .collect()
            .await;
        let mut counts = Counts::default();
        for result in results {
            match result? {
                Backfilled::Done => counts.changed += 1,
                Backfilled::Skipped => counts.skipped += 1,
                Backfilled::Conflict => counts.conflicts += 1,
            }
        }
        Ok(counts)
    }

    fn stopping(&self) -> bool {
        let pages = self.pages.load(Ordering::SeqCst);
        self.options.stop.load(Ordering::SeqCst)
            || self
                .options
                .stop_after_pages
                .is_some_and(|most| pages >= most)
    }
}

/// The write rate for a table: `--max-writes-per-second` if given, else a
/// share of its provisioned write capacity, else the on-demand default.
pub async fn writes_per_second(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    asked: Option<u32>,
) -> Result<u32, BoxError> {
    if let Some(asked) = asked {
        return Ok(asked.max(1));
    }
    let described = client.describe_table().table_name(table).send().await?;
    let provisioned = described
        .table()
        .and_then(|t| t.provisioned_throughput())
        .and_then(|p| p.write_capacity_units())
        .filter(|units| *units > 0);
    Ok(match provisioned {
        // A transaction's item write costs two units.
        Some(units) => ((units as f64 * PROVISIONED_SHARE / 2.0) as u32).max(1),
        None => DEFAULT_WRITES_PER_SECOND,
    })
}
