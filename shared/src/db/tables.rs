//! Creating the data table, for `make run` and the tests (production tables
//! come from `template.yaml`, with the same schema and TTL attribute).

pub use super::indexes::{Index, Projects, INDEXES, RELEASED_INDEXES};
use super::layout::Layout;
use super::{classify, DbError};
use aws_sdk_dynamodb::operation::create_table::builders::CreateTableFluentBuilder;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, StreamSpecification, StreamViewType, TableStatus,
    TimeToLiveSpecification,
};
use aws_sdk_dynamodb::Client;
use std::time::{Duration, Instant};

pub(crate) fn attribute(
    name: &str,
    kind: ScalarAttributeType,
) -> Result<AttributeDefinition, DbError> {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(kind)
        .build()
        .map_err(DbError::internal)
}

pub(crate) fn key(name: &str, kind: KeyType) -> Result<KeySchemaElement, DbError> {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(kind)
        .build()
        .map_err(DbError::internal)
}

/// Creates the data table unless it exists already, with its stream of new
/// and old images, as in `template.yaml` (the `events` function reads it),
/// in the current layout.
pub async fn create_data_table(client: &Client, table: &str) -> Result<(), DbError> {
    create_data_table_in(client, table, Layout::V2).await
}

/// Creates the data table in `layout` unless it exists already: layout 1
/// for the upgrade tests, which load the last release's items into it.
pub async fn create_data_table_in(
    client: &Client,
    table: &str,
    layout: Layout,
) -> Result<(), DbError> {
    create_data_table_with(client, table, layout.indexes()).await
}

/// Creates the data table with `indexes` unless it exists already: any
/// layout, or a migration's state between two (the upgrade tests' table
/// once migration 0001's new indexes are created beside the old ones).
pub async fn create_data_table_with(
    client: &Client,
    table: &str,
    indexes: &[Index],
) -> Result<(), DbError> {
    if table_exists(client, table).await? {
        return Ok(());
    }
    let stream = StreamSpecification::builder()
        .stream_enabled(true)
        .stream_view_type(StreamViewType::NewAndOldImages)
        .build()
        .map_err(DbError::internal)?;
    let mut request = client
        .create_table()
        .table_name(table)
        .billing_mode(BillingMode::PayPerRequest)
        .stream_specification(stream)
        .key_schema(key("PK", KeyType::Hash)?)
        .key_schema(key("SK", KeyType::Range)?)
        .attribute_definitions(attribute("PK", ScalarAttributeType::S)?)
        .attribute_definitions(attribute("SK", ScalarAttributeType::S)?)
        .attribute_definitions(attribute("id", ScalarAttributeType::N)?);
    let mut keys = std::collections::BTreeSet::new();
    for (index, projects) in indexes {
        let pk = format!("{}PK", Layout::list_of(index));
        if keys.insert(pk.clone()) {
            request = request.attribute_definitions(attribute(&pk, ScalarAttributeType::S)?);
        }
        request = request.global_secondary_indexes(index_definition(index, *projects)?);
    }
    create_expiring(request, client, table).await
}

/// The definition of index `index` projecting `projects`, keyed as its
/// list's ([`Layout::list_of`]): for a new table, and for the upgrade tests'
/// UpdateTable that adds a layout's index to an existing one.
pub fn index_definition(index: &str, projects: Projects) -> Result<GlobalSecondaryIndex, DbError> {
    let pk = format!("{}PK", Layout::list_of(index));
    let projection = match projects {
        Projects::All => Projection::builder().projection_type(ProjectionType::All),
        Projects::Only(attributes) => Projection::builder()
            .projection_type(ProjectionType::Include)
            .set_non_key_attributes(Some(attributes.iter().map(|a| a.to_string()).collect())),
    };
    GlobalSecondaryIndex::builder()
        .index_name(index)
        .key_schema(key(&pk, KeyType::Hash)?)
        .key_schema(key("id", KeyType::Range)?)
        .projection(projection.build())
        .build()
        .map_err(DbError::internal)
}

/// Sends a table's creation, waits until it is `ACTIVE`, and turns on its
/// TTL on [`TTL_ATTRIBUTE`]. Several processes may start on one fresh
/// DynamoDB at once (`make run` twice, the multi-process tests): the one
/// whose creation DynamoDB accepts sets the TTL; the others, refused with
/// `ResourceInUseException`, wait until the table is `ACTIVE` and leave it
/// as it is.
pub(crate) async fn create_expiring(
    request: CreateTableFluentBuilder,
    client: &Client,
    table: &str,
) -> Result<(), DbError> {
    match request.send().await {
        Ok(_) => {}
        Err(err)
            if err
                .as_service_error()
                .is_some_and(|e| e.is_resource_in_use_exception()) =>
        {
            return wait_until_active(client, table).await;
        }
        Err(err) => return Err(classify(table, err)),
    }
    wait_until_active(client, table).await?;
    expire_on(client, table, TTL_ATTRIBUTE).await
}

/// How long a start waits for a table another process is creating: DynamoDB
/// Local makes one at once, DynamoDB in seconds.
const CREATION_PATIENCE: Duration = Duration::from_secs(120);

/// Waits until `table` is `ACTIVE` (no update of it is accepted before).
async fn wait_until_active(client: &Client, table: &str) -> Result<(), DbError> {
    let started = Instant::now();
    loop {
        let out = client.describe_table().table_name(table).send().await;
        let status = out
            .map_err(|e| classify(table, e))?
            .table
            .and_then(|t| t.table_status);
        if status == Some(TableStatus::Active) {
            return Ok(());
        }
        if started.elapsed() > CREATION_PATIENCE {
            return Err(DbError::internal(format!(
                "table {table} is still {status:?} after {CREATION_PATIENCE:?}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The TTL attribute of both tables: idempotency records and counters expire by it.
const TTL_ATTRIBUTE: &str = "expiresAt";

/// Turns on TTL for `table` on `attribute`.
async fn expire_on(client: &Client, table: &str, attribute: &str) -> Result<(), DbError> {
    let ttl = TimeToLiveSpecification::builder()
        .attribute_name(attribute)
        .enabled(true)
        .build()
        .map_err(DbError::internal)?;
    client
        .update_time_to_live()
        .table_name(table)
        .time_to_live_specification(ttl)
        .send()
        .await
        .map_err(|e| classify(table, e))?;
    Ok(())
}

/// Whether `table` exists; one another process is creating is waited for
/// until it is `ACTIVE`, so whoever finds it can use it at once.
pub async fn table_exists(client: &Client, table: &str) -> Result<bool, DbError> {
    match client.describe_table().table_name(table).send().await {
        Ok(out) => match out.table.and_then(|t| t.table_status) {
            Some(TableStatus::Active) => Ok(true),
            _ => wait_until_active(client, table).await.map(|()| true),
        },
        Err(err)
            if err
                .as_service_error()
                .is_some_and(|e| e.is_resource_not_found_exception()) =>
        {
            Ok(false)
        }
        Err(err) => Err(classify(table, err)),
    }
}
