//! A process's CPU time, read from `/proc` without touching the process: what
//! a CPU quota stretches, and steadier than wall time on a shared machine.

use std::time::Duration;

/// The CPU time process `pid` has run so far, summed over its threads from
/// the scheduler's nanosecond accounting (`/proc/PID/task/*/schedstat`, whose
/// first field is time on a CPU). A thread that exited is no longer counted:
/// the functions' runtime keeps its threads for the process's life.
pub fn cpu_time(pid: u32) -> Option<Duration> {
    let mut nanos = 0u64;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let schedstat = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
        nanos += schedstat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(Duration::from_nanos(nanos))
}
