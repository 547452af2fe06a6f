//! Creating the counter table, for local runs and tests (production's comes
//! from `template.yaml`, with the same schema).

use crate::db::tables::{expire_on, table_exists};
use crate::db::{classify, DbError};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
};
use aws_sdk_dynamodb::Client;

/// Creates the counter table unless it exists, with TTL on `expiresAt`.
pub async fn create_counter_table(client: &Client, table: &str) -> Result<(), DbError> {
    if table_exists(client, table).await? {
        return Ok(());
    }
    let built = |e: aws_sdk_dynamodb::error::BuildError| DbError::internal(e);
    let created = client
        .create_table()
        .table_name(table)
        .billing_mode(BillingMode::PayPerRequest)
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("PK")
                .key_type(KeyType::Hash)
                .build()
                .map_err(built)?,
        )
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("PK")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .map_err(built)?,
        )
        .send()
        .await;
    match created {
        Ok(_) => {}
        // Another process created it between our check and our create.
        Err(err)
            if err
                .as_service_error()
                .is_some_and(|e| e.is_resource_in_use_exception()) =>
        {
            return Ok(())
        }
        Err(err) => return Err(classify(err)),
    }
    expire_on(client, table, "expiresAt").await
}
