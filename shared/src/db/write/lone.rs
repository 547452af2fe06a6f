//! A write of one item, sent as a plain conditional `UpdateItem`,
//! `PutItem` or `DeleteItem`: as atomic as a one-item transaction, at half
//! its write units. Each answers as a transaction's item would
//! ([`Sent`]): its condition failed (with the item, when asked for), a
//! conflict with a transaction holding it, or an error.

use super::{unexpected, Sent};
use crate::db::{classify, Db, DbError};
use crate::metrics::{count, Metric};
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{Delete, Put, Update};

impl Db {
    pub(super) async fn conditional_update(&self, update: Option<Update>) -> Result<Sent, DbError> {
        let update =
            update.ok_or_else(|| DbError::internal("an update item without its update"))?;
        let table = update.table_name;
        let result = self
            .client
            .update_item()
            .table_name(&table)
            .set_key(Some(update.key))
            .update_expression(update.update_expression)
            .set_condition_expression(update.condition_expression)
            .set_expression_attribute_names(update.expression_attribute_names)
            .set_expression_attribute_values(update.expression_attribute_values)
            .set_return_values_on_condition_check_failure(
                update.return_values_on_condition_check_failure,
            )
            .send()
            .await;
        match result {
            Ok(_) => Ok(Sent::Done),
            Err(SdkError::ServiceError(e)) => match e.into_err() {
                UpdateItemError::ConditionalCheckFailedException(failed) => {
                    Ok(Sent::ConditionFailed(0, failed.item))
                }
                // The item is in another request's transaction right now.
                UpdateItemError::TransactionConflictException(_) => {
                    count(Metric::DbConflicts, 1);
                    Ok(Sent::Conflict)
                }
                other => Err(unexpected(&table, other)),
            },
            Err(other) => Err(classify(&table, other)),
        }
    }
    pub(super) async fn conditional_put(&self, put: Option<Put>) -> Result<Sent, DbError> {
        let put = put.ok_or_else(|| DbError::internal("a put item without its put"))?;
        let table = put.table_name;
        let result = self
            .client
            .put_item()
            .table_name(&table)
            .set_item(Some(put.item))
            .set_condition_expression(put.condition_expression)
            .set_expression_attribute_names(put.expression_attribute_names)
            .set_expression_attribute_values(put.expression_attribute_values)
            .set_return_values_on_condition_check_failure(
                put.return_values_on_condition_check_failure,
            )
            .send()
            .await;
        match result {
            Ok(_) => Ok(Sent::Done),
            Err(SdkError::ServiceError(e)) => match e.into_err() {
                PutItemError::ConditionalCheckFailedException(failed) => {
                    Ok(Sent::ConditionFailed(0, failed.item))
                }
                PutItemError::TransactionConflictException(_) => {
                    count(Metric::DbConflicts, 1);
                    Ok(Sent::Conflict)
                }
                other => Err(unexpected(&table, other)),
            },
            Err(other) => Err(classify(&table, other)),
        }
    }

    pub(super) async fn conditional_delete(&self, delete: Option<Delete>) -> Result<Sent, DbError> {
        let delete = delete.ok_or_else(|| DbError::internal("a delete item without its delete"))?;
        let table = delete.table_name;
        let result = self
            .client
            .delete_item()
            .table_name(&table)
            .set_key(Some(delete.key))
            .set_condition_expression(delete.condition_expression)
            .set_expression_attribute_names(delete.expression_attribute_names)
            .set_expression_attribute_values(delete.expression_attribute_values)
            .set_return_values_on_condition_check_failure(
                delete.return_values_on_condition_check_failure,
            )
            .send()
            .await;
        match result {
            Ok(_) => Ok(Sent::Done),
            Err(SdkError::ServiceError(e)) => match e.into_err() {
                DeleteItemError::ConditionalCheckFailedException(failed) => {
                    Ok(Sent::ConditionFailed(0, failed.item))
                }
                DeleteItemError::TransactionConflictException(_) => {
                    count(Metric::DbConflicts, 1);
                    Ok(Sent::Conflict)
                }
                other => Err(unexpected(&table, other)),
            },
            Err(other) => Err(classify(&table, other)),
        }
    }
}
