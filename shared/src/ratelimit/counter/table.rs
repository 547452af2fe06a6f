//! Creating the counter table, for local runs and tests (production's comes
//! from `template.yaml`, with the same schema).

use crate::db::tables::{attribute, create_expiring, key, table_exists};
use crate::db::DbError;
use aws_sdk_dynamodb::types::{BillingMode, KeyType, ScalarAttributeType};
use aws_sdk_dynamodb::Client;

/// Creates the counter table unless it exists, with TTL on `expiresAt`.
pub async fn create_counter_table(client: &Client, table: &str) -> Result<(), DbError> {
    if table_exists(client, table).await? {
        return Ok(());
    }
    let request = client
        .create_table()
        .table_name(table)
        .billing_mode(BillingMode::PayPerRequest)
        .key_schema(key("PK", KeyType::Hash)?)
        .attribute_definitions(attribute("PK", ScalarAttributeType::S)?);
    create_expiring(request, client, table).await
}
