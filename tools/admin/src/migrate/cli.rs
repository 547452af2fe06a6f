//! `petstore-admin data migrate ...`: the commands, their output (JSON lines
//! on stdout) and exit statuses.

use super::backfill::{self, Options};
use super::{backfills_done, plan, Manifest, StepStatus};
use crate::scan::{self, BoxError};
use clap::{Args, Subcommand};
use petstore::db::Changes;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// `data migrate`'s commands (migration 0001, docs/upgrade.md).
#[derive(Debug, Subcommand, PartialEq, Eq)]
pub enum MigrateCommand {
    /// Every step of the migration with its state on the table.
    Plan(Target),
    /// Run the pending backfills whose template steps before them are in
    /// place; refuses, naming the step to deploy, otherwise.
    Run(RunArgs),
    /// As plan; with --require-done, exit 1 unless every backfill is done.
    Status {
        #[command(flatten)]
        target: Target,
        #[arg(long)]
        require_done: bool,
    },
}

impl MigrateCommand {
    /// The table it names, if not the stage's own.
    pub fn table(&self) -> Option<&str> {
        match self {
            MigrateCommand::Plan(target)
            | MigrateCommand::Status { target, .. }
            | MigrateCommand::Run(RunArgs { target, .. }) => target.table.as_deref(),
        }
    }
}

/// The table a command works on.
#[derive(Debug, Args, PartialEq, Eq)]
pub struct Target {
    /// The data table, if not the stage's own (TABLE_NAME): the deploy
    /// script passes its stack's.
    #[arg(long)]
    pub table: Option<String>,
}

#[derive(Debug, Args, PartialEq, Eq)]
pub struct RunArgs {
    #[command(flatten)]
    pub target: Target,
    /// Run only this backfill (holds, name-claims, stock-items), if it is pending.
    #[arg(long, value_name = "NAME")]
    pub only: Option<String>,
    /// Item writes a second at most (default: 25% of a provisioned table's
    /// write capacity, or 200 on demand).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_writes_per_second: Option<u32>,
    /// Parallel scan segments of a new run (a resumed run keeps its own).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub segments: u32,
    /// Stop after this many scan pages, positions saved (run again to resume).
    #[arg(long, value_name = "N")]
    pub pages: Option<u64>,
}

/// Runs `command` on `changes`' table: the lines it prints, and its status.
pub async fn execute(changes: &Changes, command: MigrateCommand) -> Result<ExitCode, BoxError> {
    let manifest = Manifest::migration_0001()?;
    let (client, table) = (changes.client(), changes.table());
    match command {
        MigrateCommand::Plan(_) => {
            print(&plan(client, table, &manifest).await?)?;
            Ok(ExitCode::SUCCESS)
        }
        MigrateCommand::Status { require_done, .. } => {
            let statuses = plan(client, table, &manifest).await?;
            print(&statuses)?;
            let done = backfills_done(&statuses);
            Ok(match done || !require_done {
                true => ExitCode::SUCCESS,
                false => {
                    eprintln!("petstore-admin: migration 0001's backfills are not all done");
                    ExitCode::FAILURE
                }
            })
        }
        MigrateCommand::Run(args) => run(changes, &manifest, args).await,
    }
}

async fn run(changes: &Changes, manifest: &Manifest, args: RunArgs) -> Result<ExitCode, BoxError> {
    let (client, table) = (changes.client(), changes.table());
    let stop = Arc::new(AtomicBool::new(false));
    let on_signal = stop.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("petstore-admin: stopping at the next page (its position is saved)");
            on_signal.store(true, Ordering::SeqCst);
        }
    });
    let options = Options {
        max_writes_per_second: backfill::writes_per_second(
            client,
            table,
            args.max_writes_per_second,
        )
        .await?,
        segments: args.segments,
        page_size: None,
        stop_after_pages: args.pages,
        stop,
    };
    eprintln!(
        "petstore-admin: at most {} item writes a second",
        options.max_writes_per_second
    );
    let bar = scan::progress(client, table).await;
    let only = args.only.as_deref();
    let outcomes = super::run(changes, manifest, only, &options, &bar).await?;
    for outcome in &outcomes {
        println!("{}", serde_json::to_string(outcome)?);
    }
    Ok(ExitCode::SUCCESS)
}

fn print(statuses: &[StepStatus]) -> Result<(), BoxError> {
    for status in statuses {
        println!("{}", serde_json::to_string(status)?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Line {
        #[command(subcommand)]
        command: MigrateCommand,
    }

    fn parse(line: &str) -> Result<MigrateCommand, String> {
        let words = std::iter::once("migrate").chain(line.split_whitespace());
        Line::try_parse_from(words)
            .map(|l| l.command)
            .map_err(|e| e.to_string())
    }

    fn table(name: &str) -> Target {
        Target {
            table: Some(name.to_string()),
        }
    }

    #[test]
    fn the_deploy_script_s_commands_parse() {
        assert_eq!(
            parse("run --table t --only holds"),
            Ok(MigrateCommand::Run(RunArgs {
                target: table("t"),
                only: Some("holds".into()),
                max_writes_per_second: None,
                segments: 4,
                pages: None,
            }))
        );
        assert_eq!(
            parse("status --table t --require-done"),
            Ok(MigrateCommand::Status {
                target: table("t"),
                require_done: true
            })
        );
        let plan = parse("plan");
        assert_eq!(plan, Ok(MigrateCommand::Plan(Target { table: None })));
        assert!(parse("run --max-writes-per-second 0").is_err());
        assert!(parse("run --segments 0").is_err());
    }
}
