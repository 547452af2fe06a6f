//! Batch reads of table items by key: `BatchGetItem`, 100 keys a call, with
//! the keys DynamoDB leaves unprocessed asked again under the one retry policy.

use super::query::Projection;
use super::write::{Pause, Retry};
use super::{classify, Db, DbError, Item};
use aws_sdk_dynamodb::types::KeysAndAttributes;

impl Db {
    /// Reads the items at `keys` (eventually consistent), `projection`'s
    /// attributes of each, in no particular order; missing items are left out.
    pub(crate) async fn batch_get(
        &self,
        operation: &'static str,
        keys: Vec<Item>,
        projection: Option<&Projection>,
    ) -> Result<Vec<Item>, DbError> {
        self.batch_read(operation, keys, projection, false).await
    }

    /// As [`Db::batch_get`], strongly consistent: for a decision made from
    /// what it reads.
    pub(crate) async fn batch_get_consistent(
        &self,
        operation: &'static str,
        keys: Vec<Item>,
        projection: Option<&Projection>,
    ) -> Result<Vec<Item>, DbError> {
        self.batch_read(operation, keys, projection, true).await
    }

    async fn batch_read(
        &self,
        operation: &'static str,
        keys: Vec<Item>,
        projection: Option<&Projection>,
        consistent: bool,
    ) -> Result<Vec<Item>, DbError> {
        let mut found = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(100) {
            let mut request = KeysAndAttributes::builder()
                .set_keys(Some(chunk.to_vec()))
                .consistent_read(consistent);
            if let Some(projection) = projection {
                request = request.projection_expression(&projection.expression);
                for (placeholder, name) in &projection.names {
                    request = request.expression_attribute_names(placeholder, name);
                }
            }
            let mut pending = Some(request.build().map_err(DbError::internal)?);
            let mut retry = Retry::new(operation);
            while let Some(request) = pending.take() {
                let out = self
                    .client
                    .batch_get_item()
                    .request_items(&self.table, request)
                    .send()
                    .await
                    .map_err(|e| classify(&self.table, e))?;
                found.extend(
                    out.responses
                        .and_then(|mut r| r.remove(&self.table))
                        .unwrap_or_default(),
                );
                pending = out
                    .unprocessed_keys
                    .and_then(|mut u| u.remove(&self.table))
                    .filter(|k| !k.keys().is_empty());
                if pending.is_some() {
                    retry.again(Pause::Backoff).await?;
                }
            }
        }
        Ok(found)
    }
}
