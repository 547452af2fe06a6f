//! The API key the bench's requests carry: an enterprise key with limits the
//! bench cannot reach, made with `petstore-admin` in the bench's own DynamoDB
//! Local. `BENCH_API_KEY` overrides.

use crate::client::Error;
use serde::Deserialize;
use std::path::Path;
use std::process::Stdio;
use tokio::process::Command;

/// What `petstore-admin keys create` prints: the record, with the key.
#[derive(Deserialize)]
struct IssuedKey {
    key: String,
}

/// `None`, with a note saying why, when no key could be made: the requests
/// then go without one and the notes explain the refusals.
pub async fn obtain(admin: &Path, dynamodb_url: &str, notes: &mut Vec<String>) -> Option<String> {
    if let Ok(key) = std::env::var("BENCH_API_KEY") {
        return Some(key);
    }
    match issue(admin, dynamodb_url, &[], "staff", 1).await {
        Ok(keys) => keys.into_iter().next(),
        Err(e) => {
            notes.push(format!("no API key ({e}); requests go without X-API-Key"));
            None
        }
    }
}

/// `count` enterprise keys of `role` (limits the bench cannot reach) in the
/// tables `env` names (`NAME=value`), made with the `petstore-admin` binary at
/// `admin`, eight at a time.
pub async fn issue(
    admin: &Path,
    dynamodb_url: &str,
    env: &[String],
    role: &str,
    count: usize,
) -> Result<Vec<String>, Error> {
    let mut keys = Vec::with_capacity(count);
    while keys.len() < count {
        let mut batch = tokio::task::JoinSet::new();
        for _ in keys.len()..count.min(keys.len() + 8) {
            let mut command = Command::new(admin);
            command
                .args(["keys", "create", "--plan", "enterprise", "--role", role])
                .args(["--per-minute", "100000000", "--per-day", "1000000000"])
                .envs(env.iter().filter_map(|pair| pair.split_once('=')))
                .env("AWS_ENDPOINT_URL_DYNAMODB", dynamodb_url)
                .env("AWS_ACCESS_KEY_ID", "local")
                .env("AWS_SECRET_ACCESS_KEY", "local")
                .env("AWS_REGION", "us-east-1")
                .stdin(Stdio::null());
            batch.spawn(async move { command.output().await });
        }
        while let Some(output) = batch.join_next().await {
            let output = output??;
            let stdout = String::from_utf8_lossy(&output.stdout);
            let key = parse_key(&stdout).filter(|_| output.status.success());
            let stderr = String::from_utf8_lossy(&output.stderr);
            keys.push(key.ok_or_else(|| format!("petstore-admin keys create: {}", stderr.trim()))?);
        }
    }
    Ok(keys)
}

/// The key from `keys create`'s output: its JSON line's `key`.
fn parse_key(stdout: &str) -> Option<String> {
    stdout
        .lines()
        .find_map(|line| serde_json::from_str::<IssuedKey>(line.trim()).ok())
        .map(|issued| issued.key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_of_a_json_line() {
        let stdout = "{\"id\":1,\"plan\":\"enterprise\",\"key\":\"pk_abc\"}\n";
        assert_eq!(parse_key(stdout).as_deref(), Some("pk_abc"));
        assert_eq!(parse_key("created key: pk_0123456789abcdefghij\n"), None);
    }
}
