//! `petstore-admin`: API keys, and the data table's upkeep, from a shell.
//!
//! ```text
//! petstore-admin keys create [--plan free|pro|business|enterprise] [--role customer|staff]
//!                            [--per-minute N --per-day N] [--max-open-orders N] [--name NAME]
//! petstore-admin keys list
//! petstore-admin keys rotate ID
//! petstore-admin keys revoke ID
//! petstore-admin keys unban ID
//! petstore-admin data backfill-inventory
//! ```
//!
//! Every command prints JSON lines on stdout, one per key, with its `id`,
//! `plan`, `role` (`customer` unless created `--role staff`), limits, `name`,
//! `createdAt`, `rotatedAt` and `revoked`. `create` and `rotate` also print
//! the key itself, the only time it is ever shown (only its SHA-256 is
//! stored). `rotate` gives the same key identity (id, plan, role, limits,
//! name, and so its counters, bans and orders) a new secret and retires the
//! old one: warm functions accept the old secret until their key cache entry
//! expires (`KEY_CACHE_SECONDS`). `data backfill-inventory` gives every pet
//! written before the inventory index existed its entry there, and prints
//! how many it gave (`{"backfilled": N}`). The tables
//! come from the same environment as the functions (`TABLE_NAME`,
//! `RATE_LIMIT_TABLE_NAME`); with `AWS_ENDPOINT_URL_DYNAMODB` set it talks to
//! that endpoint (DynamoDB Local) and creates the tables if missing, otherwise
//! it uses the AWS SDK's default credentials and region.
//!
//! Arguments are parsed by `clap` (derive); a mistake is an error with the
//! usage, exit status 2, before any AWS call.

use clap::error::ErrorKind;
use clap::{Args, CommandFactory, Parser, Subcommand};
use petstore::config::Config;
use petstore::ratelimit::keys::{parse_key_id, NewApiKey};
use petstore::ratelimit::Plan;
use petstore::records::{Id, Role};
use petstore::App;
use serde_json::json;
use std::process::ExitCode;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// API keys of the pet store (create, list, rotate, revoke, unban), and the
/// data table's upkeep.
#[derive(Parser)]
#[command(name = "petstore-admin")]
struct Cli {
    #[command(subcommand)]
    group: Group,
}

#[derive(Subcommand)]
enum Group {
    /// Manage API keys (JSON lines on stdout, one per key).
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Upkeep of the data table (a JSON line on stdout).
    #[command(subcommand)]
    Data(DataCommand),
}

#[derive(Subcommand)]
enum DataCommand {
    /// Give every pet without one its inventory index entry (GSI5PK): for a
    /// table whose pets were written before that index existed.
    BackfillInventory,
}

#[derive(Subcommand)]
enum KeysCommand {
    /// Create a key; prints it (the only time it is shown) with its record.
    Create(CreateArgs),
    /// Every key's record.
    List,
    /// A new secret for the same key identity; prints it.
    Rotate {
        #[arg(value_parser = key_id)]
        id: Id,
    },
    /// Revoke a key for good.
    Revoke {
        #[arg(value_parser = key_id)]
        id: Id,
    },
    /// Lift a key's ban.
    Unban {
        #[arg(value_parser = key_id)]
        id: Id,
    },
}

#[derive(Args)]
struct CreateArgs {
    /// The key's plan: free, pro, business, or enterprise (limits of its own).
    #[arg(long, default_value = "free", value_parser = plan)]
    plan: Plan,
    /// Who the key is: customer or staff.
    #[arg(long, default_value = "customer", value_parser = role)]
    role: Role,
    /// Requests per minute (enterprise only, with --per-day).
    #[arg(long, value_name = "N", requires = "per_day")]
    per_minute: Option<u64>,
    /// Requests per day (enterprise only, with --per-minute).
    #[arg(long, value_name = "N", requires = "per_minute")]
    per_day: Option<u64>,
    /// The most incomplete orders the key may hold at once (enterprise only;
    /// the other plans' are the plan's; default 1,000).
    #[arg(long, value_name = "N")]
    max_open_orders: Option<u32>,
    /// A name to tell the key by.
    #[arg(long)]
    name: Option<String>,
}

/// A command, parsed.
#[derive(Debug, PartialEq)]
enum Command {
    Create(NewApiKey),
    List,
    Rotate(Id),
    Revoke(Id),
    Unban(Id),
    BackfillInventory,
}

/// `args` without the program name. A key request that cannot be made
/// (limits on a plan that has its own) fails here too, as a usage error.
fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Command, clap::Error> {
    let program = std::iter::once("petstore-admin".to_string());
    let command = match Cli::try_parse_from(program.chain(args))?.group {
        Group::Keys(command) => command,
        Group::Data(DataCommand::BackfillInventory) => return Ok(Command::BackfillInventory),
    };
    Ok(match command {
        KeysCommand::Create(create) => {
            let limits = create.per_minute.zip(create.per_day);
            // Checked here, so a bad request fails before any AWS call.
            let new = NewApiKey::new(create.plan, limits, create.name)
                .and_then(|new| match create.max_open_orders {
                    Some(cap) => new.with_max_open_orders(cap),
                    None => Ok(new),
                })
                .map_err(|e| create_usage_error(e.to_string()))?;
            Command::Create(new.with_role(create.role))
        }
        KeysCommand::List => Command::List,
        KeysCommand::Rotate { id } => Command::Rotate(id),
        KeysCommand::Revoke { id } => Command::Revoke(id),
        KeysCommand::Unban { id } => Command::Unban(id),
    })
}

/// `problem` as clap reports a usage error, with `keys create`'s usage.
fn create_usage_error(problem: String) -> clap::Error {
    let mut cli = Cli::command();
    cli.build();
    match cli
        .find_subcommand_mut("keys")
        .and_then(|keys| keys.find_subcommand_mut("create"))
    {
        Some(create) => create.error(ErrorKind::ArgumentConflict, problem),
        None => cli.error(ErrorKind::ArgumentConflict, problem),
    }
}

fn key_id(raw: &str) -> Result<Id, String> {
    parse_key_id(raw).ok_or_else(|| format!("`{raw}` is not a key id"))
}

fn plan(raw: &str) -> Result<Plan, String> {
    Plan::parse(raw)
        .ok_or_else(|| format!("unknown plan `{raw}` (free, pro, business, enterprise)"))
}

fn role(raw: &str) -> Result<Role, String> {
    Role::parse(raw).map_err(|e| e.to_string())
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
        Command::BackfillInventory => {
            let backfilled = app.db.backfill_inventory_index().await?;
            println!("{}", json!({ "backfilled": backfilled }));
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
    let command = match parse(std::env::args().skip(1)) {
        Ok(command) => command,
        // The error and the usage (exit status 2), or the help asked for (0).
        Err(e) => e.exit(),
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

    /// The command `line` parses to, or the error as the operator sees it.
    fn parse_line(line: &str) -> Result<Command, String> {
        parse(line.split_whitespace().map(str::to_string)).map_err(|e| e.render().to_string())
    }

    fn new_key(plan: Plan, limits: Option<(u64, u64)>, name: Option<&str>, role: Role) -> Command {
        let new = NewApiKey::new(plan, limits, name.map(str::to_string));
        Command::Create(new.expect("a valid key request").with_role(role))
    }

    fn id(raw: u64) -> Id {
        Id::new(raw).expect("a valid id")
    }

    /// The error `line` gives, which must be a usage error (exit status 2).
    fn refused(line: &str) -> String {
        match parse(line.split_whitespace().map(str::to_string)) {
            Ok(command) => panic!("`{line}` parsed to {command:?}"),
            Err(e) => {
                assert_eq!(e.exit_code(), 2, "`{line}`: {e}");
                e.render().to_string()
            }
        }
    }

    #[test]
    fn commands_parse() {
        assert_eq!(
            parse_line("keys create --plan pro --name ci"),
            Ok(new_key(Plan::Pro, None, Some("ci"), Role::Customer))
        );
        assert_eq!(
            parse_line("keys create --plan enterprise --per-minute 10 --per-day 100"),
            Ok(new_key(
                Plan::Enterprise,
                Some((10, 100)),
                None,
                Role::Customer
            ))
        );
        assert_eq!(
            parse_line("keys create"),
            Ok(new_key(Plan::Free, None, None, Role::Customer))
        );
        let capped = NewApiKey::new(Plan::Enterprise, Some((10, 100)), None)
            .and_then(|new| new.with_max_open_orders(5_000))
            .map(|new| Command::Create(new.with_role(Role::Customer)));
        assert_eq!(
            parse_line(
                "keys create --plan enterprise --per-minute 10 --per-day 100 --max-open-orders 5000"
            ),
            capped.map_err(|e| e.to_string())
        );
        assert!(refused("keys create --plan pro --max-open-orders 5")
            .contains("only enterprise keys carry their own limits"));
        assert_eq!(parse_line("keys list"), Ok(Command::List));
        assert_eq!(parse_line("keys rotate 42"), Ok(Command::Rotate(id(42))));
        assert_eq!(parse_line("keys revoke 42"), Ok(Command::Revoke(id(42))));
        assert_eq!(parse_line("keys unban 42"), Ok(Command::Unban(id(42))));
        assert_eq!(
            parse_line("data backfill-inventory"),
            Ok(Command::BackfillInventory)
        );
    }

    #[test]
    fn a_role_is_chosen_at_creation() {
        assert_eq!(
            parse_line("keys create --role staff --plan business --name ops"),
            Ok(new_key(Plan::Business, None, Some("ops"), Role::Staff))
        );
        assert_eq!(
            parse_line("keys create --role customer"),
            Ok(new_key(Plan::Free, None, None, Role::Customer))
        );
    }

    #[test]
    fn mistakes_are_refused_before_any_call_saying_what_is_wrong() {
        let says = |line: &str, what: &str| {
            let error = refused(line);
            assert!(error.contains(what), "`{line}` says:\n{error}");
        };
        says("keys create --plan gold", "unknown plan `gold`");
        says(
            "keys create --plan enterprise",
            "an enterprise key needs --per-minute and --per-day",
        );
        says(
            "keys create --plan pro --per-minute 5 --per-day 9",
            "only enterprise keys carry their own limits",
        );
        says("keys create --per-minute 5", "--per-day <N>");
        says("keys create --per-day 5", "--per-minute <N>");
        says("keys create --per-minute five --per-day 9", "invalid digit");
        says("keys create --role admin", "admin");
        says(
            "keys create --role",
            "a value is required for '--role <ROLE>'",
        );
        says("keys create --colour red", "unexpected argument '--colour'");
        says("keys revoke x", "`x` is not a key id");
        says("keys rotate 0", "`0` is not a key id");
        says("keys rotate", "<ID>");
        says("keys rotate 1 2", "unexpected argument '2'");
        says("keys", "Usage: petstore-admin keys <COMMAND>");
        says("pets list", "unrecognized subcommand 'pets'");
        // A key request that cannot be made shows `create`'s usage.
        let error = refused("keys create --plan free --per-minute 1 --per-day 2");
        assert!(
            error.contains("Usage: petstore-admin keys create"),
            "{error}"
        );
    }
}
