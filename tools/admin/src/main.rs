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
//! petstore-admin data check [--table NAME] [--segments N]
//! petstore-admin data export [--table NAME] [--segments N] [--output FILE]
//! petstore-admin data import [--table NAME] [--input FILE]
//! petstore-admin data restore --to NEW_TABLE (--backup ARN | --from TABLE [--at RFC3339])
//! petstore-admin data migrate plan|status [--require-done]
//! petstore-admin data migrate run [--max-writes-per-second N] [--segments N] [--pages N]
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
//! how many it gave (`{"backfilled": N}`). `data check` reads the whole
//! table (or `--table`'s, e.g. a restored one) and prints each broken
//! invariant as a JSON line (`PK`, `SK`, `invariant`, `problem`), then a
//! summary line (`items`, `broken`, `seconds`, `itemsPerSecond`); its exit
//! status is 0 only when nothing is broken. `data export` writes the
//! stage's pets, categories, name claims and orders as JSON lines (never its
//! API keys or idempotency records), and `data import` puts them into
//! another stage's empty table under its shard counts; both print a summary
//! (`items`, `leftOut`), export's on stderr (docs/data.md). `data restore`
//! restores a backup or a point in time into a new table and gives it the
//! stream, TTL, point-in-time recovery, deletion protection and tags a
//! restore leaves out, printing the new table's ARNs and each step's time
//! (docs/restore.md). The tables
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
use petstore_admin::check::{check_table, Report};
use petstore_admin::migrate::cli::{self as migrate, MigrateCommand};
use petstore_admin::scan::ScanOptions;
use petstore_admin::{copy, restore};
use serde_json::json;
use std::path::PathBuf;
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
    /// Read the whole table and report every item that breaks an invariant
    /// the service keeps (exit status 1 if any does).
    Check(CheckArgs),
    /// Write the table's pets, categories, name claims and orders as JSON
    /// lines (not its API keys or idempotency records).
    Export(ExportArgs),
    /// Put exported JSON lines into this stage's table, which must hold no data.
    Import(ImportArgs),
    /// Restore a backup or a point in time into a new table, with the
    /// stream, TTL, point-in-time recovery, deletion protection and tags.
    Restore(RestoreArgs),
    /// Migration 0001 (the last release's layout to this one's): its plan,
    /// its backfills, their status (docs/upgrade.md).
    #[command(subcommand)]
    Migrate(MigrateCommand),
}

#[derive(Args)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["backup", "from"])))]
struct RestoreArgs {
    /// The new table's name.
    #[arg(long)]
    to: String,
    /// An on-demand backup's ARN to restore.
    #[arg(long)]
    backup: Option<String>,
    /// The table whose point in time to restore.
    #[arg(long)]
    from: Option<String>,
    /// The point in time (RFC 3339); the latest restorable time if absent.
    #[arg(long, requires = "from", value_parser = instant)]
    at: Option<chrono::DateTime<chrono::Utc>>,
}

#[derive(Args)]
struct ExportArgs {
    /// The table to read, if not the stage's own (TABLE_NAME).
    #[arg(long)]
    table: Option<String>,
    /// Parallel scan segments (pages in flight).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1000))]
    segments: u32,
    /// Where to write the lines (default: stdout).
    #[arg(long)]
    output: Option<PathBuf>,
}

#[derive(Args)]
struct ImportArgs {
    /// The table to write, if not the stage's own (TABLE_NAME).
    #[arg(long)]
    table: Option<String>,
    /// Where to read the lines (default: stdin).
    #[arg(long)]
    input: Option<PathBuf>,
}

#[derive(Args)]
struct CheckArgs {
    /// The table to read, if not the stage's own (TABLE_NAME): a restored one.
    #[arg(long)]
    table: Option<String>,
    /// Parallel scan segments (pages in flight).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1000))]
    segments: u32,
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
    Check {
        table: Option<String>,
        segments: u32,
    },
    Export {
        table: Option<String>,
        segments: u32,
        output: Option<PathBuf>,
    },
    Import {
        table: Option<String>,
        input: Option<PathBuf>,
    },
    Restore {
        source: restore::Source,
        to: String,
    },
    Migrate(MigrateCommand),
}

/// `args` without the program name. A key request that cannot be made
/// (limits on a plan that has its own) fails here too, as a usage error.
fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Command, clap::Error> {
    let program = std::iter::once("petstore-admin".to_string());
    let command = match Cli::try_parse_from(program.chain(args))?.group {
        Group::Keys(command) => command,
        Group::Data(DataCommand::BackfillInventory) => return Ok(Command::BackfillInventory),
        Group::Data(DataCommand::Check(check)) => {
            return Ok(Command::Check {
                table: check.table,
                segments: check.segments,
            })
        }
        Group::Data(DataCommand::Export(e)) => {
            return Ok(Command::Export {
                table: e.table,
                segments: e.segments,
                output: e.output,
            })
        }
        Group::Data(DataCommand::Restore(r)) => {
            let source = match (r.backup, r.from) {
                (Some(arn), _) => restore::Source::Backup { arn },
                (None, table) => restore::Source::PointInTime {
                    table: table.unwrap_or_default(),
                    at: r.at,
                },
            };
            return Ok(Command::Restore { source, to: r.to });
        }
        Group::Data(DataCommand::Migrate(m)) => return Ok(Command::Migrate(m)),
        Group::Data(DataCommand::Import(i)) => {
            return Ok(Command::Import {
                table: i.table,
                input: i.input,
            })
        }
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

fn instant(raw: &str) -> Result<chrono::DateTime<chrono::Utc>, String> {
    chrono::DateTime::parse_from_rfc3339(raw)
        .map(|t| t.with_timezone(&chrono::Utc))
        .map_err(|e| format!("`{raw}` is not an RFC 3339 time: {e}"))
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

async fn run(command: Command) -> Result<ExitCode, BoxError> {
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
        Command::Migrate(command) => return migrate::execute(&app.db.unrecorded(), command).await,
        Command::Check { table, segments } => {
            let table = table.unwrap_or_else(|| app.db.table().to_string());
            return check(&app, &table, segments).await;
        }
        Command::Export {
            table,
            segments,
            output,
        } => {
            let table = table.unwrap_or_else(|| app.db.table().to_string());
            let scan = ScanOptions {
                segments,
                consistent: false,
            };
            let copied = match output {
                Some(path) => {
                    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
                    copy::export(app.db.client(), &table, scan, &mut file).await?
                }
                None => {
                    copy::export(app.db.client(), &table, scan, &mut std::io::stdout().lock())
                        .await?
                }
            };
            eprintln!("{}", copied.summary());
        }
        Command::Restore { source, to } => {
            let restored =
                restore::restore(app.db.client(), &source, &to, RESTORE_PATIENCE).await?;
            println!("{}", serde_json::to_string(&restored)?);
        }
        Command::Import { table, input } => {
            let table = table.unwrap_or_else(|| app.db.table().to_string());
            let (client, shards) = (app.db.client(), app.config.shards);
            let copied = match input {
                Some(path) => {
                    let file = std::io::BufReader::new(std::fs::File::open(path)?);
                    copy::import(client, &table, shards, file, IMPORT_PUTS).await?
                }
                None => {
                    copy::import(client, &table, shards, std::io::stdin().lock(), IMPORT_PUTS)
                        .await?
                }
            };
            println!("{}", copied.summary());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// How long a restore waits for each step (a large table's restore takes hours).
const RESTORE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// Puts in flight at once during an import.
const IMPORT_PUTS: usize = 16;

/// `data check`: each finding, then the summary; failure if any finding.
async fn check(app: &App, table: &str, segments: u32) -> Result<ExitCode, BoxError> {
    let client = app.db.client();
    let progress = petstore_admin::scan::progress(client, table).await;
    let scan = ScanOptions {
        segments,
        consistent: true,
    };
    let report = check_table(client, table, app.config.shards, scan, &progress).await?;
    for finding in &report.findings {
        println!("{}", serde_json::to_string(finding)?);
    }
    let summary = json!({
        "table": table,
        "items": report.items,
        "broken": report.findings.len(),
        "seconds": report.elapsed.as_secs_f64(),
        "itemsPerSecond": report.items_per_second().round(),
    });
    println!("{summary}");
    Ok(exit_status(&report))
}

/// 0 only when every invariant holds.
fn exit_status(report: &Report) -> ExitCode {
    match report.sound() {
        true => ExitCode::SUCCESS,
        false => ExitCode::FAILURE,
    }
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
        Ok(status) => status,
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
        assert_eq!(
            parse_line("data check"),
            Ok(Command::Check {
                table: None,
                segments: 8
            })
        );
        assert_eq!(
            parse_line("data export --output prod.jsonl"),
            Ok(Command::Export {
                table: None,
                segments: 8,
                output: Some(PathBuf::from("prod.jsonl"))
            })
        );
        assert_eq!(
            parse_line("data import --table dev --input prod.jsonl"),
            Ok(Command::Import {
                table: Some("dev".to_string()),
                input: Some(PathBuf::from("prod.jsonl"))
            })
        );
        assert_eq!(
            parse_line("data restore --to restored --backup arn:b"),
            Ok(Command::Restore {
                source: restore::Source::Backup {
                    arn: "arn:b".to_string()
                },
                to: "restored".to_string()
            })
        );
        let at = chrono::DateTime::parse_from_rfc3339("2026-11-25T18:00:00Z").ok();
        assert_eq!(
            parse_line("data restore --to r --from petstore --at 2026-11-25T18:00:00Z"),
            Ok(Command::Restore {
                source: restore::Source::PointInTime {
                    table: "petstore".to_string(),
                    at: at.map(|t| t.with_timezone(&chrono::Utc))
                },
                to: "r".to_string()
            })
        );
        assert!(parse_line("data restore --to r").is_err());
        assert!(parse_line("data restore --to r --backup a --from t").is_err());
        assert!(parse_line("data restore --to r --from t --at yesterday").is_err());
        assert_eq!(
            parse_line("data check --table restored --segments 16"),
            Ok(Command::Check {
                table: Some("restored".to_string()),
                segments: 16
            })
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
