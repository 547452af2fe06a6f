//! The machine the figures were taken on, from `/proc` and the tools' versions.

use crate::results::Machine;
use std::process::Command;

pub fn describe() -> Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_field = |name: &str| {
        cpuinfo
            .lines()
            .find(|line| line.starts_with(name))
            .and_then(|line| line.split_once(':'))
            .map(|(_, value)| value.trim().to_string())
    };
    Machine {
        cpu: cpu_field("model name").unwrap_or_else(|| "unknown".into()),
        cpu_mhz: cpu_field("cpu MHz"),
        logical_cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
        memory_gib: memory_gib(),
        kernel: stdout_of("uname", &["-sr"]),
        rustc: stdout_of("rustc", &["--version"]),
        java: java_version(),
    }
}

/// To one decimal: finer says nothing about a machine.
fn memory_gib() -> f64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let kib: u64 = meminfo
        .lines()
        .find(|line| line.starts_with("MemTotal:"))
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|value| value.parse().ok())
        .unwrap_or(0);
    (kib as f64 / 1024.0 / 1024.0 * 10.0).round() / 10.0
}

fn stdout_of(program: &str, args: &[&str]) -> Option<String> {
    let output = Command::new(program).args(args).output().ok()?;
    Some(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// `java -version` prints to stderr.
fn java_version() -> Option<String> {
    let output = Command::new("java").arg("-version").output().ok()?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    stderr.lines().next().map(str::to_string)
}
