//! DynamoDB Local's stream, read with the Streams API as Lambda's event source
//! mapping reads the real one: shard by shard, in order, each page of records
//! handed to [`publish_changes`] as one batch; when a batch leaves a record
//! unpublished, the shard is read again from that record (as Lambda delivers
//! it again), so nothing is lost and a record yields the same events each time.
//!
//! `make run` follows the stream ([`StreamReader::follow`]); the tests read it
//! to its current end ([`StreamReader::drain`]).

use crate::batch::{publish_changes, Outcome, Retries};
use crate::change::Change;
use crate::publish::Publisher;
use crate::BoxError;
use aws_sdk_dynamodbstreams::types::ShardIteratorType;
use aws_sdk_dynamodbstreams::Client;
use std::collections::BTreeMap;
use std::time::Duration;

/// How long `follow` waits after a read that found nothing: a change's
/// events (and its webhooks, issue 47: order to attempt within 1 s at p99)
/// wait at most this for the read that finds them.
pub const POLL_EVERY: Duration = Duration::from_millis(100);

/// A Streams API client for DynamoDB Local at `endpoint`.
pub fn local_streams_client(endpoint: &str) -> Client {
    let credentials = aws_sdk_dynamodbstreams::config::Credentials::new(
        "local",
        "local",
        None,
        None,
        "petstore-local",
    );
    let mut config = aws_sdk_dynamodbstreams::Config::builder()
        .behavior_version(aws_sdk_dynamodbstreams::config::BehaviorVersion::latest())
        .region(aws_sdk_dynamodbstreams::config::Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .credentials_provider(credentials)
        .http_client(petstore::http_client());
    if let Some(recorder) = petstore::aws_calls::interceptor() {
        config.push_interceptor(recorder);
    }
    Client::from_conf(config.build())
}

/// Where reading a shard stands.
#[derive(Debug, Default)]
struct Shard {
    /// The iterator of the next page; `None` before the first read and after
    /// an error (the next read starts after `last`).
    iterator: Option<String>,
    /// The sequence number of the last record published.
    last: Option<String>,
    /// A closed shard read to its end.
    done: bool,
    /// The shard this one continues: read only after it, so one item's
    /// changes stay in order.
    parent: Option<String>,
}

/// Totals of what a reader did, for the tests and the bench.
#[derive(Debug, Default, Clone)]
pub struct Totals {
    pub records: usize,
    pub published: usize,
    pub calls: usize,
    pub retried: usize,
    /// Batches that left a record unpublished (each then read again).
    pub redeliveries: usize,
    /// Streams API calls.
    pub reads: usize,
}

/// Reads one table's stream from its beginning.
pub struct StreamReader {
    client: Client,
    table: String,
    stream: Option<String>,
    shards: BTreeMap<String, Shard>,
    retries: Retries,
    pub totals: Totals,
}

impl StreamReader {
    pub fn new(client: Client, table: impl Into<String>) -> StreamReader {
        StreamReader {
            client,
            table: table.into(),
            stream: None,
            shards: BTreeMap::new(),
            retries: Retries::default(),
            totals: Totals::default(),
        }
    }

    /// This reader, retrying failed entries as `retries` says.
    pub fn with_retries(self, retries: Retries) -> StreamReader {
        StreamReader { retries, ..self }
    }

    /// Reads and publishes whatever the stream holds now; answers how many
    /// records were read and whether a batch left one unpublished.
    ///
    /// Its AWS calls are recorded as the events function's: Lambda's event
    /// source mapping reads the stream with that function's role.
    pub async fn poll<P: Publisher>(&mut self, publisher: &P) -> Result<(usize, bool), BoxError> {
        petstore::aws_calls::within(crate::recorded_as_events(), self.poll_shards(publisher)).await
    }

    async fn poll_shards<P: Publisher>(
        &mut self,
        publisher: &P,
    ) -> Result<(usize, bool), BoxError> {
        self.discover().await?;
        let (mut read, mut unpublished) = (0, false);
        let parent_done = |shard: &Shard| {
            shard
                .parent
                .as_ref()
                .and_then(|p| self.shards.get(p))
                .is_none_or(|p| p.done)
        };
        let open: Vec<String> = self
            .shards
            .iter()
            .filter(|(_, s)| !s.done && parent_done(s))
            .map(|(id, _)| id.clone())
            .collect();
        for id in open {
            let (records, left) = self.poll_shard(&id, publisher).await?;
            read += records;
            unpublished |= left;
        }
        Ok((read, unpublished))
    }

    /// Polls until a poll finds nothing new and left nothing unpublished, at
    /// most `max_polls` times; answers whether the stream was drained.
    pub async fn drain<P: Publisher>(
        &mut self,
        publisher: &P,
        max_polls: usize,
    ) -> Result<bool, BoxError> {
        for _ in 0..max_polls {
            match self.poll(publisher).await {
                Ok((0, false)) => return Ok(true),
                Ok(_) => {}
                // A failed read is read again: the iterator was kept.
                Err(error) => tracing::debug!("stream read failed: {error}"),
            }
        }
        Ok(false)
    }

    /// Follows the stream for ever: read again at once after a read that
    /// found records (more may be behind them), else after [`POLL_EVERY`].
    pub async fn follow<P: Publisher>(mut self, publisher: P) {
        loop {
            match self.poll(&publisher).await {
                Ok((read, _)) if read > 0 => continue,
                Ok(_) => {}
                Err(error) => tracing::warn!("reading the table's stream: {error}"),
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
    }

    /// Finds the table's stream and any shard not yet known.
    async fn discover(&mut self) -> Result<(), BoxError> {
        if self.stream.is_none() {
            self.totals.reads += 1;
            let streams = self
                .client
                .list_streams()
                .table_name(&self.table)
                .send()
                .await?;
            self.stream = streams
                .streams()
                .first()
                .and_then(|s| s.stream_arn().map(str::to_string));
        }
        let Some(stream) = &self.stream else {
            return Err(format!("table {} has no stream", self.table).into());
        };
        self.totals.reads += 1;
        let described = self
            .client
            .describe_stream()
            .stream_arn(stream)
            .send()
            .await?;
        let shards = described
            .stream_description()
            .map(|d| d.shards())
            .unwrap_or_default();
        for shard in shards {
            if let Some(id) = shard.shard_id() {
                self.shards.entry(id.to_string()).or_insert_with(|| Shard {
                    parent: shard.parent_shard_id().map(str::to_string),
                    ..Shard::default()
                });
            }
        }
        Ok(())
    }

    /// Reads one page of a shard and publishes it as one batch.
    async fn poll_shard<P: Publisher>(
        &mut self,
        id: &str,
        publisher: &P,
    ) -> Result<(usize, bool), BoxError> {
        let iterator = match self.shards.get(id).and_then(|s| s.iterator.clone()) {
            Some(iterator) => iterator,
            None => self.iterator(id).await?,
        };
        self.totals.reads += 1;
        let read = self.client.get_records().shard_iterator(&iterator).send();
        let stream = self.stream.clone().unwrap_or_default();
        let page = match petstore::aws_calls::reading_stream(&stream, read).await {
            Ok(page) => page,
            Err(error) => {
                // Start again after the last record published.
                self.shard(id).iterator = None;
                return Err(error.into());
            }
        };
        let changes: Vec<Change> = page
            .records
            .unwrap_or_default()
            .into_iter()
            .map(Change::from_streams)
            .collect();
        let outcome = publish_changes(&changes, publisher, self.retries).await;
        publisher.end_batch();
        self.count(changes.len(), &outcome);
        let shard = self.shard(id);
        match &outcome.first_unpublished {
            Some(sequence) => {
                // Delivered again from that record, as Lambda would.
                let before = changes.iter().take_while(|c| &c.sequence != sequence);
                shard.last = before
                    .last()
                    .map(|c| c.sequence.clone())
                    .or(shard.last.take());
                shard.iterator = None;
            }
            None => {
                if let Some(change) = changes.last() {
                    shard.last = Some(change.sequence.clone());
                }
                shard.iterator = page.next_shard_iterator;
                shard.done = shard.iterator.is_none();
            }
        }
        Ok((changes.len(), outcome.first_unpublished.is_some()))
    }

    fn shard(&mut self, id: &str) -> &mut Shard {
        self.shards.entry(id.to_string()).or_default()
    }

    fn count(&mut self, records: usize, outcome: &Outcome) {
        let totals = &mut self.totals;
        totals.records += records;
        totals.published += outcome.published;
        totals.calls += outcome.calls;
        totals.retried += outcome.retried;
        totals.redeliveries += usize::from(outcome.first_unpublished.is_some());
    }

    /// An iterator just after the last record published, or at the shard's start.
    async fn iterator(&mut self, id: &str) -> Result<String, BoxError> {
        let stream = self.stream.clone().unwrap_or_default();
        let last = self.shard(id).last.clone();
        let request = self
            .client
            .get_shard_iterator()
            .stream_arn(stream)
            .shard_id(id);
        let request = match last {
            Some(sequence) => request
                .shard_iterator_type(ShardIteratorType::AfterSequenceNumber)
                .sequence_number(sequence),
            None => request.shard_iterator_type(ShardIteratorType::TrimHorizon),
        };
        self.totals.reads += 1;
        let out = request.send().await?;
        out.shard_iterator
            .ok_or_else(|| format!("no iterator for shard {id}").into())
    }
}
