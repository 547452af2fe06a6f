//! Logging: JSON lines in Lambda (CloudWatch reads them), text locally.

/// Installs the global subscriber once; `RUST_LOG` sets the level (default `info`).
pub fn init() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false);
    let in_lambda = std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some();
    let result = if in_lambda {
        // Lambda adds its own timestamp to every line.
        builder
            .json()
            .without_time()
            .with_current_span(true)
            .try_init()
    } else {
        builder.try_init()
    };
    // A second init (tests) keeps the first subscriber; nothing to do.
    drop(result);
}
