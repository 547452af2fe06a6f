//! Where the limiter reads the time: Unix seconds, from a clock injected so
//! tests decide which window they are in.

use std::sync::atomic::{AtomicI64, Ordering};

/// Unix seconds.
pub type UnixSeconds = i64;

/// Where the limiter reads the time. Injected, so tests decide which window
/// they are in instead of racing the wall clock's minute boundary.
pub trait Clock: Send + Sync {
    fn now(&self) -> UnixSeconds;
}

/// The wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> UnixSeconds {
        chrono::Utc::now().timestamp()
    }
}

/// A clock that moves only when told to; for tests.
#[derive(Debug)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn new(now: UnixSeconds) -> ManualClock {
        ManualClock(AtomicI64::new(now))
    }

    pub fn set(&self, now: UnixSeconds) {
        self.0.store(now, Ordering::SeqCst);
    }

    pub fn advance(&self, seconds: i64) {
        self.0.fetch_add(seconds, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> UnixSeconds {
        self.0.load(Ordering::SeqCst)
    }
}
