//! Moving every listed entry under the stage's shard counts: the second half
//! of lowering a count (docs/upgrade.md, "Changing OrderRate").
//!
//! While it runs, writers already key new and changed records under the new
//! counts and readers cover every shard below the draining count
//! ([`Shards::draining`](super::shards::Shards::draining)), so an entry is
//! listed wherever it is; once it is done the draining count can go.

use super::shards::{shard_of, Kind};
use super::{categories, classify, orders, pets, s, Db, DbError, Item};
use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;

/// How often one record is read again after a concurrent change beat its
/// move: each retry follows a write of the service, which keys the record
/// under the new count anyway, so a second try almost always finds it done.
const RETRIES: usize = 5;

/// What a move reads of a record.
const LIST_KEYS: &str = "PK, SK, id, GSI1PK, GSI2PK";

/// The sharded list keys a record has and should have.
struct Move {
    key: HashMap<String, AttributeValue>,
    /// (attribute, stored value, value under the stage's count)
    keys: Vec<(&'static str, String, String)>,
}

impl Db {
    /// Rewrites the sharded list keys (`GSI1PK`, `GSI2PK`) of every pet,
    /// order and category not under the stage's shard counts, each one
    /// conditional on the keys it read, so a concurrent change of the
    /// service (which writes its own keys) is never undone: the record is
    /// read again and moved from what it then is. Returns how many moved.
    pub async fn reshard_lists(&self) -> Result<usize, DbError> {
        let mut moved = 0;
        let listed = [
            (":pet", pets::SK),
            (":order", orders::SK),
            (":category", categories::SK),
        ];
        self.scan_each(
            "SK IN (:pet, :order, :category)",
            &listed,
            LIST_KEYS,
            async |item| {
                moved += usize::from(self.reshard_one(item).await?);
                Ok(())
            },
        )
        .await?;
        Ok(moved)
    }

    /// Moves one record read as `item`; whether it wrote.
    async fn reshard_one(&self, mut item: Item) -> Result<bool, DbError> {
        for _ in 0..RETRIES {
            let Some(plan) = self.move_of(&item) else {
                return Ok(false);
            };
            let mut update = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(plan.key.clone()));
            let (mut sets, mut conditions) = (Vec::new(), Vec::new());
            for (i, (name, stored, wanted)) in plan.keys.iter().enumerate() {
                sets.push(format!("{name} = :new{i}"));
                conditions.push(format!("{name} = :old{i}"));
                update = update
                    .expression_attribute_values(format!(":new{i}"), s(wanted))
                    .expression_attribute_values(format!(":old{i}"), s(stored));
            }
            let sent = update
                .update_expression(format!("SET {}", sets.join(", ")))
                .condition_expression(conditions.join(" AND "))
                .send()
                .await;
            match sent {
                Ok(_) => return Ok(true),
                Err(err)
                    if err
                        .as_service_error()
                        .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
                {
                    // Changed (or deleted) since it was read: read it again.
                    let fresh = self
                        .client
                        .get_item()
                        .table_name(&self.table)
                        .set_key(Some(plan.key))
                        .consistent_read(true)
                        .projection_expression(LIST_KEYS)
                        .send()
                        .await
                        .map_err(|e| classify(&self.table, e))?;
                    match fresh.item {
                        Some(fresh) => item = fresh,
                        None => return Ok(false),
                    }
                }
                Err(err) => return Err(classify(&self.table, err)),
            }
        }
        Err(DbError::internal(
            "a record kept changing while its list keys were moved: run the reshard again",
        ))
    }

    /// What moving `item` under the stage's counts takes; `None` when its
    /// keys are already there (or it is not a listed record).
    fn move_of(&self, item: &Item) -> Option<Move> {
        let text = |name: &str| match item.get(name) {
            Some(AttributeValue::S(v)) => Some(v.clone()),
            _ => None,
        };
        let kind = match text("SK")?.as_str() {
            pets::SK => Kind::Pet,
            orders::SK => Kind::Order,
            categories::SK => Kind::Category,
            _ => return None,
        };
        let id: u64 = match item.get("id") {
            Some(AttributeValue::N(id)) => id.parse().ok()?,
            _ => return None,
        };
        let shard = shard_of(id, self.shards.count(kind));
        let keys: Vec<(&'static str, String, String)> = ["GSI1PK", "GSI2PK"]
            .into_iter()
            .filter_map(|name| {
                let stored = text(name)?;
                let (list, _) = stored.rsplit_once('#')?;
                let wanted = format!("{list}#{shard}");
                (wanted != stored).then_some((name, stored, wanted))
            })
            .collect();
        if keys.is_empty() {
            return None;
        }
        let key = ["PK", "SK"]
            .into_iter()
            .filter_map(|name| Some((name.to_string(), item.get(name)?.clone())))
            .collect();
        Some(Move { key, keys })
    }
}
