//! `petstore-admin data check`: reads the whole data table and reports every
//! item that breaks an invariant the service's writes keep
//! ([`invariants::INVARIANTS`]), with its key and what is wrong.
//!
//! Each item is checked alone as its page arrives (the item invariants), and
//! a few facts of it are kept ([`gathered`]) for the invariants across items
//! (counts, references, name claims), checked once the scan is done. Read
//! a table no one is writing (a restored one, a copy, a stage at rest): a
//! scan is not a snapshot, so under traffic an order placed between the scan
//! of its pet and its own may be reported; check the keys reported again.

pub mod gathered;
pub mod invariants;
pub mod item;
pub mod stock;
pub mod webhooks;

use crate::scan::{scan_pages, BoxError, ScanOptions};
use aws_sdk_dynamodb::Client;
use gathered::Gathered;
use indicatif::ProgressBar;
use invariants::{Rule, INVARIANTS};
use item::{Finding, Scanned};
use petstore::db::shards::Shards;
use petstore::db::Item;
use std::time::{Duration, Instant};

/// What a check found.
#[derive(Debug)]
pub struct Report {
    pub items: u64,
    /// Every broken invariant, ordered by key.
    pub findings: Vec<Finding>,
    pub elapsed: Duration,
}

impl Report {
    /// Whether every invariant holds.
    pub fn sound(&self) -> bool {
        self.findings.is_empty()
    }

    pub fn items_per_second(&self) -> f64 {
        self.items as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// The invariants applied to a stream of items.
pub struct Checker {
    shards: Shards,
    gathered: Gathered,
    findings: Vec<Finding>,
    items: u64,
}

impl Checker {
    /// A checker for a stage whose lists are sharded as `shards`.
    pub fn new(shards: Shards) -> Checker {
        Checker {
            shards,
            gathered: Gathered::default(),
            findings: Vec::new(),
            items: 0,
        }
    }

    /// Checks one item and keeps what the table invariants need of it.
    pub fn item(&mut self, item: &Item) {
        let scanned = Scanned::new(item, self.shards);
        for invariant in INVARIANTS {
            if let Rule::Item(check) = invariant.rule {
                if let Some(problem) = check(&scanned) {
                    let (pk, sk) = (scanned.pk().to_string(), scanned.sk());
                    self.findings
                        .push(Finding::new(pk, sk, invariant.name, problem));
                }
            }
        }
        self.gathered.add(&scanned);
        self.items += 1;
    }

    /// Runs the table invariants: every finding, ordered by key.
    pub fn finish(mut self) -> (u64, Vec<Finding>) {
        for invariant in INVARIANTS {
            if let Rule::Table(check) = invariant.rule {
                self.findings.extend(check(&self.gathered));
            }
        }
        self.findings
            .sort_by(|a, b| (&a.pk, &a.sk, a.invariant).cmp(&(&b.pk, &b.sk, b.invariant)));
        (self.items, self.findings)
    }
}

/// Checks every item of `table`, read as `scan` says, counting them on `progress`.
pub async fn check_table(
    client: &Client,
    table: &str,
    shards: Shards,
    scan: ScanOptions,
    progress: &ProgressBar,
) -> Result<Report, BoxError> {
    let started = Instant::now();
    let mut pages = scan_pages(client, table, scan);
    let mut checker = Checker::new(shards);
    while let Some(page) = pages.recv().await {
        let page = page?;
        for item in &page {
            checker.item(item);
        }
        progress.inc(page.len() as u64);
    }
    progress.finish_and_clear();
    let (items, findings) = checker.finish();
    Ok(Report {
        items,
        findings,
        elapsed: started.elapsed(),
    })
}
