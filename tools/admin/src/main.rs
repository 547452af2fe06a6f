//! `petstore-admin`: API keys, from a shell.
//!
//! ```text
//! petstore-admin keys create [--plan free|pro|business|enterprise] [--role customer|staff]
//!                            [--per-minute N --per-day N] [--name NAME]
//! petstore-admin keys list
//! petstore-admin keys rotate ID
//! petstore-admin keys revoke ID
//! petstore-admin keys unban ID
//! ```
//!
//! Every command prints JSON lines on stdout, one per key, with its `id`,
//! `plan`, `role` (`customer` unless created `--role staff`), limits, `name`,
//! `createdAt`, `rotatedAt` and `revoked`. `create` and `rotate` also print
//! the key itself, the only time it is ever shown (only its SHA-256 is
//! stored). `rotate` gives the same key identity (id, plan, role, limits,
//! name, and so its counters, bans and orders) a new secret and retires the
//! old one: warm functions accept the old secret until their key cache entry
//! expires (`KEY_CACHE_SECONDS`). The tables
//! come from the same environment as the functions (`TABLE_NAME`,
//! `RATE_LIMIT_TABLE_NAME`); with `AWS_ENDPOINT_URL_DYNAMODB` set it talks to
//! that endpoint (DynamoDB Local) and creates the tables if missing, otherwise
//! it uses the AWS SDK's default credentials and region.
//!
//! Arguments are parsed by hand: five subcommands and five flags do not
//! justify `clap`'s compile time in a workspace that builds on two cores.

use petstore::config::Config;
use petstore::ratelimit::keys::{parse_key_id, NewApiKey};
use petstore::ratelimit::Plan;
use petstore::records::{Id, Role};
use petstore::App;
use serde_json::json;
use std::process::ExitCode;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const USAGE: &str = "usage:
  petstore-admin keys create [--plan free|pro|business|enterprise] [--role customer|staff]
                             [--per-minute N --per-day N] [--name NAME]
  petstore-admin keys list
  petstore-admin keys rotate ID
  petstore-admin keys revoke ID
  petstore-admin keys unban ID";

/// A command, parsed.
#[derive(Debug, PartialEq)]
enum Command {
    Create(NewApiKey),
    List,
    Rotate(Id),
    Revoke(Id),
    Unban(Id),
}

fn parse(args: &[String]) -> Result<Command, String> {
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    match words.as_slice() {
        ["keys", "create", flags @ ..] => parse_create(flags),
        ["keys", "list"] => Ok(Command::List),
        ["keys", "rotate", id] => Ok(Command::Rotate(key_id(id)?)),
        ["keys", "revoke", id] => Ok(Command::Revoke(key_id(id)?)),
        ["keys", "unban", id] => Ok(Command::Unban(key_id(id)?)),
        _ => Err("unknown command".into()),
    }
}

fn key_id(raw: &str) -> Result<Id, String> {
    parse_key_id(raw).ok_or_else(|| format!("`{raw}` is not a key id"))
}

fn parse_create(flags: &[&str]) -> Result<Command, String> {
    let (mut plan, mut role) = (Plan::Free, Role::default());
    let (mut per_minute, mut per_day, mut name) = (None, None, None);
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
            "--role" => role = Role::parse(value).map_err(|e| e.to_string())?,
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
    // Checked here, so a bad request fails before any AWS call.
    let new = NewApiKey::new(plan, limits, name).map_err(|e| e.to_string())?;
    Ok(Command::Create(new.with_role(role)))
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
        Command::Create(new) => {
            let issued = keys.create(new, chrono::Utc::now()).await?;
            println!("{}", serde_json::to_string(&issued)?);
        }
        Command::Rotate(id) => {
            let issued = keys.rotate(id, chrono::Utc::now()).await?;
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

/// An error and its causes, outermost first: the operator needs the detail.
fn with_causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
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
            eprintln!("petstore-admin: {}", with_causes(error.as_ref()));
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

    fn new_key(plan: Plan, limits: Option<(u64, u64)>, name: Option<&str>, role: Role) -> Command {
        let new = NewApiKey::new(plan, limits, name.map(str::to_string));
        Command::Create(new.expect("a valid key request").with_role(role))
    }

    fn id(raw: u64) -> Id {
        Id::new(raw).expect("a valid id")
    }

    #[test]
    fn commands_parse() {
        assert_eq!(
            parse(&args("keys create --plan pro --name ci")),
            Ok(new_key(Plan::Pro, None, Some("ci"), Role::Customer))
        );
        assert_eq!(
            parse(&args(
                "keys create --plan enterprise --per-minute 10 --per-day 100"
            )),
            Ok(new_key(
                Plan::Enterprise,
                Some((10, 100)),
                None,
                Role::Customer
            ))
        );
        assert_eq!(
            parse(&args("keys create")),
            Ok(new_key(Plan::Free, None, None, Role::Customer))
        );
        assert_eq!(parse(&args("keys list")), Ok(Command::List));
        assert_eq!(parse(&args("keys rotate 42")), Ok(Command::Rotate(id(42))));
        assert_eq!(parse(&args("keys revoke 42")), Ok(Command::Revoke(id(42))));
        assert_eq!(parse(&args("keys unban 42")), Ok(Command::Unban(id(42))));
    }

    #[test]
    fn a_role_is_chosen_at_creation() {
        assert_eq!(
            parse(&args("keys create --role staff --plan business --name ops")),
            Ok(new_key(Plan::Business, None, Some("ops"), Role::Staff))
        );
        assert_eq!(
            parse(&args("keys create --role customer")),
            Ok(new_key(Plan::Free, None, None, Role::Customer))
        );
    }

    #[test]
    fn mistakes_are_rejected_before_any_call() {
        assert!(parse(&args("keys create --plan gold")).is_err());
        assert!(parse(&args("keys create --plan enterprise")).is_err());
        assert!(parse(&args("keys create --plan pro --per-minute 5 --per-day 9")).is_err());
        assert!(parse(&args("keys create --per-minute 5")).is_err());
        assert!(parse(&args("keys create --role admin")).is_err());
        assert!(parse(&args("keys create --role")).is_err());
        assert!(parse(&args("keys revoke x")).is_err());
        assert!(parse(&args("keys rotate 0")).is_err());
        assert!(parse(&args("keys rotate")).is_err());
        assert!(parse(&args("keys rotate 1 2")).is_err());
        assert!(parse(&args("keys")).is_err());
    }
}
