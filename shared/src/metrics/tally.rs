//! The counts a request makes, kept per request in a task-local tally so
//! concurrent requests never see each other's.

use super::{Metric, COUNTERS};
use std::cell::Cell;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// What one request counted, by [`Metric`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts([u64; COUNTERS]);

impl Counts {
    pub fn get(&self, metric: Metric) -> u64 {
        self.0[metric.index()]
    }

    pub fn add(&mut self, metric: Metric, n: u64) {
        let slot = &mut self.0[metric.index()];
        *slot = slot.saturating_add(n);
    }

    /// The metrics counted at least once, with their counts.
    pub fn nonzero(&self) -> impl Iterator<Item = (Metric, u64)> + '_ {
        Metric::ALL
            .into_iter()
            .map(|metric| (metric, self.get(metric)))
            .filter(|(_, n)| *n > 0)
    }
}

/// The counts of the request being served.
#[derive(Default)]
struct Tally([Cell<u64>; COUNTERS]);

tokio::task_local! {
    static TALLY: Tally;
}

/// Counts made outside any request, until the next request's line takes them.
static UNCLAIMED: [AtomicU64; COUNTERS] = [const { AtomicU64::new(0) }; COUNTERS];

static COLD: AtomicBool = AtomicBool::new(true);

/// Adds `n` to `metric` for the request being served.
pub fn count(metric: Metric, n: u64) {
    let counted = TALLY.try_with(|tally| {
        let cell = &tally.0[metric.index()];
        cell.set(cell.get().saturating_add(n));
    });
    if counted.is_err() {
        UNCLAIMED[metric.index()].fetch_add(n, Ordering::Relaxed);
    }
}

/// An order placed: `OrdersPlaced` and its `quantity` as `UnitsSold`.
pub fn order_placed(quantity: u32) {
    count(Metric::OrdersPlaced, 1);
    count(Metric::UnitsSold, quantity.into());
}

/// Runs `request` with a tally of its own, and returns what it counted (and
/// whatever was counted outside any request since the last call).
pub async fn tallied<F: Future>(request: F) -> (F::Output, Counts) {
    TALLY
        .scope(Tally::default(), async move {
            let output = request.await;
            let mut counts = Counts::default();
            let _ = TALLY.try_with(|tally| {
                for metric in Metric::ALL {
                    counts.add(metric, tally.0[metric.index()].get());
                }
            });
            for metric in Metric::ALL {
                counts.add(metric, UNCLAIMED[metric.index()].swap(0, Ordering::Relaxed));
            }
            (output, counts)
        })
        .await
}

/// True for the first call in a process (the cold start's first request).
pub fn first_request() -> bool {
    COLD.swap(false, Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn counts_belong_to_the_request_that_made_them() {
        // Metrics no other unit test counts: counts made outside a request
        // (another test's) go to the next request's line.
        let one = tallied(async {
            count(Metric::IdempotentReplays, 2);
            tokio::task::yield_now().await;
            count(Metric::IdempotentReplays, 1);
        });
        let other = tallied(async {
            tokio::task::yield_now().await;
            count(Metric::OrdersPlaced, 1);
        });
        let (((), one), ((), other)) = tokio::join!(one, other);
        assert_eq!(one.get(Metric::IdempotentReplays), 3);
        assert_eq!(one.get(Metric::OrdersPlaced), 0);
        assert_eq!(other.get(Metric::IdempotentReplays), 0);
        assert_eq!(other.get(Metric::OrdersPlaced), 1);
    }
}
