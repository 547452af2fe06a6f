//! `data restore`: a backup or a point in time of the data table, restored
//! into a new table, then given what a restore leaves out (docs/restore.md).
//!
//! DynamoDB restores the items, the key schema, the indexes and the billing
//! mode; not the stream, TTL, point-in-time recovery, deletion protection or
//! tags. Each is put back here, in that order, waiting for the table to be
//! `ACTIVE` between them (an update of a table still updating is refused).

use crate::scan::BoxError;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::primitives::DateTime as AwsTime;
use aws_sdk_dynamodb::types::{
    PointInTimeRecoverySpecification, SseSpecification, StreamSpecification, StreamViewType,
    TableStatus, Tag, TimeToLiveSpecification,
};
use aws_sdk_dynamodb::Client;
use chrono::{DateTime, Utc};
use petstore::db::DbFailure;
use serde::Serialize;
use std::time::{Duration, Instant};

/// The TTL attribute of the data table (`template.yaml`, `db/tables.rs`).
const TTL_ATTRIBUTE: &str = "expiresAt";

/// What a restore starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The table `table` as it was at `at`, or at its latest restorable time.
    PointInTime {
        table: String,
        at: Option<DateTime<Utc>>,
    },
    /// An on-demand backup, by its ARN.
    Backup { arn: String },
}

/// One step of a restore and how long it took.
#[derive(Debug, Serialize)]
pub struct Step {
    pub step: &'static str,
    pub seconds: f64,
}

/// The restored table and the steps that made it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Restored {
    pub table: String,
    pub table_arn: String,
    /// What the stack's `DataTableStreamArn` parameter takes.
    pub stream_arn: String,
    pub steps: Vec<Step>,
}

/// Restores `source` into the new table `target`, tagged with `tags` (the
/// old table's, when it can still be read), and gives it the stream, TTL,
/// point-in-time recovery and deletion protection the template gives the
/// data table. Waits at most `patience` for each step.
pub async fn restore(
    client: &Client,
    source: &Source,
    target: &str,
    patience: Duration,
) -> Result<Restored, BoxError> {
    let mut steps = Vec::new();
    let mut timed = |step: &'static str, started: Instant| {
        steps.push(Step {
            step,
            seconds: started.elapsed().as_secs_f64(),
        })
    };
    let started = Instant::now();
    let tags = source_tags(client, source).await?;
    start_restore(client, source, target).await?;
    let arn = active(client, target, patience).await?;
    timed("restore", started);

    let started = Instant::now();
    enable_stream(client, target).await?;
    active(client, target, patience).await?;
    timed("stream (NEW_AND_OLD_IMAGES)", started);

    let started = Instant::now();
    enable_ttl(client, target).await?;
    timed("TTL on expiresAt", started);

    let started = Instant::now();
    enable_point_in_time_recovery(client, target).await?;
    timed("point-in-time recovery", started);

    let started = Instant::now();
    protect_from_deletion(client, target).await?;
    active(client, target, patience).await?;
    timed("deletion protection", started);

    let started = Instant::now();
    if !tags.is_empty() {
        let out = client
            .tag_resource()
            .resource_arn(&arn)
            .set_tags(Some(tags))
            .send()
            .await;
        out.map_err(|e| failed("tag the table", target, e))?;
    }
    timed("tags", started);

    let stream_arn = described(client, target).await?.1.unwrap_or_default();
    Ok(Restored {
        table: target.to_string(),
        table_arn: arn,
        stream_arn,
        steps,
    })
}

async fn enable_stream(client: &Client, target: &str) -> Result<(), BoxError> {
    let stream = StreamSpecification::builder()
        .stream_enabled(true)
        .stream_view_type(StreamViewType::NewAndOldImages)
        .build()?;
    let out = client
        .update_table()
        .table_name(target)
        .stream_specification(stream)
        .send()
        .await;
    out.map_err(|e| failed("enable the stream", target, e))?;
    Ok(())
}

async fn enable_ttl(client: &Client, target: &str) -> Result<(), BoxError> {
    let ttl = TimeToLiveSpecification::builder()
        .attribute_name(TTL_ATTRIBUTE)
        .enabled(true)
        .build()?;
    let out = client
        .update_time_to_live()
        .table_name(target)
        .time_to_live_specification(ttl)
        .send()
        .await;
    out.map_err(|e| failed("turn on TTL", target, e))?;
    Ok(())
}

async fn enable_point_in_time_recovery(client: &Client, target: &str) -> Result<(), BoxError> {
    let pitr = PointInTimeRecoverySpecification::builder()
        .point_in_time_recovery_enabled(true)
        .build()?;
    let out = client
        .update_continuous_backups()
        .table_name(target)
        .point_in_time_recovery_specification(pitr)
        .send()
        .await;
    out.map_err(|e| failed("turn on point-in-time recovery", target, e))?;
    Ok(())
}

async fn protect_from_deletion(client: &Client, target: &str) -> Result<(), BoxError> {
    let out = client
        .update_table()
        .table_name(target)
        .deletion_protection_enabled(true)
        .send()
        .await;
    out.map_err(|e| failed("turn on deletion protection", target, e))?;
    Ok(())
}

/// `what` failed on `table`: the operation, the table and AWS's answer.
fn failed<E>(
    what: &str,
    table: &str,
    error: SdkError<E, aws_sdk_dynamodb::config::http::HttpResponse>,
) -> BoxError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    format!("{what}: {}", DbFailure::of(table, &error)).into()
}

/// The tags of the table restored from, when it still exists.
async fn source_tags(client: &Client, source: &Source) -> Result<Vec<Tag>, BoxError> {
    let Source::PointInTime { table, .. } = source else {
        return Ok(Vec::new());
    };
    let Ok(described) = client.describe_table().table_name(table).send().await else {
        return Ok(Vec::new());
    };
    let Some(arn) = described.table.and_then(|t| t.table_arn) else {
        return Ok(Vec::new());
    };
    let out = client
        .list_tags_of_resource()
        .resource_arn(arn)
        .send()
        .await;
    Ok(out
        .map_err(|e| failed("read the old table's tags", table, e))?
        .tags
        .unwrap_or_default())
}

async fn start_restore(client: &Client, source: &Source, target: &str) -> Result<(), BoxError> {
    // The template encrypts with the AWS managed key; a restore would not.
    let sse = SseSpecification::builder().enabled(true).build();
    match source {
        Source::PointInTime { table, at } => {
            let request = client
                .restore_table_to_point_in_time()
                .source_table_name(table)
                .target_table_name(target)
                .sse_specification_override(sse);
            let request = match at {
                Some(at) => request.restore_date_time(AwsTime::from_millis(at.timestamp_millis())),
                None => request.use_latest_restorable_time(true),
            };
            request
                .send()
                .await
                .map_err(|e| failed("restore to a point in time", target, e))?;
        }
        Source::Backup { arn } => {
            client
                .restore_table_from_backup()
                .backup_arn(arn)
                .target_table_name(target)
                .sse_specification_override(sse)
                .send()
                .await
                .map_err(|e| failed("restore the backup", target, e))?;
        }
    }
    Ok(())
}

/// The table's status and stream ARN.
async fn described(
    client: &Client,
    table: &str,
) -> Result<(Option<TableStatus>, Option<String>, String), BoxError> {
    let out = client.describe_table().table_name(table).send().await;
    let table = out
        .map_err(|e| failed("describe the table", table, e))?
        .table
        .ok_or("no table")?;
    Ok((
        table.table_status,
        table.latest_stream_arn,
        table.table_arn.unwrap_or_default(),
    ))
}

/// Waits until `table` and its indexes are `ACTIVE`; returns its ARN.
async fn active(client: &Client, table: &str, patience: Duration) -> Result<String, BoxError> {
    let started = Instant::now();
    loop {
        let (status, _, arn) = described(client, table).await?;
        if status == Some(TableStatus::Active) {
            return Ok(arn);
        }
        if started.elapsed() > patience {
            return Err(format!("{table} is still {status:?} after {patience:?}").into());
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}
