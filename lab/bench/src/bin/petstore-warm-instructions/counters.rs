//! What the Runtime API does for the measured process: it hands out the same
//! event for every `next`, keeps the measured invocations' statuses, and has
//! callgrind zero its counters at the first measured event and dump them
//! after the last (`callgrind_control`, which reaches a process blocked in
//! its `next`).

use bytes::Bytes;
use petstore_lab_runtime_api::{Answer, Function, Report};
use std::process::Stdio;
use std::sync::{Mutex, OnceLock};
use std::time::Instant;
use tokio::process::Command;
use tokio::sync::Notify;

#[derive(Default)]
pub struct Seen {
    /// The statuses of the measured invocations' responses.
    pub statuses: Vec<u16>,
    pub error: Option<String>,
    /// Set when the dump is made.
    pub done: bool,
}

pub struct Counted {
    pub seen: Mutex<Seen>,
    pub changed: Notify,
    pub event: Bytes,
    /// Set once it is spawned; `callgrind_control` is first called at
    /// `zero_at`, well after.
    pub pid: OnceLock<u32>,
    /// The `next` at which the counters are zeroed, and the one at which
    /// they are dumped.
    pub zero_at: usize,
    pub dump_at: usize,
}

impl Counted {
    pub fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn fail(&self, error: String) {
        self.seen().error = Some(error);
        self.changed.notify_one();
    }

    /// `callgrind_control <flag> <pid>`.
    async fn callgrind_control(&self, flag: &str) -> bool {
        let pid = self.pid.get().copied().unwrap_or(0);
        let output = Command::new("callgrind_control")
            .arg(flag)
            .arg(pid.to_string())
            .stdin(Stdio::null())
            .output()
            .await;
        match output {
            Ok(output) if output.status.success() => true,
            Ok(output) => {
                let said = String::from_utf8_lossy(&output.stderr).into_owned();
                self.fail(format!("callgrind_control {flag}: {said}"));
                false
            }
            Err(e) => {
                self.fail(format!("callgrind_control {flag}: {e}"));
                false
            }
        }
    }
}

impl Function for Counted {
    async fn next(&self, served: usize, _at: Instant) -> Option<Bytes> {
        if served == self.zero_at && !self.callgrind_control("--zero").await {
            return None;
        }
        if served == self.dump_at {
            if self.callgrind_control("--dump").await {
                self.seen().done = true;
                self.changed.notify_one();
            }
            // No more work: the process waits here until it is killed.
            return None;
        }
        Some(self.event.clone())
    }

    fn response(&self, answer: Answer) {
        // The response to the invocation handed out by `next` number `served`.
        if answer.served >= self.zero_at {
            self.seen().statuses.push(answer.status);
        }
    }

    fn error(&self, report: Report) {
        self.fail(report.to_string());
    }
}
