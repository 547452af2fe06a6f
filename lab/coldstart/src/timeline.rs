//! What the Runtime API saw of one process, and the figures it gives.

use std::time::{Duration, Instant};

/// What the Runtime API saw of one process, as it happened.
#[derive(Default)]
pub(crate) struct Timeline {
    pub(crate) ready: Option<Instant>,
    /// When each event was handed out (after the harness released it).
    pub(crate) next_at: Vec<Instant>,
    pub(crate) done_at: Vec<Instant>,
    /// The process's CPU time at each `next_at` and each `done_at`.
    pub(crate) cpu_at_next: Vec<Option<Duration>>,
    pub(crate) cpu_at_done: Vec<Option<Duration>>,
    pub(crate) statuses: Vec<u16>,
    pub(crate) error: Option<String>,
}

/// One process's figures, from its spawn.
pub struct Spawn {
    pub ready: Duration,
    pub first_response: Duration,
    pub first_invocation: Duration,
    /// `None` when the process died after its first invocation.
    pub warm_invocation: Option<Duration>,
    /// Every warm invocation, the first included.
    pub warm_invocations: Vec<Duration>,
    /// The invocation after a freeze that closed its connections, if asked.
    pub after_idle_close: Option<Duration>,
    /// CPU time the first invocation took, every thread's: what the quota
    /// stretches (at 128 MB each millisecond of it is ~14 of waiting).
    pub first_invocation_cpu: Option<Duration>,
    /// CPU time of each warm invocation.
    pub warm_invocations_cpu: Vec<Duration>,
    pub first_status: u16,
    /// Of every invocation, in order.
    pub statuses: Vec<u16>,
}

impl Spawn {
    pub(crate) fn from_timeline(
        spawned: Instant,
        timeline: &Timeline,
        warm: usize,
    ) -> Option<Spawn> {
        let invocation = |i: usize| Some(*timeline.done_at.get(i)? - *timeline.next_at.get(i)?);
        let cpu = |i: usize| {
            let (done, next) = (
                (*timeline.cpu_at_done.get(i)?)?,
                (*timeline.cpu_at_next.get(i)?)?,
            );
            done.checked_sub(next)
        };
        Some(Spawn {
            ready: timeline.ready? - spawned,
            first_response: *timeline.done_at.first()? - spawned,
            first_invocation: invocation(0)?,
            warm_invocation: invocation(1),
            warm_invocations: (1..=warm).filter_map(invocation).collect(),
            after_idle_close: invocation(warm + 1),
            first_invocation_cpu: cpu(0),
            warm_invocations_cpu: (1..=warm).filter_map(cpu).collect(),
            first_status: *timeline.statuses.first()?,
            statuses: timeline.statuses.clone(),
        })
    }
}
