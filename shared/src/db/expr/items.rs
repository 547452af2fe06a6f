//! The write items an expression goes in: an update, a put, a condition
//! check or a delete, for one item or a transaction's.

use super::Expr;
use crate::db::{DbError, Item};
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Delete, Put, ReturnValuesOnConditionCheckFailure,
    TransactWriteItem, Update,
};
use std::collections::HashMap;

impl Expr {
    pub(super) fn condition_expression(&self) -> Option<String> {
        (!self.condition.is_empty()).then(|| self.condition.join(" AND "))
    }

    pub(super) fn update_expression(&self) -> String {
        [
            ("SET", &self.set),
            ("REMOVE", &self.remove),
            ("ADD", &self.add),
        ]
        .iter()
        .filter(|(_, clauses)| !clauses.is_empty())
        .map(|(keyword, clauses)| format!("{keyword} {}", clauses.join(", ")))
        .collect::<Vec<_>>()
        .join(" ")
    }

    /// DynamoDB refuses empty maps of names or values.
    pub(super) fn names(&mut self) -> Option<HashMap<String, String>> {
        Some(std::mem::take(&mut self.names)).filter(|names| !names.is_empty())
    }

    pub(super) fn values(&mut self) -> Option<HashMap<String, AttributeValue>> {
        Some(std::mem::take(&mut self.values)).filter(|values| !values.is_empty())
    }

    pub(super) fn on_failure(&self) -> Option<ReturnValuesOnConditionCheckFailure> {
        self.return_old
            .then_some(ReturnValuesOnConditionCheckFailure::AllOld)
    }

    /// An update of the item at `key`.
    pub(crate) fn update(mut self, table: &str, key: Item) -> Result<TransactWriteItem, DbError> {
        let update = Update::builder()
            .table_name(table)
            .set_key(Some(key))
            .update_expression(self.update_expression())
            .set_condition_expression(self.condition_expression())
            .set_expression_attribute_names(self.names())
            .set_expression_attribute_values(self.values())
            .set_return_values_on_condition_check_failure(self.on_failure())
            .build()
            .map_err(DbError::internal)?;
        Ok(TransactWriteItem::builder().update(update).build())
    }

    /// A put of `item`.
    pub(crate) fn put(mut self, table: &str, item: Item) -> Result<TransactWriteItem, DbError> {
        let put = Put::builder()
            .table_name(table)
            .set_item(Some(item))
            .set_condition_expression(self.condition_expression())
            .set_expression_attribute_names(self.names())
            .set_expression_attribute_values(self.values())
            .set_return_values_on_condition_check_failure(self.on_failure())
            .build()
            .map_err(DbError::internal)?;
        Ok(TransactWriteItem::builder().put(put).build())
    }

    /// A check of the item at `key`, writing nothing: a transaction's
    /// condition on an item it does not change.
    pub(crate) fn check(mut self, table: &str, key: Item) -> Result<TransactWriteItem, DbError> {
        let check = ConditionCheck::builder()
            .table_name(table)
            .set_key(Some(key))
            .set_condition_expression(self.condition_expression())
            .set_expression_attribute_names(self.names())
            .set_expression_attribute_values(self.values())
            .build()
            .map_err(DbError::internal)?;
        Ok(TransactWriteItem::builder().condition_check(check).build())
    }

    /// A delete of the item at `key`.
    pub(crate) fn delete(mut self, table: &str, key: Item) -> Result<TransactWriteItem, DbError> {
        let delete = Delete::builder()
            .table_name(table)
            .set_key(Some(key))
            .set_condition_expression(self.condition_expression())
            .set_expression_attribute_names(self.names())
            .set_expression_attribute_values(self.values())
            .set_return_values_on_condition_check_failure(self.on_failure())
            .build()
            .map_err(DbError::internal)?;
        Ok(TransactWriteItem::builder().delete(delete).build())
    }
}
