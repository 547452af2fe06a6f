//! A bootstrap as Lambda starts it: the environment Lambda gives a
//! function's process on `provided.al2023`, and nothing of the machine's.
//! The tools that spawn the release bootstraps against the lab's Runtime
//! API (`lab/runtime-api`: `lab/coldstart`, `petstore-warm-instructions`)
//! start them with it, so that what they measure is what Lambda would run.

use std::net::SocketAddr;
use tokio::process::Command;

/// What differs between the processes Lambda starts.
pub struct LambdaProcess<'a> {
    /// The function's name (`pets`, ...): its log group's too.
    pub function: &'a str,
    pub memory_mb: u32,
    pub runtime_api: SocketAddr,
    /// Where the SDK sends DynamoDB calls (`AWS_ENDPOINT_URL_DYNAMODB`).
    pub dynamodb_endpoint: &'a str,
}

/// Clears `command`'s environment and sets Lambda's: the runtime's
/// variables, the function's, the region and credentials (local ones), and
/// the log format the template's `LoggingConfig` sets (JSON, INFO; no
/// `RUST_LOG`, which Lambda does not set and which would override it).
pub fn lambda_environment<'c>(
    command: &'c mut Command,
    process: &LambdaProcess<'_>,
) -> &'c mut Command {
    let function = process.function;
    command
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("TZ", ":UTC")
        .env("LANG", "en_US.UTF-8")
        .env("AWS_LAMBDA_RUNTIME_API", process.runtime_api.to_string())
        .env("AWS_LAMBDA_FUNCTION_NAME", function)
        .env(
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
            process.memory_mb.to_string(),
        )
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .env(
            "AWS_LAMBDA_LOG_GROUP_NAME",
            format!("/aws/lambda/{function}"),
        )
        .env("AWS_LAMBDA_LOG_STREAM_NAME", "2025/01/01/[$LATEST]bench")
        .env("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand")
        .env("AWS_EXECUTION_ENV", "AWS_Lambda_provided.al2023")
        .env("LAMBDA_TASK_ROOT", "/var/task")
        .env("_HANDLER", "bootstrap")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_DEFAULT_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "local")
        .env("AWS_SECRET_ACCESS_KEY", "local")
        .env("AWS_SESSION_TOKEN", "local")
        .env("AWS_ENDPOINT_URL_DYNAMODB", process.dynamodb_endpoint)
        .env("AWS_LAMBDA_LOG_FORMAT", "JSON")
        .env("AWS_LAMBDA_LOG_LEVEL", "INFO")
}

/// The pairs of the variable `name`, written `NAME=value,NAME2=value`: more
/// variables for the functions, to try a change without a rebuild.
pub fn env_pairs(name: &str) -> Vec<(String, String)> {
    std::env::var(name)
        .unwrap_or_default()
        .split(',')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.to_string()))
        .collect()
}
