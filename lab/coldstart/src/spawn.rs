//! Cold start: spawns a function's `bootstrap` against the lab's Lambda
//! Runtime API ([`petstore_lab_runtime_api`]) and times it, from spawn to its
//! first `GET .../invocation/next` (ready) and to its first response (first
//! invocation done). Each process then answers more invocations, whose
//! durations are a warm invocation's as Lambda would bill it (minus Lambda's
//! own rounding): [`Process`] is what the Runtime API does at each call.
//!
//! The full-CPU run ([`crate::full_cpu`]) spawns with no [`Hooks`]; the
//! Lambda-like one starts the process in a CPU-quota cgroup, throttles it
//! from the first `next` on, and adds an invocation after the process was
//! frozen while its DynamoDB connections were closed.

use crate::cpu_time::cpu_time;
use crate::lambda_env::{self, ColdSetup};
use crate::quota::CpuQuota;
pub use crate::timeline::Spawn;
use crate::timeline::Timeline;
use bytes::Bytes;
use petstore_bench::client::Error;
use petstore_lab_runtime_api::{Answer, Function, Report, RuntimeApi};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::process::{Child, Command};
use tokio::sync::{watch, Notify};

/// What Lambda does to a process beyond serving it events.
#[derive(Default, Clone)]
pub struct Hooks {
    /// Variables added to Lambda's environment (e.g. `SSL_CERT_FILE`).
    pub env: Vec<(String, String)>,
    /// The cgroup the process starts in, unthrottled; its quota applies from
    /// the first `GET .../invocation/next` on, before the event is served:
    /// where Lambda's CPU throttling starts.
    pub quota: Option<Arc<CpuQuota>>,
    /// When set, one more invocation follows the warm ones: the process is
    /// frozen (as Lambda freezes it between invocations), this closes its
    /// idle DynamoDB connections, and it is thawed for the invocation.
    pub idle_close: Option<Arc<dyn CloseIdle>>,
    /// Warm invocations after the cold one (at least 1).
    pub warm_invocations: usize,
}

/// Closes the function's idle connections on command (the TLS proxy).
pub trait CloseIdle: Send + Sync {
    fn close_idle(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
}

/// One spawned process as the Runtime API sees it: the events it is handed,
/// when, and what it answered.
struct Process {
    /// Held only for pushes and takes that cannot panic, so never poisoned:
    /// hence the `expect`s on locking it.
    timeline: Mutex<Timeline>,
    changed: Notify,
    event: Bytes,
    /// Events handed out so far may not exceed this.
    released: watch::Sender<usize>,
    /// Events in all; a `next` beyond waits until the process is killed.
    invocations: usize,
    pid: OnceLock<u32>,
    quota: Option<Arc<CpuQuota>>,
}

/// Spawns the bootstrap against a Runtime API of its own and times it through
/// its invocations: the cold one, a warm one, and with
/// [`Hooks::idle_close`] one after its connections were closed while frozen.
pub async fn spawn_once(
    setup: &ColdSetup<'_>,
    hooks: &Hooks,
    log: &std::fs::File,
) -> Result<Spawn, Error> {
    let warm = hooks.warm_invocations.max(1);
    let invocations = 1 + warm + usize::from(hooks.idle_close.is_some());
    let api = Arc::new(Process {
        timeline: Mutex::default(),
        changed: Notify::new(),
        event: Bytes::from(serde_json::to_vec(&lambda_env::event(setup))?),
        released: watch::Sender::new(1 + warm),
        invocations,
        pid: OnceLock::new(),
        quota: hooks.quota.clone(),
    });
    let function_arn = format!(
        "arn:aws:lambda:us-east-1:123456789012:function:{}",
        setup.function.name
    );
    let server = RuntimeApi::start(function_arn, api.clone()).await?;
    let runtime_api = server.addr();
    // The bootstrap read once, so that it is in the page cache as after any
    // earlier spawn: on machines that page out idle memory (DAMON's pageout,
    // which these VMs run) its pages would otherwise come from disk, by
    // chance, and init would time the disk.
    let _ = tokio::fs::read(setup.bootstrap).await;
    let mut command = lambda_env::lambda_command(setup, runtime_api, log, &[])?;
    command.envs(hooks.env.iter().map(|(k, v)| (k, v)));
    if let Some(quota) = &hooks.quota {
        quota.lift()?;
        start_in(&mut command, quota.procs());
    }
    let spawned = Instant::now();
    let mut child = command.spawn()?;
    let _ = api.pid.set(child.id().unwrap_or(0));
    let finished = tokio::time::timeout(
        Duration::from_secs(30),
        run_invocations(&api, hooks, warm, &mut child),
    )
    .await;
    let _ = child.start_kill();
    let _ = child.wait().await;
    drop(server);
    let timeline = std::mem::take(&mut *api.timeline.lock().expect("timeline lock"));
    if finished.is_err() {
        return Err("no response within 30 s".into());
    }
    match &timeline.error {
        // Answered at least once: the figures up to the error stand.
        // Not one answer: what the function said last says why (its init
        // error, when it exited), where the harness's own line would not.
        Some(error) if timeline.done_at.is_empty() => {
            return Err(match last_line(setup.log) {
                Some(said) => format!("{error}; its log's last line: {said}"),
                None => error.clone(),
            }
            .into())
        }
        _ => {}
    }
    Spawn::from_timeline(spawned, &timeline, warm)
        .ok_or_else(|| "a response before any GET .../invocation/next".into())
}

/// Spawns the bootstrap run by `wrapper` (callgrind) against a Runtime API
/// that never hands out an event, lets it run up to its first `GET
/// .../invocation/next` (its init done), then ends it with SIGTERM, so that
/// the wrapper writes what it measured, and waits for it to exit.
pub async fn spawn_to_ready(
    setup: &ColdSetup<'_>,
    hooks: &Hooks,
    log: &std::fs::File,
    wrapper: &[String],
) -> Result<(), Error> {
    let api = Arc::new(Process {
        timeline: Mutex::default(),
        changed: Notify::new(),
        event: Bytes::new(),
        released: watch::Sender::new(0),
        // Every `next` waits until the process ends.
        invocations: 0,
        pid: OnceLock::new(),
        quota: None,
    });
    let server = RuntimeApi::start(String::new(), api.clone()).await?;
    let runtime_api = server.addr();
    let mut command = lambda_env::lambda_command(setup, runtime_api, log, wrapper)?;
    command.envs(hooks.env.iter().map(|(k, v)| (k, v)));
    let mut child = command.spawn()?;
    let pid = child.id().unwrap_or(0).to_string();
    let ready = tokio::time::timeout(Duration::from_secs(120), async {
        loop {
            let notified = api.changed.notified();
            if api.timeline.lock().expect("timeline lock").ready.is_some() {
                return Ok(());
            }
            tokio::select! {
                _ = notified => {}
                status = child.wait() => return Err(format!("exited before it was ready: {status:?}")),
            }
        }
    })
    .await;
    let _ = Command::new("kill").args(["-TERM", &pid]).status().await;
    if tokio::time::timeout(Duration::from_secs(60), child.wait())
        .await
        .is_err()
    {
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
    drop(server);
    match ready {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(e.into()),
        Err(_) => Err("not ready within 120 s".into()),
    }
}

/// The last line of the log at `path`, if it has one.
fn last_line(path: &std::path::Path) -> Option<String> {
    let log = std::fs::read_to_string(path).ok()?;
    let line = log.lines().rev().find(|line| !line.trim().is_empty())?;
    Some(line.chars().take(300).collect())
}

/// Makes the process `command` spawns start in the cgroup whose
/// `cgroup.procs` is `procs`: it writes its own id there between fork and
/// exec, while it is one thread, so it is never moved once running.
fn start_in(command: &mut Command, procs: std::path::PathBuf) {
    // SAFETY: the closure runs in the forked child before exec; it only
    // writes a file (glibc's malloc is usable after fork) and returns an
    // error that fails the spawn.
    unsafe {
        command.pre_exec(move || std::fs::write(&procs, std::process::id().to_string()));
    }
}

/// The cold and warm invocations, then (with [`Hooks::idle_close`]) freeze,
/// close, thaw and the last one.
async fn run_invocations(api: &Process, hooks: &Hooks, warm: usize, child: &mut Child) {
    if !invocations_done(api, child, 1 + warm).await {
        return;
    }
    let Some(closer) = &hooks.idle_close else {
        return;
    };
    let pid = api.pid.get().copied().unwrap_or(0).to_string();
    let signal = |name: &'static str| {
        let pid = pid.clone();
        async move {
            let _ = Command::new("kill").args([name, &pid]).status().await;
        }
    };
    signal("-STOP").await;
    closer.close_idle().await;
    // Lets the closes reach the frozen process's sockets, as idle time would.
    tokio::time::sleep(Duration::from_millis(50)).await;
    signal("-CONT").await;
    api.released.send_replace(api.invocations);
    invocations_done(api, child, api.invocations).await;
}

/// Until `count` invocations were answered (true), or the Runtime API saw an
/// error, or the process exited.
async fn invocations_done(api: &Process, child: &mut Child, count: usize) -> bool {
    loop {
        let notified = api.changed.notified();
        {
            let timeline = api.timeline.lock().expect("timeline lock");
            if timeline.error.is_some() {
                return false;
            }
            if timeline.done_at.len() >= count {
                return true;
            }
        }
        tokio::select! {
            _ = notified => {}
            status = child.wait() => {
                let mut timeline = api.timeline.lock().expect("timeline lock");
                timeline.error.get_or_insert(format!("bootstrap exited: {status:?}"));
                return false;
            }
        }
    }
}

impl Function for Process {
    /// The event, while there are invocations left; the first `next` is
    /// the process ready, and where its CPU quota starts.
    async fn next(&self, served: usize, at: Instant) -> Option<Bytes> {
        let first = served == 1;
        if first {
            self.timeline.lock().expect("timeline lock").ready = Some(at);
            // Ready: what [`spawn_to_ready`] waits for.
            self.changed.notify_one();
        }
        if let (true, Some(quota)) = (first, &self.quota) {
            if let Err(e) = quota.apply() {
                self.timeline.lock().expect("timeline lock").error = Some(e);
                self.changed.notify_one();
                return None;
            }
        }
        // No more work: the process waits here until it is killed, as in Lambda.
        if served > self.invocations {
            return None;
        }
        let _ = self.released.subscribe().wait_for(|n| *n >= served).await;
        let cpu = self.pid.get().and_then(|&pid| cpu_time(pid));
        let mut timeline = self.timeline.lock().expect("timeline lock");
        timeline.next_at.push(Instant::now());
        timeline.cpu_at_next.push(cpu);
        Some(self.event.clone())
    }

    fn response(&self, answer: Answer) {
        {
            let mut timeline = self.timeline.lock().expect("timeline lock");
            timeline.done_at.push(answer.at);
            timeline
                .cpu_at_done
                .push(self.pid.get().and_then(|&pid| cpu_time(pid)));
            timeline.statuses.push(answer.status);
        }
        self.changed.notify_one();
    }

    fn error(&self, report: Report) {
        self.timeline.lock().expect("timeline lock").error = Some(report.to_string());
        self.changed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_spawn_says_the_last_line_its_function_logged() {
        let path = std::env::temp_dir().join(format!("coldstart-log-{}", std::process::id()));
        std::fs::write(&path, "{\"level\":\"INFO\"}\nError: NoKey\n\n").unwrap();
        let said = last_line(&path);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(said.as_deref(), Some("Error: NoKey"));
        assert_eq!(last_line(&path), None);
    }
}
