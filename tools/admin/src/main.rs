//! `petstore-admin`: API keys, from a shell.
//!
//! ```text
//! petstore-admin keys create [--plan free|pro|business|enterprise] [--per-minute N --per-day N] [--name NAME]
//! petstore-admin keys list
//! petstore-admin keys revoke ID
//! petstore-admin keys unban ID
//! ```
//!
//! Every command prints JSON lines on stdout; `create` prints the key itself,
//! the only time it is ever shown (only its SHA-256 is stored). The tables
//! come from the same environment as the functions (`TABLE_NAME`,
//! `RATE_LIMIT_TABLE_NAME`); with `AWS_ENDPOINT_URL_DYNAMODB` set it talks to
//! that endpoint (DynamoDB Local) and creates the tables if missing, otherwise
//! it uses the AWS SDK's default credentials and region.
//!
//! Arguments are parsed by hand: four subcommands and four flags do not
//! justify `clap`'s compile time in a workspace that builds on two cores.

use petstore::config::Config;
use petstore::ratelimit::keys::{parse_key_id, NewApiKey};
use petstore::ratelimit::Plan;
use petstore::App;
use serde_json::json;
use std::process::ExitCode;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const USAGE: &str = "usage:
  petstore-admin keys create [--plan free|pro|business|enterprise] [--per-minute N --per-day N] [--name NAME]
  petstore-admin keys list
  petstore-admin keys revoke ID
  petstore-admin keys unban ID";

/// A command, parsed.
#[derive(Debug, PartialEq)]
enum Command {
    Create(Plan, Option<(u64, u64)>, Option<String>),
    List,
    Revoke(u64),
    Unban(u64),
}

fn parse(args: &[String]) -> Result<Command, String> {
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    match words.as_slice() {
        ["keys", "create", flags @ ..] => parse_create(flags),
        ["keys", "list"] => Ok(Command::List),
        ["keys", "revoke", id] => Ok(Command::Revoke(key_id(id)?)),
        ["keys", "unban", id] => Ok(Command::Unban(key_id(id)?)),
        _ => Err("unknown command".into()),
    }
}

fn key_id(raw: &str) -> Result<u64, String> {
    parse_key_id(raw).ok_or_else(|| format!("`{raw}` is not a key id"))
}

fn parse_create(flags: &[&str]) -> Result<Command, String> {
    let (mut plan, mut per_minute, mut per_day, mut name) = (Plan::Free, None, None, None);
    let mut rest = flags.iter();
    while let Some(flag) = rest.next() {
        let value = rest.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let count = || {
            value
                .parse::<u64>()
                .map_err(|_| format!("{flag} needs a whole number"))
        };
        match *flag {
            "--plan" => {
                plan = Plan::parse(value).ok_or_else(|| format!("unknown plan `{value}`"))?
            }
            "--per-minute" => per_minute = Some(count()?),
            "--per-day" => per_day = Some(count()?),
            "--name" => name = Some(value.to_string()),
            other => return Err(format!("unknown option `{other}`")),
        }
    }
    let limits = match (per_minute, per_day) {
        (None, None) => None,
        (Some(minute), Some(day)) => Some((minute, day)),
        _ => return Err("--per-minute and --per-day go together".into()),
    };
    // Checked here too, so a bad request fails before any AWS call.
    NewApiKey::new(plan, limits, None).map_err(|e| e.to_string())?;
    Ok(Command::Create(plan, limits, name))
}

async fn app() -> Result<App, BoxError> {
    match std::env::var("AWS_ENDPOINT_URL_DYNAMODB")
        .ok()
        .filter(|v| !v.is_empty())
    {
        Some(endpoint) => {
            let app = App::new(Config::from_env()?, petstore::local_client(&endpoint).await);
            app.create_tables().await?;
            Ok(app)
        }
        None => App::from_env().await,
    }
}

async fn run(command: Command) -> Result<(), BoxError> {
    let app = app().await?;
    let keys = app.limiter.keys();
    match command {
        Command::Create(plan, limits, name) => {
            let issued = keys
                .create(NewApiKey::new(plan, limits, name)?, chrono::Utc::now())
                .await?;
            println!("{}", serde_json::to_string(&issued)?);
        }
        Command::List => {
            for record in keys.list().await? {
                println!("{}", serde_json::to_string(&record)?);
            }
        }
        Command::Revoke(id) => match keys.revoke(id).await? {
            Some(record) => println!("{}", serde_json::to_string(&record)?),
            None => return Err(format!("no key has id {id}").into()),
        },
        Command::Unban(id) => {
            if !keys.exists(id).await? {
                return Err(format!("no key has id {id}").into());
            }
            let was_banned = app.limiter.unban(id).await?;
            println!("{}", json!({ "id": id, "wasBanned": was_banned }));
        }
    }
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let command = match parse(&args) {
        Ok(command) => command,
        Err(problem) => {
            eprintln!("petstore-admin: {problem}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(command).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("petstore-admin: {error}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn commands_parse() {
        assert_eq!(
            parse(&args("keys create --plan pro --name ci")),
            Ok(Command::Create(Plan::Pro, None, Some("ci".into())))
        );
        assert_eq!(
            parse(&args(
                "keys create --plan enterprise --per-minute 10 --per-day 100"
            )),
            Ok(Command::Create(Plan::Enterprise, Some((10, 100)), None))
        );
        assert_eq!(
            parse(&args("keys create")),
            Ok(Command::Create(Plan::Free, None, None))
        );
        assert_eq!(parse(&args("keys list")), Ok(Command::List));
        assert_eq!(parse(&args("keys revoke 42")), Ok(Command::Revoke(42)));
        assert_eq!(parse(&args("keys unban 42")), Ok(Command::Unban(42)));
    }

    #[test]
    fn mistakes_are_rejected_before_any_call() {
        assert!(parse(&args("keys create --plan gold")).is_err());
        assert!(parse(&args("keys create --plan enterprise")).is_err());
        assert!(parse(&args("keys create --plan pro --per-minute 5 --per-day 9")).is_err());
        assert!(parse(&args("keys create --per-minute 5")).is_err());
        assert!(parse(&args("keys revoke x")).is_err());
        assert!(parse(&args("keys")).is_err());
    }
}
