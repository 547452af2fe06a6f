//! oha on each read operation of the mix, as a check of our own load driver
//! (oha drives one URL at a time, so it cannot run the mixes).

use crate::load::Fixture;
use crate::results::{OhaCheck, OhaFigures, OhaRun};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use tokio::process::Command;

/// The part of `oha --output-format json` we keep; lenient, as oha leaves out
/// what it could not measure.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OhaReport {
    #[serde(default)]
    summary: OhaSummary,
    #[serde(default)]
    latency_percentiles: OhaPercentiles,
    #[serde(default)]
    status_code_distribution: BTreeMap<String, u64>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct OhaSummary {
    requests_per_sec: Option<f64>,
    success_rate: Option<f64>,
}

/// In seconds.
#[derive(Default, Deserialize)]
struct OhaPercentiles {
    p50: Option<f64>,
    p99: Option<f64>,
}

impl From<OhaReport> for OhaFigures {
    fn from(report: OhaReport) -> OhaFigures {
        OhaFigures {
            requests_per_second: report.summary.requests_per_sec,
            p50_ms: report.latency_percentiles.p50.map(|s| s * 1e3),
            p99_ms: report.latency_percentiles.p99.map(|s| s * 1e3),
            success_rate: report.summary.success_rate,
            status_codes: report.status_code_distribution,
        }
    }
}

/// How oha is run: the load run's concurrency, for `seconds` per URL.
pub struct OhaSetup<'a> {
    pub oha: &'a Path,
    pub addr: SocketAddr,
    pub api_key: Option<&'a str>,
    pub concurrency: usize,
    pub seconds: u64,
}

pub async fn check(setup: &OhaSetup<'_>, fixture: &Fixture) -> OhaCheck {
    let ids: Vec<String> = fixture.pet_ids.iter().take(5).map(u64::to_string).collect();
    let mut runs = BTreeMap::new();
    for path in [
        "/pets?limit=20".to_string(),
        format!("/pets?ids={}", ids.join(",")),
        "/store/inventory?limit=20".to_string(),
    ] {
        eprintln!("bench: oha GET {path}");
        runs.insert(format!("GET {path}"), run(setup, &path).await);
    }
    OhaCheck {
        concurrency: setup.concurrency,
        seconds: setup.seconds,
        runs,
    }
}

async fn run(setup: &OhaSetup<'_>, path: &str) -> OhaRun {
    let mut command = Command::new(setup.oha);
    command
        .args(["--no-tui", "--output-format", "json"])
        .args(["-c", &setup.concurrency.to_string()])
        .args(["-z", &format!("{}s", setup.seconds)]);
    if let Some(key) = setup.api_key {
        command.args(["-H", &format!("X-API-Key: {key}")]);
    }
    command
        .arg(format!("http://{}{path}", setup.addr))
        .stdin(Stdio::null());
    match command.output().await {
        Ok(output) => match serde_json::from_slice::<OhaReport>(&output.stdout) {
            Ok(report) => OhaRun::Measured(report.into()),
            Err(e) => OhaRun::Failed {
                error: format!(
                    "no JSON report ({e}): {}",
                    String::from_utf8_lossy(&output.stderr).trim()
                ),
            },
        },
        Err(e) => OhaRun::Failed {
            error: e.to_string(),
        },
    }
}
