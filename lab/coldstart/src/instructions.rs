//! Init in instructions: each bootstrap spawned once under callgrind, with
//! the Lambda-like run's environment (DynamoDB over the TLS proxy, its
//! `SSL_CERT_FILE`), up to its first `GET .../invocation/next`, then ended.
//! A count that a loaded machine does not move, where init's wall time on
//! a shared machine moves by more than a few million instructions take
//! (the root certificates the delivery attempts' client loads, say).
//! It counts user-space instructions only: not the kernel's work (exec,
//! page faults), nor time spent waiting on DynamoDB.
//!
//! Knob: `COLDSTART_INSTRUCTIONS=0` skips it; without valgrind it is
//! skipped with a note.

use crate::figures::{InitInstructions, FLOOR};
use crate::lambda_env::{source_of, ColdSetup};
use crate::spawn::{spawn_to_ready, Hooks};
use crate::Context;
use petstore_bench::client::Error;
use std::path::Path;

/// Every present bootstrap once, at `memory_mb`'s environment; `None` (and a
/// note) when skipped.
pub async fn count_all(
    context: &Context<'_>,
    memory_mb: u32,
    notes: &mut Vec<String>,
) -> Option<Vec<InitInstructions>> {
    if std::env::var("COLDSTART_INSTRUCTIONS").is_ok_and(|v| v == "0") {
        return None;
    }
    let valgrind = std::process::Command::new("valgrind")
        .arg("--version")
        .output();
    if !valgrind.is_ok_and(|output| output.status.success()) {
        notes.push("init's instructions not counted: valgrind is not installed".into());
        return None;
    }
    let hooks = Hooks {
        env: vec![(
            "SSL_CERT_FILE".to_string(),
            context.bundle.display().to_string(),
        )],
        ..Hooks::default()
    };
    let mut counted = Vec::new();
    for bootstrap in &context.settings.bootstraps {
        if !bootstrap.path.is_file() {
            continue;
        }
        eprintln!("coldstart: init's instructions, {}", bootstrap.label);
        let out = context
            .settings
            .out
            .join(format!("coldstart-{}.callgrind", bootstrap.label));
        let endpoint = context.proxy.endpoint();
        let log_path = context
            .settings
            .out
            .join(format!("coldstart-{}.callgrind.log", bootstrap.label));
        let setup = ColdSetup {
            function: bootstrap.function,
            bootstrap: &bootstrap.path,
            dynamodb_endpoint: &endpoint,
            api_key: None,
            source_ip: source_of(0),
            memory_mb,
            log: &log_path,
        };
        match count_one(&setup, &hooks, &out).await {
            Ok(instructions) => counted.push(InitInstructions {
                label: bootstrap.label.clone(),
                instructions,
                vs_floor: None,
            }),
            Err(e) => notes.push(format!(
                "{}: init's instructions not counted: {e}",
                bootstrap.label
            )),
        }
    }
    let floor = counted
        .iter()
        .find(|c| c.label == FLOOR)
        .map(|c| c.instructions);
    for count in &mut counted {
        count.vs_floor = floor.map(|floor| count.instructions as f64 / floor as f64);
    }
    Some(counted)
}

async fn count_one(setup: &ColdSetup<'_>, hooks: &Hooks, out: &Path) -> Result<u64, Error> {
    let _ = std::fs::remove_file(out);
    let log = std::fs::File::create(setup.log)?;
    let wrapper = [
        "valgrind".to_string(),
        "--tool=callgrind".to_string(),
        format!("--callgrind-out-file={}", out.display()),
    ];
    spawn_to_ready(setup, hooks, &log, &wrapper).await?;
    let written = std::fs::read_to_string(out)
        .map_err(|e| format!("no callgrind output in {} ({e})", out.display()))?;
    summary_of(&written).ok_or_else(|| format!("no summary line in {}", out.display()).into())
}

/// Callgrind's `summary:` (its events' totals: `Ir` alone by default).
fn summary_of(callgrind_out: &str) -> Option<u64> {
    callgrind_out
        .lines()
        .find_map(|line| line.strip_prefix("summary:"))
        .and_then(|totals| totals.split_whitespace().next())
        .and_then(|ir| ir.parse().ok())
}

/// The counts, beside the Lambda-like table.
pub fn print_table(counted: &[InitInstructions]) {
    println!(
        "\nInit in instructions (callgrind, exec to the first GET .../invocation/next, once each)"
    );
    println!(
        "  {:<24} {:>14} {:>8}",
        "bootstrap", "instructions", "x floor"
    );
    for count in counted {
        let ratio = count
            .vs_floor
            .map_or("-".to_string(), |r| format!("{r:.2}"));
        println!(
            "  {:<24} {:>14} {:>8}",
            count.label, count.instructions, ratio
        );
    }
}

#[cfg(test)]
mod tests {
    use super::summary_of;

    #[test]
    fn the_count_is_callgrinds_summary_line() {
        let out =
            "version: 1\ncreator: callgrind-3.22.0\nevents: Ir\nsummary: 12419902\n\nfn=(1) main\n";
        assert_eq!(summary_of(out), Some(12_419_902));
        assert_eq!(summary_of("events: Ir\ntotals: 5\n"), None);
    }
}
