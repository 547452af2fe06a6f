//! The log lines a deployed request writes besides the function's own, and
//! the size of those the model takes from the run, as CloudWatch Logs bills
//! them (bytes ingested, newline included): Lambda's platform lines, the
//! API's access log line (from the template's format), the metrics line.

use std::path::Path;

/// Lambda's JSON-format lines of one invocation (docs.aws.amazon.com/lambda/
/// latest/dg/monitoring-cloudwatchlogs-logformat.html, "JSON format for
/// system logs"): `platform.start` and `platform.report`, the latter with
/// its X-Ray fields under active tracing; sized with realistic values.
const PLATFORM_START: &str = r#"{"time":"2026-11-08T16:39:49.543Z","type":"platform.start","record":{"requestId":"e11d8a9e-31b1-4df5-8d6c-0f3b0b3ba8b0","version":"$LATEST"}}"#;
const PLATFORM_REPORT: &str = r#"{"time":"2026-11-08T16:39:49.567Z","type":"platform.report","record":{"requestId":"e11d8a9e-31b1-4df5-8d6c-0f3b0b3ba8b0","metrics":{"durationMs":4.87,"billedDurationMs":5,"memorySizeMB":256,"maxMemoryUsedMB":22},"status":"success"}}"#;
const PLATFORM_TRACING: &str = r#","tracing":{"spanId":"61c5c0e4b5a4d1a9","type":"X-Amzn-Trace-Id","value":"Root=1-654bb6e5-1e4bd6ad4a2c8b3e5f6a7b8c;Parent=61c5c0e4b5a4d1a9;Sampled=1"}"#;

/// Realistic values of the access log's `$context` variables.
const CONTEXT_VALUES: &[(&str, &str)] = &[
    ("$context.requestId", "Vx1bKjLQoAMEVTw="),
    ("$context.identity.sourceIp", "203.0.113.7"),
    ("$context.httpMethod", "POST"),
    ("$context.path", "/store/orders/1732550400123"),
    ("$context.routeKey", "$default"),
    ("$context.status", "201"),
    ("$context.responseLatency", "23"),
    ("$context.integrationErrorMessage", "-"),
];

/// Lambda's own lines of one invocation: `platform.start` and
/// `platform.report` (with its X-Ray fields when `traced`), which are INFO,
/// so a `SystemLogLevel` of WARN or higher drops them.
pub fn platform_bytes(system_level: &str, traced: bool) -> usize {
    if ["WARN", "ERROR", "FATAL"].contains(&system_level) {
        return 0;
    }
    let tracing = if traced { PLATFORM_TRACING.len() } else { 0 };
    PLATFORM_START.len() + PLATFORM_REPORT.len() + tracing + 2
}

/// The API's access log line as the template's `format` writes it, with
/// realistic values, newline included.
pub fn access_log_bytes(format: &str) -> Option<usize> {
    let mut line = format.to_string();
    for (variable, value) in CONTEXT_VALUES {
        line = line.replace(variable, value);
    }
    (!line.is_empty()).then_some(line.len() + 1)
}

/// The mean size of the functions' metrics (EMF) lines in the logs
/// `lab/coldstart` left (`cold-<function>.log`): every request writes one.
pub fn metrics_line_bytes(out: &Path) -> Option<f64> {
    let mut sizes = Vec::new();
    for function in ["pets", "store"] {
        let log =
            std::fs::read_to_string(out.join(format!("cold-{function}.log"))).unwrap_or_default();
        sizes.extend(
            log.lines()
                .filter(|l| l.contains("\"_aws\""))
                .map(|l| l.len() + 1),
        );
    }
    (!sizes.is_empty()).then(|| sizes.iter().sum::<usize>() as f64 / sizes.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lambda_s_own_lines_are_dropped_from_warn_up_and_grow_when_traced() {
        assert_eq!(platform_bytes("WARN", true), 0);
        let plain = platform_bytes("INFO", false);
        assert_eq!(plain, PLATFORM_START.len() + PLATFORM_REPORT.len() + 2);
        assert_eq!(platform_bytes("", true), plain + PLATFORM_TRACING.len());
    }
}
