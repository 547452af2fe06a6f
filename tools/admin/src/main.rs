//! `petstore-admin`: API keys, and the data table's upkeep, from a shell.
//!
//! ```text
//! petstore-admin keys create [--plan free|pro|business|enterprise] [--role customer|staff]
//!                            [--per-minute N --per-day N] [--max-open-orders N] [--max-webhooks N] [--name NAME]
//! petstore-admin keys list
//! petstore-admin keys rotate ID [--keep-old-for DURATION]
//! petstore-admin keys update ID [--plan P] [--role R] [--per-minute N --per-day N]
//!                               [--max-open-orders N] [--max-webhooks N]
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
//! expires (`KEY_CACHE_SECONDS`); with `--keep-old-for DURATION` (30m, 2h,
//! 7d; at most 7 days) the old secret works beside the new one until then,
//! on every instance, as the same key (a revocation or an update reaches
//! both), and `rotate` prints its end as `oldKeyExpiresAt`. A rotation ends
//! any secret an earlier one kept: one retires at a time. `update` changes the same identity's
//! plan, role or limits in place (under `create`'s rules), conditional on
//! the key as read, so it never revives a revoked key nor is lost to a
//! rotation; functions follow within the same cache time. `data backfill-inventory` gives every pet
//! written before the inventory index existed its entry there, and prints
//! how many it gave (`{"backfilled": N}`). `data check` reads the whole
//! table (or `--table`'s, e.g. a restored one) and prints each broken
//! invariant as a JSON line (`PK`, `SK`, `invariant`, `problem`), then a
//! summary line (`items`, `broken`, `seconds`, `itemsPerSecond`); its exit
//! status is 0 only when nothing is broken. `data export` writes the
//! stage's pets, categories, name claims and orders as JSON lines (never its
//! API keys, idempotency records, webhooks), and `data import` puts them into
//! another stage's empty table under its shard counts; both print a summary
//! (`items`, `leftOut`), export's on stderr (docs/data.md). `data restore`
//! restores a backup or a point in time into a new table and gives it the
//! stream, TTL, point-in-time recovery, deletion protection and tags a
//! restore leaves out, printing the new table's ARNs and each step's time
//! (docs/restore.md). `data migrate` runs migration 0001 (docs/upgrade.md):
//! `plan` and `status` print each step and its state as a JSON line
//! (`status --require-done` exits 1 unless every backfill is done, the
//! deploy's gate before the switch), `run` runs the pending backfills
//! (throttled, resumable, Ctrl-C saves the position) and prints each one's
//! `scanned`, `changed`, `skipped`, `conflicts`, `stopped` and `seconds`. The tables
//! come from the same environment as the functions (`TABLE_NAME`,
//! `RATE_LIMIT_TABLE_NAME`); with `AWS_ENDPOINT_URL_DYNAMODB` set it talks to
//! that endpoint (DynamoDB Local) and creates the tables if missing, otherwise
//! it uses the AWS SDK's default credentials and region.
//!
//! Arguments are parsed by `clap` (derive); a mistake is an error with the
//! usage, exit status 2, before any AWS call. The parsing is [`cli`], what
//! each command does [`commands`]: a module per command group in each.

mod cli;
mod commands;

use cli::Command;
use petstore::config::Config;
use petstore::db::cause_chain;
use petstore::App;
use std::process::ExitCode;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

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
    match command {
        Command::Keys(keys) => commands::keys::run(&app, keys).await,
        Command::Data(data) => commands::data::run(&app, data).await,
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let command = match cli::parse(std::env::args().skip(1)) {
        Ok(command) => command,
        // The error and the usage (exit status 2), or the help asked for (0).
        Err(e) => e.exit(),
    };
    match run(command).await {
        Ok(status) => status,
        Err(error) => {
            // With its causes: a DynamoDB failure names its operation,
            // table, and AWS's code and message (`DbFailure`).
            eprintln!("petstore-admin: {}", cause_chain(error.as_ref()));
            ExitCode::FAILURE
        }
    }
}
