//! How the local deliveries queue (`make run`'s, the partition model's)
//! hands its messages over: in batches as the template's deliveries mapping
//! takes them from SQS at the stack's `OrderRate`.

use std::time::Duration;
use tokio::sync::mpsc::UnboundedReceiver;

/// How messages are handed over in batches: as the template's deliveries
/// mapping does (`BatchSize`, `MaximumBatchingWindowInSeconds`, from its
/// `Capacity` mapping), so that a batch's attempts share their reads as in
/// Lambda ([`Deliverer::deliver_batch`]) and the partition model
/// (`make bench`) sees the reads a stack of that capacity makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Batching {
    /// The most messages in one batch (`WEBHOOK_DELIVERY_BATCH_SIZE`).
    pub size: usize,
    /// How long a batch waits to fill once its first message is there
    /// (`WEBHOOK_DELIVERY_BATCH_WINDOW`, seconds); none: the messages
    /// already waiting.
    pub window: Duration,
}

/// A batching that SQS's event source mapping would refuse.
#[derive(Debug, thiserror::Error)]
#[error("webhook delivery batches: {0}")]
pub struct BatchingError(String);

impl Default for Batching {
    /// The template's at its default OrderRate (1,000): what Lambda takes
    /// without a window.
    fn default() -> Batching {
        Batching {
            size: 10,
            window: Duration::ZERO,
        }
    }
}

impl Batching {
    /// The most SQS's event source mapping takes from a standard queue.
    const MOST: usize = 10_000;
    /// The longest window it allows, seconds.
    const LONGEST_WINDOW: u64 = 300;

    pub fn from_env() -> Result<Batching, BatchingError> {
        Batching::from_lookup(|name| std::env::var(name).ok())
    }

    /// With SQS's rules: 1 to 10,000 messages, a window of 0 to 300
    /// seconds, and a window of at least a second above 10 messages.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Batching, BatchingError> {
        let default = Batching::default();
        let number = |name: &str, default: u64| match lookup(name) {
            None => Ok(default),
            Some(text) => text
                .trim()
                .parse::<u64>()
                .map_err(|_| BatchingError(format!("{name} `{text}` is not a whole number"))),
        };
        let size = number("WEBHOOK_DELIVERY_BATCH_SIZE", default.size as u64)?;
        let window = number("WEBHOOK_DELIVERY_BATCH_WINDOW", 0)?;
        if !(1..=Batching::MOST as u64).contains(&size) {
            let most = Batching::MOST;
            return Err(BatchingError(format!("{size} messages: 1 to {most}")));
        }
        if window > Batching::LONGEST_WINDOW {
            let longest = Batching::LONGEST_WINDOW;
            return Err(BatchingError(format!(
                "a {window} s window: 0 to {longest}"
            )));
        }
        if size > 10 && window == 0 {
            return Err(BatchingError(format!(
                "{size} messages need a window of at least 1 s, as SQS's mapping does"
            )));
        }
        Ok(Batching {
            size: size as usize,
            window: Duration::from_secs(window),
        })
    }

    /// The batch that begins with `first`: the messages already waiting,
    /// and those that arrive within the window, up to the size.
    pub(super) async fn take<T>(&self, first: T, receiver: &mut UnboundedReceiver<T>) -> Vec<T> {
        let mut batch = vec![first];
        let closes = tokio::time::Instant::now() + self.window;
        while batch.len() < self.size {
            match receiver.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) if self.window.is_zero() => break,
                Err(_) => match tokio::time::timeout_at(closes, receiver.recv()).await {
                    Ok(Some(next)) => batch.push(next),
                    Ok(None) | Err(_) => break,
                },
            }
        }
        batch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batching(vars: &[(&str, &str)]) -> Result<Batching, BatchingError> {
        Batching::from_lookup(|name| {
            let value = vars.iter().find(|(n, _)| *n == name);
            value.map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn batches_follow_the_deliveries_mappings_rules() {
        assert_eq!(batching(&[]).ok(), Some(Batching::default()));
        let large = [
            ("WEBHOOK_DELIVERY_BATCH_SIZE", "100"),
            ("WEBHOOK_DELIVERY_BATCH_WINDOW", "1"),
        ];
        let expected = Batching {
            size: 100,
            window: Duration::from_secs(1),
        };
        assert_eq!(batching(&large).ok(), Some(expected));
        // Refused as SQS's mapping refuses them: above 10 without a window,
        // none or over 10,000 messages, a window over 5 minutes, not numbers.
        for refused in [
            &[("WEBHOOK_DELIVERY_BATCH_SIZE", "11")][..],
            &[("WEBHOOK_DELIVERY_BATCH_SIZE", "0")],
            &[
                ("WEBHOOK_DELIVERY_BATCH_SIZE", "10001"),
                ("WEBHOOK_DELIVERY_BATCH_WINDOW", "1"),
            ],
            &[("WEBHOOK_DELIVERY_BATCH_WINDOW", "301")],
            &[("WEBHOOK_DELIVERY_BATCH_SIZE", "ten")],
        ] {
            assert!(batching(refused).is_err(), "{refused:?}");
        }
    }
}
