//! A backfill's progress, kept in the data table it changes:
//!
//! | PK | SK | attributes |
//! |---|---|---|
//! | `MIGRATION#<id>` | `BACKFILL#<name>` | `state` (`running`, `done`), `runId`, `segmentCount`, `position<N>` per segment (the scan's last key, or `end`), `scanned`, `changed`, `skipped`, `conflicts`, `startedAt`, `updatedAt`, `finishedAt` |
//!
//! Every write to it is conditional on the run that owns it (`runId`): a
//! second `run` takes the item over (it resumes from the saved positions),
//! and the first one's next save fails, so it stops rather than both
//! scanning. A run stopped anywhere (Ctrl-C, a crash, `--pages`) resumes
//! from the last page it saved; the items of a page it did not save are
//! done again, which the backfills' conditions make a no-op.

use super::State;
use crate::scan::BoxError;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use petstore::db::Item;
use serde::Serialize;
use std::collections::HashMap;

/// A segment's position once its scan reached the end.
const END: &str = "end";

/// A backfill's progress item, as read.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    pub state: String,
    #[serde(skip)]
    pub run_id: String,
    pub segments: u32,
    /// Where each segment resumes: `None` at its start, `Some(None)` done.
    #[serde(skip)]
    pub positions: Vec<Option<Option<Item>>>,
    pub scanned: u64,
    pub changed: u64,
    pub skipped: u64,
    pub conflicts: u64,
    pub started_at: String,
    pub updated_at: String,
}

impl Progress {
    pub fn state(&self) -> State {
        match self.state.as_str() {
            "done" => State::Done,
            _ => State::InProgress,
        }
    }
}

fn key(migration: u32, backfill: &str) -> Item {
    HashMap::from([
        (
            "PK".into(),
            AttributeValue::S(format!("MIGRATION#{migration:04}")),
        ),
        (
            "SK".into(),
            AttributeValue::S(format!("BACKFILL#{backfill}")),
        ),
    ])
}

fn number(item: &Item, name: &str) -> u64 {
    item.get(name)
        .and_then(|v| v.as_n().ok())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn text(item: &Item, name: &str) -> String {
    item.get(name)
        .and_then(|v| v.as_s().ok())
        .cloned()
        .unwrap_or_default()
}

/// The progress of `backfill` of migration `migration`, if it ever started.
pub async fn read(
    client: &Client,
    table: &str,
    migration: u32,
    backfill: &str,
) -> Result<Option<Progress>, BoxError> {
    let out = client
        .get_item()
        .table_name(table)
        .set_key(Some(key(migration, backfill)))
        .consistent_read(true)
        .send()
        .await?;
    let Some(item) = out.item else {
        return Ok(None);
    };
    let segments = u32::try_from(number(&item, "segmentCount"))
        .unwrap_or(1)
        .max(1);
    let positions = (0..segments)
        .map(|s| match item.get(&format!("position{s}")) {
            Some(AttributeValue::S(end)) if end == END => Some(None),
            Some(AttributeValue::M(last)) => Some(Some(last.clone())),
            _ => None,
        })
        .collect();
    Ok(Some(Progress {
        state: text(&item, "state"),
        run_id: text(&item, "runId"),
        segments,
        positions,
        scanned: number(&item, "scanned"),
        changed: number(&item, "changed"),
        skipped: number(&item, "skipped"),
        conflicts: number(&item, "conflicts"),
        started_at: text(&item, "startedAt"),
        updated_at: text(&item, "updatedAt"),
    }))
}

/// One run's handle on a backfill's progress item.
#[derive(Debug, Clone)]
pub struct Ledger {
    client: Client,
    table: String,
    key: Item,
    run_id: String,
}

/// What one page did, added to the item's counts.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    pub scanned: u64,
    pub changed: u64,
    pub skipped: u64,
    pub conflicts: u64,
}

fn now() -> AttributeValue {
    AttributeValue::S(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
}

impl Ledger {
    /// Starts a run of `backfill` in `segments` segments, or takes over the
    /// one `found` (resuming its positions and keeping its segments).
    pub async fn begin(
        client: &Client,
        table: &str,
        migration: u32,
        backfill: &str,
        segments: u32,
        found: Option<&Progress>,
    ) -> Result<Ledger, BoxError> {
        let ledger = Ledger {
            client: client.clone(),
            table: table.to_string(),
            key: key(migration, backfill),
            run_id: format!("{:016x}", rand_id()),
        };
        let request = client
            .update_item()
            .table_name(table)
            .set_key(Some(ledger.key.clone()))
            .update_expression("SET runId = :me, #state = :running, updatedAt = :now")
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":me", AttributeValue::S(ledger.run_id.clone()))
            .expression_attribute_values(":running", AttributeValue::S("running".into()))
            .expression_attribute_values(":now", now());
        let request = match found {
            // Taken over from the run that holds it, and only from that one.
            Some(progress) => request
                .condition_expression("runId = :other AND #state = :running")
                .expression_attribute_values(":other", AttributeValue::S(progress.run_id.clone())),
            None => request
                .update_expression(
                    "SET runId = :me, #state = :running, updatedAt = :now, startedAt = :now, \
                     segmentCount = :segments, scanned = :zero, changed = :zero, skipped = :zero, \
                     conflicts = :zero",
                )
                // A first run, or a new pass over one done before (items
                // it must change appeared since: `Backfill::left_over`).
                .condition_expression("attribute_not_exists(PK) OR #state = :done")
                .expression_attribute_values(":done", AttributeValue::S("done".into()))
                .expression_attribute_values(":segments", AttributeValue::N(segments.to_string()))
                .expression_attribute_values(":zero", AttributeValue::N("0".into())),
        };
        request.send().await.map_err(|e| {
            let e = aws_sdk_dynamodb::error::DisplayErrorContext(e);
            format!("another run started or finished {backfill} meanwhile: {e}")
        })?;
        Ok(ledger)
    }

    /// Saves `segment`'s position after a page (`None`: it reached the end)
    /// and adds the page's counts.
    pub async fn save(
        &self,
        segment: u32,
        position: Option<Item>,
        counts: Counts,
    ) -> Result<(), BoxError> {
        let position = match position {
            Some(last) => AttributeValue::M(last),
            None => AttributeValue::S(END.into()),
        };
        let n = |v: u64| AttributeValue::N(v.to_string());
        self.owned(&format!(
            "SET position{segment} = :position, updatedAt = :now \
             ADD scanned :scanned, changed :changed, skipped :skipped, conflicts :conflicts"
        ))
        .expression_attribute_values(":position", position)
        .expression_attribute_values(":scanned", n(counts.scanned))
        .expression_attribute_values(":changed", n(counts.changed))
        .expression_attribute_values(":skipped", n(counts.skipped))
        .expression_attribute_values(":conflicts", n(counts.conflicts))
        .send()
        .await
        .map_err(|e| {
            let e = aws_sdk_dynamodb::error::DisplayErrorContext(e);
            format!("another run took this backfill over, or it finished: {e}")
        })?;
        Ok(())
    }

    /// Marks the backfill done: every segment reached its end.
    pub async fn finish(&self) -> Result<(), BoxError> {
        self.owned("SET #state = :done, updatedAt = :now, finishedAt = :now")
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":done", AttributeValue::S("done".into()))
            .send()
            .await
            .map_err(|e| {
                let e = aws_sdk_dynamodb::error::DisplayErrorContext(e);
                format!("another run took this backfill over: {e}")
            })?;
        Ok(())
    }

    /// An update of the item on the condition that this run still owns it.
    fn owned(
        &self,
        update: &str,
    ) -> aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder {
        self.client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(self.key.clone()))
            .update_expression(update)
            .condition_expression("runId = :me")
            .expression_attribute_values(":me", AttributeValue::S(self.run_id.clone()))
            .expression_attribute_values(":now", now())
    }
}

/// A run's id: unique enough among the runs of one backfill.
fn rand_id() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    (nanos as u64) ^ u64::from(std::process::id()).rotate_left(32)
}
