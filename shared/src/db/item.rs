//! DynamoDB items and attribute values: the helpers every table access uses.

use super::DbError;
use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;

/// A DynamoDB item.
pub type Item = HashMap<String, AttributeValue>;

/// A string attribute.
pub(crate) fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

/// A number attribute.
pub(crate) fn n(value: impl ToString) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// Converts a stored item into a record type.
pub(crate) fn from_item<T: serde::de::DeserializeOwned>(item: Item) -> Result<T, DbError> {
    serde_dynamo::from_item(item).map_err(DbError::internal)
}

/// Converts a record type into an item.
pub(crate) fn to_item<T: serde::Serialize>(value: &T) -> Result<Item, DbError> {
    serde_dynamo::to_item(value).map_err(DbError::internal)
}

/// Converts a record type into one attribute's value (a list, a map).
pub(crate) fn to_value<T: serde::Serialize>(value: &T) -> Result<AttributeValue, DbError> {
    serde_dynamo::to_attribute_value(value).map_err(DbError::internal)
}
