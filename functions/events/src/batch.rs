//! Publishing a batch of stream records: in order, retrying only what failed,
//! and naming the first record left unpublished.
//!
//! The records' events go out in calls of at most ten entries (and 256 KiB).
//! A call's failed entries, and only they, are sent again, a bounded number
//! of times. When some still fail, publishing stops there: every record
//! before the first one with a failed event is published, and that record is
//! the batch's one item failure, so Lambda delivers it and the records after
//! it again (those after it may have been published already: delivery is at
//! least once, and a redelivered record yields the same `eventId`s). Lambda's
//! own bounded retries, with bisection, then move a record that keeps failing
//! to the dead-letter queue (`template.yaml`).

use crate::change::Change;
use crate::domain::{events_of, DomainEvent};
use crate::publish::{entry_size, Publisher, MAX_CALL_BYTES, MAX_ENTRIES};
use std::ops::Range;
use std::time::Duration;

/// How often a failed entry is sent within one delivery of the batch.
#[derive(Debug, Clone, Copy)]
pub struct Retries {
    /// Calls per entry at most, the first included.
    pub attempts: u32,
    /// The pause before the first retry; each later one doubles it.
    pub first_pause: Duration,
}

impl Default for Retries {
    /// Four calls over about 0.7 seconds: EventBridge's throttling and
    /// internal failures are usually gone by then; what is not is left to
    /// Lambda's retries of the record.
    fn default() -> Self {
        Retries {
            attempts: 4,
            first_pause: Duration::from_millis(100),
        }
    }
}

/// What publishing a batch did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// Events published (an event sent again after a failure counts once).
    pub published: usize,
    /// Publisher calls (`PutEvents`), retries included.
    pub calls: usize,
    /// Entries sent again after failing.
    pub retried: usize,
    /// The `SequenceNumber` of the first record not wholly published: it and
    /// every record after it must be delivered again.
    pub first_unpublished: Option<String>,
    /// Why that record is not published.
    pub failure: Option<String>,
}

/// Publishes the events of `changes` (one batch, in stream order).
pub async fn publish_changes<P: Publisher>(
    changes: &[Change],
    publisher: &P,
    retries: Retries,
) -> Outcome {
    let mut outcome = Outcome::default();
    let mut events: Vec<(usize, DomainEvent)> = Vec::new();
    let mut unreadable = None;
    for (index, change) in changes.iter().enumerate() {
        match events_of(change) {
            Ok(of_change) => events.extend(of_change.into_iter().map(|e| (index, e))),
            Err(error) => {
                // Its events and the later records' wait for a fix.
                unreadable = Some((index, format!("unreadable images: {error}")));
                break;
            }
        }
    }
    for call in calls(&events) {
        if let Err((record, why)) =
            publish_call(&events[call], publisher, retries, &mut outcome).await
        {
            return outcome.unpublished_from(&changes[record], why);
        }
    }
    match unreadable {
        Some((record, why)) => outcome.unpublished_from(&changes[record], why),
        None => outcome,
    }
}

impl Outcome {
    fn unpublished_from(mut self, change: &Change, why: String) -> Outcome {
        tracing::warn!(
            sequence = %change.sequence,
            event_id = %change.event_id,
            "record left unpublished, to be delivered again: {why}"
        );
        self.first_unpublished = Some(change.sequence.clone());
        self.failure = Some(why);
        self
    }
}

/// The calls `events` go out in: consecutive, within a call's limits.
fn calls(events: &[(usize, DomainEvent)]) -> Vec<Range<usize>> {
    let mut calls = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, (_, event)) in events.iter().enumerate() {
        let size = entry_size(event);
        if i > start && (i - start == MAX_ENTRIES || bytes + size > MAX_CALL_BYTES) {
            calls.push(start..i);
            (start, bytes) = (i, 0);
        }
        bytes += size;
    }
    if start < events.len() {
        calls.push(start..events.len());
    }
    calls
}

/// Publishes one call's events, sending the failed ones again; on giving up,
/// the index of the first record with an unpublished event, and why.
async fn publish_call<P: Publisher>(
    events: &[(usize, DomainEvent)],
    publisher: &P,
    retries: Retries,
    outcome: &mut Outcome,
) -> Result<(), (usize, String)> {
    let mut todo: Vec<&(usize, DomainEvent)> = events.iter().collect();
    let mut pause = retries.first_pause;
    let mut last_error = String::new();
    for attempt in 0..retries.attempts.max(1) {
        if attempt > 0 {
            tokio::time::sleep(pause).await;
            pause *= 2;
            outcome.retried += todo.len();
        }
        let sending: Vec<DomainEvent> = todo.iter().map(|(_, e)| e.clone()).collect();
        let results = publisher.publish(&sending).await;
        outcome.calls += 1;
        let mut failed = Vec::new();
        for (entry, result) in todo.into_iter().zip(results.into_iter().map(Some).chain(
            // A publisher that answers for fewer entries failed the rest.
            std::iter::repeat(None),
        )) {
            match result {
                Some(Ok(())) => outcome.published += 1,
                Some(Err(error)) => {
                    last_error = error;
                    failed.push(entry);
                }
                None => {
                    last_error = "no answer for the entry".into();
                    failed.push(entry);
                }
            }
        }
        if failed.is_empty() {
            return Ok(());
        }
        todo = failed;
    }
    let first = todo.iter().map(|(record, _)| *record).min().unwrap_or(0);
    Err((first, last_error))
}

#[cfg(test)]
mod tests;
