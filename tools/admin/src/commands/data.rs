//! `petstore-admin data ...`: the data table's upkeep, through the library's
//! `check`, `copy`, `restore` and `migrate`, and the db layer's backfill.

use crate::cli::data::Data;
use crate::BoxError;
use petstore::db::Db;
use petstore::App;
use petstore_admin::check::{check_table, Report};
use petstore_admin::migrate::cli as migrate;
use petstore_admin::scan::ScanOptions;
use petstore_admin::{copy, restore};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

/// How long a restore waits for each step (a large table's restore takes hours).
const RESTORE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// Puts in flight at once during an import.
const IMPORT_PUTS: usize = 16;

/// Runs `command` on the stage's table (or the one it names).
pub async fn run(app: &App, command: Data) -> Result<ExitCode, BoxError> {
    let stage_table = || app.db.table().to_string();
    match command {
        Data::BackfillInventory => {
            let backfilled = app.db.backfill_inventory_index().await?;
            println!("{}", json!({ "backfilled": backfilled }));
        }
        Data::Reshard => {
            let moved = app.db.reshard_lists().await?;
            println!("{}", json!({ "moved": moved }));
        }
        Data::Check { table, segments } => {
            let table = table.unwrap_or_else(stage_table);
            return check(app, &table, segments).await;
        }
        Data::Export {
            table,
            segments,
            output,
        } => export(app, &table.unwrap_or_else(stage_table), segments, output).await?,
        Data::Restore { source, to } => {
            let restored =
                restore::restore(app.db.client(), &source, &to, RESTORE_PATIENCE).await?;
            println!("{}", serde_json::to_string(&restored)?);
        }
        Data::Import { table, input } => {
            import(app, &table.unwrap_or_else(stage_table), input).await?;
        }
        Data::Migrate(command) => {
            let db = match command.table() {
                Some(table) => Db::new(app.db.client().clone(), table).with_hold(app.config.hold),
                None => app.db.clone(),
            };
            return migrate::execute(&db.unrecorded(), command).await;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `data export`: the lines to `output` (or stdout), the summary on stderr.
async fn export(
    app: &App,
    table: &str,
    segments: u32,
    output: Option<PathBuf>,
) -> Result<(), BoxError> {
    let scan = ScanOptions {
        segments,
        consistent: false,
    };
    let copied = match output {
        Some(path) => {
            let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
            copy::export(app.db.client(), table, scan, &mut file).await?
        }
        None => copy::export(app.db.client(), table, scan, &mut std::io::stdout().lock()).await?,
    };
    eprintln!("{}", copied.summary());
    Ok(())
}

/// `data import`: the lines from `input` (or stdin), the summary on stdout.
async fn import(app: &App, table: &str, input: Option<PathBuf>) -> Result<(), BoxError> {
    let (client, shards) = (app.db.client(), app.config.shards);
    let copied = match input {
        Some(path) => {
            let file = std::io::BufReader::new(std::fs::File::open(path)?);
            copy::import(client, table, shards, file, IMPORT_PUTS).await?
        }
        None => copy::import(client, table, shards, std::io::stdin().lock(), IMPORT_PUTS).await?,
    };
    println!("{}", copied.summary());
    Ok(())
}

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
