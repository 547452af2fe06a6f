//! Where events go: EventBridge (`PutEvents`), or locally a file holding each
//! event as EventBridge delivers it to a target, one JSON line per event.

use crate::domain::{DomainEvent, SOURCE};
use crate::BoxError;
use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;
use std::future::Future;
use std::io::Write;
use std::path::PathBuf;

/// The most entries one `PutEvents` call takes.
pub const MAX_ENTRIES: usize = 10;

/// What a `PutEvents` call takes at most, in bytes as EventBridge counts them.
pub const MAX_CALL_BYTES: usize = 256 * 1024;

/// Publishes events, one call at a time.
pub trait Publisher: Sync {
    /// Publishes `events` (at most [`MAX_ENTRIES`]) in one call, answering for
    /// each, in order, whether it was published (`Err` says why not). A call
    /// that fails as a whole fails every entry.
    fn publish(
        &self,
        events: &[DomainEvent],
    ) -> impl Future<Output = Vec<Result<(), String>>> + Send;

    /// Told when a batch of stream records is done (its summary logged):
    /// a publisher that keeps totals over the batch's calls writes them.
    fn end_batch(&self) {}
}

/// An entry's size as EventBridge counts it for a call's limit.
pub fn entry_size(event: &DomainEvent) -> usize {
    // Time (14 bytes) + source + detail-type + detail; no resources.
    14 + SOURCE.len() + event.detail_type.len() + event.detail.to_string().len()
}

/// EventBridge, on the stack's own bus.
#[derive(Clone, Debug)]
pub struct EventBridgePublisher {
    client: aws_sdk_eventbridge::Client,
    bus: String,
}

impl EventBridgePublisher {
    pub fn new(client: aws_sdk_eventbridge::Client, bus: impl Into<String>) -> Self {
        EventBridgePublisher {
            client,
            bus: bus.into(),
        }
    }

    /// A publisher to `bus`, the function's `EVENT_BUS_NAME`, through a
    /// client with `aws`'s settings; its calls are recorded when
    /// `petstore::aws_calls` records.
    pub fn from_config(aws: &aws_config::SdkConfig, bus: impl Into<String>) -> Self {
        let bus = bus.into();
        petstore::aws_calls::name_resources(&[("EVENT_BUS_NAME", &bus)]);
        let mut config = aws_sdk_eventbridge::config::Builder::from(aws);
        if let Some(recorder) = petstore::aws_calls::interceptor() {
            config.push_interceptor(recorder);
        }
        EventBridgePublisher::new(aws_sdk_eventbridge::Client::from_conf(config.build()), bus)
    }

    async fn put(&self, events: &[DomainEvent]) -> Result<Vec<Result<(), String>>, BoxError> {
        let entries = events
            .iter()
            .map(|event| {
                aws_sdk_eventbridge::types::PutEventsRequestEntry::builder()
                    .event_bus_name(&self.bus)
                    .source(SOURCE)
                    .detail_type(event.detail_type)
                    .detail(event.detail.to_string())
                    .time(aws_sdk_eventbridge::primitives::DateTime::from_millis(
                        event.occurred_at.timestamp_millis(),
                    ))
                    .build()
            })
            .collect();
        let put = self.client.put_events().set_entries(Some(entries)).send();
        let out = petstore::aws_calls::within(crate::recorded_as_events(), put).await?;
        let results = out.entries();
        Ok((0..events.len())
            .map(|i| match results.get(i) {
                Some(entry) if entry.error_code().is_none() && entry.event_id().is_some() => Ok(()),
                Some(entry) => Err(format!(
                    "{}: {}",
                    entry.error_code().unwrap_or("no event id"),
                    entry.error_message().unwrap_or_default()
                )),
                None => Err("no result for the entry".to_string()),
            })
            .collect())
    }
}

impl Publisher for EventBridgePublisher {
    async fn publish(&self, events: &[DomainEvent]) -> Vec<Result<(), String>> {
        match self.put(events).await {
            Ok(results) => results,
            Err(error) => {
                let error = format!("PutEvents failed: {error}");
                vec![Err(error); events.len()]
            }
        }
    }
}

/// An event as EventBridge delivers it to a target (a rule's Lambda
/// function, an SQS queue): `version`, a fresh `id` per delivery, `time` to
/// the second.
#[derive(Serialize)]
pub struct Delivered<'a> {
    pub version: &'static str,
    pub id: String,
    #[serde(rename = "detail-type")]
    pub detail_type: &'a str,
    pub source: &'static str,
    pub account: &'a str,
    pub time: String,
    pub region: &'a str,
    pub resources: [String; 0],
    pub detail: &'a serde_json::Value,
}

impl<'a> Delivered<'a> {
    pub fn of(event: &'a DomainEvent, account: &'a str, region: &'a str) -> Delivered<'a> {
        Delivered {
            version: "0",
            id: uuid::Uuid::new_v4().to_string(),
            detail_type: event.detail_type,
            source: SOURCE,
            account,
            time: seconds(event.occurred_at),
            region,
            resources: [],
            detail: &event.detail,
        }
    }
}

fn seconds(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// `make run`'s bus: appends each event, as delivered, to a file.
#[derive(Clone, Debug)]
pub struct FilePublisher {
    path: PathBuf,
    account: String,
    region: String,
}

impl FilePublisher {
    /// DynamoDB Local's account and the region of the local stack.
    pub fn new(path: impl Into<PathBuf>, region: impl Into<String>) -> FilePublisher {
        FilePublisher {
            path: path.into(),
            account: "000000000000".into(),
            region: region.into(),
        }
    }

    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    fn append(&self, events: &[DomainEvent]) -> Result<(), BoxError> {
        let mut lines = Vec::new();
        for event in events {
            serde_json::to_writer(
                &mut lines,
                &Delivered::of(event, &self.account, &self.region),
            )?;
            lines.push(b'\n');
        }
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        // One write per call: a reader never sees half a line of it.
        file.write_all(&lines)?;
        Ok(())
    }
}

impl Publisher for FilePublisher {
    async fn publish(&self, events: &[DomainEvent]) -> Vec<Result<(), String>> {
        match self.append(events) {
            Ok(()) => vec![Ok(()); events.len()],
            Err(error) => vec![Err(format!("{}: {error}", self.path.display())); events.len()],
        }
    }
}
