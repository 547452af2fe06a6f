//! Reading a whole table: a parallel scan, `segments` at once, each page of
//! items handed on as it arrives (the commands never hold the table).

use aws_sdk_dynamodb::Client;
pub use indicatif::ProgressBar;
use indicatif::ProgressStyle;
use petstore::db::Item;
use std::io::IsTerminal;
use tokio::sync::mpsc;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How a table is read.
#[derive(Debug, Clone, Copy)]
pub struct ScanOptions {
    /// Parallel scan segments: each is a sequence of 1 MB pages, so the
    /// segments set how many pages are in flight.
    pub segments: u32,
    /// Strongly consistent pages (twice the read units): what `data check`
    /// reads, so that it sees every write acknowledged before it started.
    pub consistent: bool,
}

impl Default for ScanOptions {
    fn default() -> ScanOptions {
        ScanOptions {
            segments: 8,
            consistent: true,
        }
    }
}

/// Scans `table`, sending each page of items (or the error that ended a
/// segment) to the receiver; it closes once every segment is done.
pub fn scan_pages(
    client: &Client,
    table: &str,
    options: ScanOptions,
) -> mpsc::Receiver<Result<Vec<Item>, BoxError>> {
    let segments = options.segments.clamp(1, 1_000_000);
    let (pages, receiver) = mpsc::channel(segments as usize * 2);
    for segment in 0..segments {
        let (client, table, pages) = (client.clone(), table.to_string(), pages.clone());
        tokio::spawn(async move {
            let request = client
                .scan()
                .table_name(&table)
                .segment(segment as i32)
                .total_segments(segments as i32)
                .consistent_read(options.consistent);
            let mut start = None;
            loop {
                let page = request.clone().set_exclusive_start_key(start).send().await;
                let out = match page {
                    Ok(out) => out,
                    Err(e) => {
                        let error = petstore::db::DbFailure::of(&table, &e).to_string();
                        let _ = pages.send(Err(error.into())).await;
                        return;
                    }
                };
                let items = out.items.unwrap_or_default();
                if pages.send(Ok(items)).await.is_err() {
                    return;
                }
                start = out.last_evaluated_key;
                if start.is_none() {
                    return;
                }
            }
        });
    }
    receiver
}

/// A progress bar of the items read, on stderr when it is a terminal (else
/// hidden): its length is DynamoDB's item count, which it updates about
/// every six hours, so the bar is an estimate.
pub async fn progress(client: &Client, table: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let total = client
        .describe_table()
        .table_name(table)
        .send()
        .await
        .ok()
        .and_then(|t| t.table.and_then(|t| t.item_count))
        .unwrap_or(0);
    let bar = ProgressBar::new(u64::try_from(total).unwrap_or(0));
    let template =
        "{elapsed_precise} [{wide_bar}] {human_pos}/~{human_len} items, {per_sec}, eta {eta}";
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}
