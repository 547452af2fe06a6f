//! Upgrading a table the last release (1.0.0, e25da8e) filled to this
//! release's layout (migration 0001, docs/upgrade.md), on DynamoDB Local:
//! the fixture `tests/fixtures/release-1.0.0/` loaded into a table of layout
//! 1, served by this code as the canary serves it (`DATA_LAYOUT=1`), its
//! new indexes created as the template steps create them, its backfills run
//! by `petstore-admin data migrate` while shoppers use the real router, and
//! then served on layout 2.
//!
//! - `serving`: layout 1 served right before any backfill; layout 2 without
//!   the migration fails, as the rehearsal must show.
//! - `migration`: the backfills under concurrent shoppers, exact; twice is
//!   a no-op; interrupted, they resume; afterwards layout 2 serves it all.
//! - `stock_items`: the `stock-items` backfill raced by orders, cancels and
//!   stock sets on the same pets: one exact holder each; pending again while
//!   layout 1 creates a pet that holds its stock; the switch serves them.
//! - `throughput`: the backfills' rate on DynamoDB Local (ignored: a
//!   measurement for docs/upgrade.md, run by name).

mod migration;
mod serving;
mod stock_items;
mod throughput;

use crate::helpers::{repo_root, TestApp};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, CreateGlobalSecondaryIndexAction, GlobalSecondaryIndexUpdate, IndexStatus,
    PutRequest, ScalarAttributeType, WriteRequest,
};
use petstore::db::{Item, Layout};
use petstore_admin::migrate::backfill::{Options, Outcome};
use petstore_admin::migrate::{self, Manifest};
use petstore_admin::scan::ProgressBar;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// The fixture's keys: each key's secret and id.
pub struct Keys {
    pub free: (String, u64),
    pub pro: (String, u64),
    pub staff: (String, u64),
}

fn fixture_dir() -> std::path::PathBuf {
    repo_root().join("tests/fixtures/release-1.0.0")
}

/// The fixture's items, as DynamoDB items.
pub fn fixture_items() -> Vec<Item> {
    let lines = std::fs::read_to_string(fixture_dir().join("items.jsonl")).expect("items.jsonl");
    lines
        .lines()
        .map(|line| {
            let json: Value = serde_json::from_str(line).expect("a JSON line");
            petstore_admin::dynamo_json::item_from_json(&json).expect("a DynamoDB JSON item")
        })
        .collect()
}

fn fixture_keys() -> Keys {
    let raw = std::fs::read_to_string(fixture_dir().join("keys.json")).expect("keys.json");
    let keys: Value = serde_json::from_str(&raw).expect("keys.json is JSON");
    let key = |name: &str| {
        let key = &keys[name];
        let secret = key["key"].as_str().expect("a secret").to_string();
        (secret, key["id"].as_u64().expect("an id"))
    };
    Keys {
        free: key("free"),
        pro: key("pro"),
        staff: key("staff"),
    }
}

/// A table of layout 1 holding the fixture, served by this code on layout 1
/// (as staff, the fixture's staff key), and the fixture's keys.
pub async fn old_table() -> (TestApp, Keys) {
    let app = layout_1_app().await;
    load_fixture(&app).await;
    with_fixture_keys(app)
}

/// As [`old_table`], the table as template steps 1 to 4 leave it: layout
/// 1's indexes and layout 2's new ones beside them, created with the table.
/// (DynamoDB Local creates an index on an existing table asynchronously, and
/// under the whole suite's load has left one `CREATING` for good: the
/// UpdateTable steps are CloudFormation's, rehearsed on moto, and timed by
/// [`create_new_indexes`] in `throughput`.)
pub async fn old_table_with_new_indexes() -> (TestApp, Keys) {
    let first = layout_1_app().await;
    let table = format!("{}-step-4", first.app.db.table());
    let new = Layout::V2
        .indexes()
        .iter()
        .filter(|(index, _)| index.ends_with("v2"));
    let indexes: Vec<petstore::db::tables::Index> =
        Layout::V1.indexes().iter().chain(new).copied().collect();
    petstore::db::tables::create_data_table_with(first.app.db.client(), &table, &indexes)
        .await
        .expect("the table of template step 4 is created");
    let app = first
        .another_instance_with(|config| config.table_name = table.clone())
        .await;
    load_fixture(&app).await;
    with_fixture_keys(app)
}

/// The stack of 1.0.0 upgraded as `tools/gates/src/gates/upgrade.py` walks it: layout 1
/// read, and its lists keyed over 32 order shards (1 pet shard) drained
/// while the template's OrderRate keys new entries over fewer
/// (`DrainingOrderRate=10000`, docs/upgrade.md, "Changing OrderRate").
async fn layout_1_app() -> TestApp {
    let app = TestApp::spawn_with(|name| match name {
        "DATA_LAYOUT" => Some("1".to_string()),
        "ORDER_LIST_SHARDS_DRAINING" | "PET_LIST_SHARDS_DRAINING" => Some("32".to_string()),
        _ => None,
    })
    .await;
    assert_eq!(app.app.db.layout(), Layout::V1);
    app
}

fn with_fixture_keys(app: TestApp) -> (TestApp, Keys) {
    let keys = fixture_keys();
    let staff = app.with_key(keys.staff.0.clone());
    (staff, keys)
}

/// Puts every item of the fixture into `app`'s table.
async fn load_fixture(app: &TestApp) {
    for chunk in fixture_items().chunks(25) {
        let requests = chunk.iter().map(|item| {
            let put = PutRequest::builder().set_item(Some(item.clone())).build();
            WriteRequest::builder()
                .put_request(put.expect("a put"))
                .build()
        });
        let out = app
            .app
            .db
            .client()
            .batch_write_item()
            .request_items(app.app.db.table(), requests.collect())
            .send()
            .await
            .expect("the fixture is loaded");
        let left = out.unprocessed_items.unwrap_or_default();
        assert!(
            left.values().all(Vec::is_empty),
            "DynamoDB Local left items out"
        );
    }
}

/// This app over the same table, read as `layout`.
pub async fn on_layout(app: &TestApp, layout: Layout) -> TestApp {
    app.another_instance_with(|config| config.data_layout = layout)
        .await
        .with_key(app.api_key.clone().unwrap_or_default())
}

/// Template steps 1 to 4 on a table of layout 1: layout 2's new indexes,
/// one UpdateTable each, as CloudFormation creates them, each waited for
/// until `ACTIVE` (`throughput` times them).
pub async fn create_new_indexes(app: &TestApp) {
    let (client, table) = (app.app.db.client(), app.app.db.table());
    for (index, projects) in Layout::V2.indexes() {
        if Layout::list_of(index) == *index {
            continue;
        }
        let definition =
            petstore::db::tables::index_definition(index, *projects).expect("an index");
        let create = CreateGlobalSecondaryIndexAction::builder()
            .index_name(definition.index_name())
            .set_key_schema(Some(definition.key_schema().to_vec()))
            .set_projection(definition.projection().cloned())
            .build()
            .expect("a create action");
        let key = format!("{}PK", Layout::list_of(index));
        client
            .update_table()
            .table_name(table)
            .attribute_definitions(attribute(&key, ScalarAttributeType::S))
            .attribute_definitions(attribute("id", ScalarAttributeType::N))
            .global_secondary_index_updates(
                GlobalSecondaryIndexUpdate::builder().create(create).build(),
            )
            .send()
            .await
            .expect("an index is created on the table");
        wait_active(app, index).await;
    }
}

fn attribute(name: &str, kind: ScalarAttributeType) -> AttributeDefinition {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(kind)
        .build()
        .expect("an attribute definition")
}

/// Until `index` is `ACTIVE` and backfilled (DynamoDB Local: at once, or
/// nearly; polled, as the deploy waits on CloudFormation).
async fn wait_active(app: &TestApp, index: &str) {
    loop {
        let out = app
            .app
            .db
            .client()
            .describe_table()
            .table_name(app.app.db.table())
            .send()
            .await
            .expect("the table is described");
        let ready = out.table().is_some_and(|t| {
            t.global_secondary_indexes().iter().any(|i| {
                i.index_name() == Some(index)
                    && i.index_status() == Some(&IndexStatus::Active)
                    && !i.backfilling().unwrap_or(false)
            })
        });
        if ready {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Backfill options for a test: unthrottled beyond `writes_per_second`.
pub fn options(writes_per_second: u32, segments: u32, page_size: Option<i32>) -> Options {
    Options {
        max_writes_per_second: writes_per_second,
        segments,
        page_size,
        stop_after_pages: None,
        stop: Arc::new(AtomicBool::new(false)),
    }
}

/// Options that stop after `pages` scan pages of `page_size` items, as an
/// interruption does (positions saved).
pub fn backfill_options_stopping(segments: u32, page_size: i32, pages: u64) -> Options {
    Options {
        stop_after_pages: Some(pages),
        ..options(10_000, segments, Some(page_size))
    }
}

/// `petstore-admin data migrate run` on `app`'s table.
pub async fn run_backfills(app: &TestApp, options: &Options) -> Vec<Outcome> {
    let manifest = Manifest::migration_0001().expect("the manifest");
    migrate::run(
        &app.app.db.unrecorded(),
        &manifest,
        None,
        options,
        &ProgressBar::hidden(),
    )
    .await
    .expect("the backfills run")
}

/// Every item of `app`'s table but the backfills' progress, by key.
pub async fn snapshot(app: &TestApp) -> HashMap<(String, String), Item> {
    let mut items = HashMap::new();
    let mut start = None;
    loop {
        let out = app
            .app
            .db
            .client()
            .scan()
            .table_name(app.app.db.table())
            .consistent_read(true)
            .set_exclusive_start_key(start)
            .send()
            .await
            .expect("the table is scanned");
        for item in out.items() {
            let text = |name: &str| {
                item.get(name)
                    .and_then(|v| v.as_s().ok())
                    .cloned()
                    .unwrap_or_default()
            };
            if !text("PK").starts_with("MIGRATION#") {
                items.insert((text("PK"), text("SK")), item.clone());
            }
        }
        start = out.last_evaluated_key;
        if start.is_none() {
            return items;
        }
    }
}
