//! `petstore-smoke`: the pre-traffic check's requests, sent to a running API.
//!
//!     petstore-smoke --url https://api.example.com [--key KEY]
//!         over HTTP(S) to a deployed API (the pipeline runs this after a
//!         deploy); the keyed check only with a key (`--key` or
//!         PETSTORE_SMOKE_KEY), skipped without: a deployed stage's keys are
//!         not this tool's to make
//!     petstore-smoke --lambda-endpoint http://127.0.0.1:9000 [--qualifier N]
//!         through Lambda's Invoke API to the functions pets, store, docs and
//!         events (cargo lambda watch locally: what the hook sends a new
//!         version), with a short-lived key it makes in TABLE_NAME (default
//!         `petstore`) on the DynamoDB the SDK's environment names, as the hook does
//!
//! One line per check; exit status 1 when any failed.

use petstore_pretraffic::checks::{self, Function};
use petstore_pretraffic::invoke::Invoker;
use petstore_pretraffic::web;
use std::process::ExitCode;

const USAGE: &str = "usage: petstore-smoke --url URL [--key KEY] | --lambda-endpoint URL [--qualifier VERSION] [--only pets,store,docs,events]";

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let only: Vec<Function> = match flag("--only") {
        Some(list) => Function::ALL
            .into_iter()
            .filter(|f| list.split(',').any(|n| n == f.binary()))
            .collect(),
        None => Function::ALL.to_vec(),
    };
    let outcomes = if let Some(url) = flag("--url") {
        let key = flag("--key").or_else(|| std::env::var("PETSTORE_SMOKE_KEY").ok());
        match web::check(&url, key.as_deref()).await {
            Ok(outcomes) => outcomes,
            Err(why) => {
                eprintln!("petstore-smoke: {why}");
                return ExitCode::FAILURE;
            }
        }
    } else if let Some(endpoint) = flag("--lambda-endpoint") {
        let invoker = Invoker::local(&endpoint);
        let qualifier = flag("--qualifier");
        let key = local_key().await;
        let mut outcomes = Vec::new();
        for function in &only {
            let name = std::env::var(function.variable())
                .unwrap_or_else(|_| function.binary().to_string());
            let checked = invoker.check(*function, &name, qualifier.as_deref(), &key);
            outcomes.extend(checked.await);
        }
        outcomes
    } else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let outcomes: Vec<_> = outcomes
        .into_iter()
        .filter(|o| only.contains(&o.check.function))
        .collect();
    if checks::report(&outcomes) {
        println!("petstore-smoke: {} checks passed", outcomes.len());
        ExitCode::SUCCESS
    } else {
        println!("petstore-smoke: FAILED");
        ExitCode::FAILURE
    }
}

/// The keyed check's key, made as the hook makes it, in TABLE_NAME (the
/// local stacks' `petstore` unless set).
async fn local_key() -> Result<String, String> {
    let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(petstore_pretraffic::sdk_http_client())
        .load()
        .await;
    let table = std::env::var("TABLE_NAME").unwrap_or_else(|_| "petstore".to_string());
    petstore_pretraffic::key::mint(aws_sdk_dynamodb::Client::new(&config), &table).await
}
