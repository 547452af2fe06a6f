//! `petstore-admin data ...`: the arguments of the data table's upkeep
//! commands, parsed into a [`Data`] command before any AWS call.

use clap::{Args, Subcommand};
use petstore_admin::migrate::cli::MigrateCommand;
use petstore_admin::restore;
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum DataCommand {
    /// Give every pet without one its inventory index entry (GSI5PK): for a
    /// table whose pets were written before that index existed.
    BackfillInventory,
    /// Move every pet's, order's and category's list keys under the stage's
    /// shard counts (ORDER_LIST_SHARDS, ...): after a lowered OrderRate,
    /// before its draining count goes (docs/upgrade.md).
    Reshard,
    /// Read the whole table and report every item that breaks an invariant
    /// the service keeps (exit status 1 if any does).
    Check(CheckArgs),
    /// Write the table's pets, categories, name claims and orders as JSON
    /// lines (not its API keys, idempotency records or webhooks).
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
pub struct RestoreArgs {
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
pub struct ExportArgs {
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
pub struct ImportArgs {
    /// The table to write, if not the stage's own (TABLE_NAME).
    #[arg(long)]
    table: Option<String>,
    /// Where to read the lines (default: stdin).
    #[arg(long)]
    input: Option<PathBuf>,
}

#[derive(Args)]
pub struct CheckArgs {
    /// The table to read, if not the stage's own (TABLE_NAME): a restored one.
    #[arg(long)]
    table: Option<String>,
    /// Parallel scan segments (pages in flight).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1000))]
    segments: u32,
}

/// A data command, parsed.
#[derive(Debug, PartialEq)]
pub enum Data {
    BackfillInventory,
    Reshard,
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

/// `command` as run.
pub fn parsed(command: DataCommand) -> Data {
    match command {
        DataCommand::BackfillInventory => Data::BackfillInventory,
        DataCommand::Reshard => Data::Reshard,
        DataCommand::Check(check) => Data::Check {
            table: check.table,
            segments: check.segments,
        },
        DataCommand::Export(e) => Data::Export {
            table: e.table,
            segments: e.segments,
            output: e.output,
        },
        DataCommand::Restore(r) => {
            let source = match (r.backup, r.from) {
                (Some(arn), _) => restore::Source::Backup { arn },
                (None, table) => restore::Source::PointInTime {
                    table: table.unwrap_or_default(),
                    at: r.at,
                },
            };
            Data::Restore { source, to: r.to }
        }
        DataCommand::Migrate(m) => Data::Migrate(m),
        DataCommand::Import(i) => Data::Import {
            table: i.table,
            input: i.input,
        },
    }
}

fn instant(raw: &str) -> Result<chrono::DateTime<chrono::Utc>, String> {
    chrono::DateTime::parse_from_rfc3339(raw)
        .map(|t| t.with_timezone(&chrono::Utc))
        .map_err(|e| format!("`{raw}` is not an RFC 3339 time: {e}"))
}
