//! Lambda's CPU share: a function of MEM megabytes runs on MEM/1769 of one
//! vCPU. Here a cgroup CPU quota of that share. The process starts in the
//! cgroup (joined between fork and exec, see [`CpuQuota::procs`]) with no
//! quota, since Lambda does not throttle init, and the quota is set at its
//! first `GET .../invocation/next`. Setting a quota is one write; moving a
//! running multi-threaded process into a cgroup at that moment took 9-16 ms
//! here, inside every figure it timed.
//!
//! cgroup v1's `cpu` controller (`cpu.cfs_period_us` / `cpu.cfs_quota_us`)
//! where it is mounted, else v2's `cpu.max`; both need root.

use std::path::{Path, PathBuf};

/// Lambda gives one full vCPU at this many megabytes.
pub const MB_PER_VCPU: f64 = 1769.0;

const V1_ROOT: &str = "/sys/fs/cgroup/cpu";
const V2_ROOT: &str = "/sys/fs/cgroup";

/// One cgroup with a CPU quota; removed when dropped (once empty).
pub struct CpuQuota {
    dir: PathBuf,
    /// The share of one CPU, e.g. 0.072 at 128 MB.
    pub share: f64,
    /// What [`CpuQuota::apply`] writes, and to which file: v1's quota, or v2's
    /// quota and period.
    limit: (&'static str, String),
    /// What [`CpuQuota::lift`] writes there.
    unlimited: String,
}

impl CpuQuota {
    /// A cgroup for `memory_mb`, with `period_us` scheduling periods.
    pub fn create(memory_mb: u32, period_us: u64) -> Result<CpuQuota, String> {
        let share = f64::from(memory_mb) / MB_PER_VCPU;
        let quota_us = ((period_us as f64) * share).round().max(1000.0) as u64;
        let name = format!("petstore-coldstart-{}-{memory_mb}", std::process::id());
        remove_stale_groups();
        let v1 = Path::new(V1_ROOT);
        if v1.join("cpu.cfs_quota_us").is_file() {
            let dir = v1.join(name);
            make_dir(&dir)?;
            let quota = CpuQuota {
                dir,
                share,
                limit: ("cpu.cfs_quota_us", quota_us.to_string()),
                unlimited: "-1".to_string(),
            };
            quota.write("cpu.cfs_period_us", &period_us.to_string())?;
            quota.lift()?;
            return Ok(quota);
        }
        let v2 = Path::new(V2_ROOT);
        let controllers =
            std::fs::read_to_string(v2.join("cgroup.controllers")).unwrap_or_default();
        if controllers.split_whitespace().any(|c| c == "cpu") {
            // Children get the cpu controller only when the parent hands it down.
            let _ = std::fs::write(v2.join("cgroup.subtree_control"), "+cpu");
            let dir = v2.join(name);
            make_dir(&dir)?;
            let quota = CpuQuota {
                dir,
                share,
                limit: ("cpu.max", format!("{quota_us} {period_us}")),
                unlimited: format!("max {period_us}"),
            };
            quota.lift()?;
            return Ok(quota);
        }
        Err(format!(
            "no writable cgroup CPU controller ({V1_ROOT}/cpu.cfs_quota_us or {V2_ROOT}/cpu.max)"
        ))
    }

    /// The cgroup's `cgroup.procs`: a process writing its id there (before
    /// it execs, so before it has threads) starts in the cgroup.
    pub fn procs(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    /// Throttles the cgroup's processes to the share (the invocation).
    pub fn apply(&self) -> Result<(), String> {
        self.write(self.limit.0, &self.limit.1)
    }

    /// Lets the cgroup's processes run at full CPU (init).
    pub fn lift(&self) -> Result<(), String> {
        self.write(self.limit.0, &self.unlimited)
    }

    fn write(&self, file: &str, value: &str) -> Result<(), String> {
        let path = self.dir.join(file);
        std::fs::write(&path, value).map_err(|e| format!("{}: {e}", path.display()))
    }
}

fn make_dir(dir: &Path) -> Result<(), String> {
    match std::fs::create_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(format!("{}: {e}", dir.display())),
    }
}

impl Drop for CpuQuota {
    fn drop(&mut self) {
        self.remove();
    }
}

impl CpuQuota {
    /// Removes the cgroup once its processes are gone. Called when the spawns
    /// are done, since tasks of the Runtime API may hold this quota until the
    /// run ends, and a process that exits drops nothing.
    pub fn remove(&self) {
        // A cgroup is removed with rmdir, and only once no process is in it:
        // a killed process leaves it a moment after it was reaped.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// Removes the empty cgroups of earlier runs that did not end cleanly
/// (`petstore-coldstart-PID-MB` whose PID is no longer running).
fn remove_stale_groups() {
    for root in [V1_ROOT, V2_ROOT] {
        let Ok(entries) = std::fs::read_dir(root) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(pid) = name
                .strip_prefix("petstore-coldstart-")
                .and_then(|rest| rest.split('-').next())
            else {
                continue;
            };
            if !Path::new("/proc").join(pid).exists() {
                // Fails, harmlessly, while a process is still in it.
                let _ = std::fs::remove_dir(entry.path());
            }
        }
    }
}
