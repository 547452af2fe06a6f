//! How many webhook endpoints a key identity holds: its count item (the one
//! a registration's condition caps), read for `GET /me` (contract 4d).

use super::endpoints::count_key;
use crate::db::{Db, DbError};
use crate::records::Id;

impl Db {
    /// The endpoints key identity `owner` holds now: one strongly consistent
    /// `GetItem` of its count (none counted yet: 0).
    pub async fn webhooks_held(&self, owner: Id) -> Result<u32, DbError> {
        let key = count_key(owner);
        let (Some(pk), Some(sk)) = (key.get("PK"), key.get("SK")) else {
            return Err(DbError::internal("a webhook count key without PK or SK"));
        };
        let (Ok(pk), Ok(sk)) = (pk.as_s(), sk.as_s()) else {
            return Err(DbError::internal("a webhook count key that is not text"));
        };
        let item = self.get_item(pk.clone(), sk).await?;
        let count = item
            .as_ref()
            .and_then(|item| item.get("endpoints"))
            .and_then(|value| value.as_n().ok())
            .map(|n| n.parse::<i64>().map_err(DbError::internal))
            .transpose()?
            .unwrap_or(0);
        Ok(u32::try_from(count.max(0)).unwrap_or(u32::MAX))
    }
}
