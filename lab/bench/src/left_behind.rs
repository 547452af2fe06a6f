//! What the steps `lab/bench/run.sh` runs before the runner leave in
//! `target/bench/` for it: the in-process overhead (criterion), the
//! partition model at the stated and the highest OrderRate
//! (`lab/partitions`), the full-CPU cold starts (`lab/coldstart`).

use crate::results::{
    ColdStart, Overhead, COLD_START_FILE, OVERHEAD_FILE, PARTITIONS_FILE, PARTITIONS_TOP_STEM,
};
use serde::de::DeserializeOwned;
use std::path::Path;

/// Each as its step wrote it; `None` (and a note saying which step to run)
/// where a step did not run or its file does not read.
pub struct LeftBehind {
    pub overhead: Option<Overhead>,
    pub partitions: Option<serde_json::Value>,
    pub partitions_at_top_rate: Option<serde_json::Value>,
    pub cold_start: Vec<ColdStart>,
}

impl LeftBehind {
    pub fn read(out: &Path, notes: &mut Vec<String>) -> LeftBehind {
        let top_rate = format!("{PARTITIONS_TOP_STEM}.json");
        LeftBehind {
            overhead: read_left(
                out,
                (OVERHEAD_FILE, "in-process overhead figures"),
                "cargo bench -p petstore-bench",
                notes,
            ),
            partitions: read_left(
                out,
                (PARTITIONS_FILE, "partition model"),
                "BENCH_ONLY=partitions make bench",
                notes,
            ),
            partitions_at_top_rate: read_left(
                out,
                (&top_rate, "partition model at the highest OrderRate"),
                "make bench",
                notes,
            ),
            cold_start: read_left(
                out,
                (COLD_START_FILE, "full-CPU cold start"),
                "BENCH_ONLY=coldstart make bench",
                notes,
            )
            .unwrap_or_default(),
        }
    }
}

/// `file` in `out`, as the step `step` wrote it; a note if it is missing.
fn read_left<T: DeserializeOwned>(
    out: &Path,
    (file, what): (&str, &str),
    step: &str,
    notes: &mut Vec<String>,
) -> Option<T> {
    let path = out.join(file);
    let Ok(bytes) = std::fs::read(&path) else {
        notes.push(format!("no {what}: run `{step}` (make bench does)"));
        return None;
    };
    match serde_json::from_slice(&bytes) {
        Ok(figures) => Some(figures),
        Err(e) => {
            let shown = path.display();
            notes.push(format!(
                "no {what}: {shown} does not read ({e}); rerun `{step}`"
            ));
            None
        }
    }
}
