//! Creating the data table, for `make run` and the tests (production tables
//! come from `template.yaml`, with the same schema).

use super::{classify, StoreError};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType,
};
use aws_sdk_dynamodb::Client;

/// The GSIs every list runs on; all sort on the numeric `id`.
pub const INDEXES: [&str; 3] = ["GSI1", "GSI2", "GSI3"];

fn attribute(name: &str, kind: ScalarAttributeType) -> Result<AttributeDefinition, StoreError> {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(kind)
        .build()
        .map_err(|e| StoreError::Internal(e.to_string()))
}

fn key(name: &str, kind: KeyType) -> Result<KeySchemaElement, StoreError> {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(kind)
        .build()
        .map_err(|e| StoreError::Internal(e.to_string()))
}

/// Creates the data table unless it exists already.
pub async fn create_data_table(client: &Client, table: &str) -> Result<(), StoreError> {
    if table_exists(client, table).await? {
        return Ok(());
    }
    let mut request = client
        .create_table()
        .table_name(table)
        .billing_mode(BillingMode::PayPerRequest)
        .key_schema(key("PK", KeyType::Hash)?)
        .key_schema(key("SK", KeyType::Range)?)
        .attribute_definitions(attribute("PK", ScalarAttributeType::S)?)
        .attribute_definitions(attribute("SK", ScalarAttributeType::S)?)
        .attribute_definitions(attribute("id", ScalarAttributeType::N)?);
    for index in INDEXES {
        let pk = format!("{index}PK");
        request = request
            .attribute_definitions(attribute(&pk, ScalarAttributeType::S)?)
            .global_secondary_indexes(
                GlobalSecondaryIndex::builder()
                    .index_name(index)
                    .key_schema(key(&pk, KeyType::Hash)?)
                    .key_schema(key("id", KeyType::Range)?)
                    .projection(
                        Projection::builder()
                            .projection_type(ProjectionType::All)
                            .build(),
                    )
                    .build()
                    .map_err(|e| StoreError::Internal(e.to_string()))?,
            );
    }
    match request.send().await {
        Ok(_) => Ok(()),
        // Another process created it between our check and our create.
        Err(err)
            if err
                .as_service_error()
                .is_some_and(|e| e.is_resource_in_use_exception()) =>
        {
            Ok(())
        }
        Err(err) => Err(classify(err)),
    }
}

/// Whether `table` exists.
pub async fn table_exists(client: &Client, table: &str) -> Result<bool, StoreError> {
    match client.describe_table().table_name(table).send().await {
        Ok(_) => Ok(true),
        Err(err)
            if err
                .as_service_error()
                .is_some_and(|e| e.is_resource_not_found_exception()) =>
        {
            Ok(false)
        }
        Err(err) => Err(classify(err)),
    }
}
