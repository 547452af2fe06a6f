//! Percentiles over recorded durations.

use crate::results::Summary;
use std::time::Duration;

/// The value below which `q` (0..=1) of the sorted sample lies (nearest rank).
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub fn summarize(sample: &[Duration]) -> Summary {
    let mut ms: Vec<f64> = sample.iter().map(|d| d.as_secs_f64() * 1e3).collect();
    ms.sort_by(f64::total_cmp);
    let mean = if ms.is_empty() {
        f64::NAN
    } else {
        ms.iter().sum::<f64>() / ms.len() as f64
    };
    Summary {
        n: ms.len(),
        min_ms: ms.first().copied().unwrap_or(f64::NAN),
        p50_ms: percentile(&ms, 0.50),
        p90_ms: percentile(&ms, 0.90),
        p95_ms: percentile(&ms, 0.95),
        p99_ms: percentile(&ms, 0.99),
        max_ms: ms.last().copied().unwrap_or(f64::NAN),
        mean_ms: mean,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let sample: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        let s = summarize(&sample);
        assert_eq!(s.p50_ms, 50.0);
        assert_eq!(s.p99_ms, 99.0);
        assert_eq!(s.max_ms, 100.0);
    }
}
