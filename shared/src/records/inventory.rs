//! Inventory entries: one pet's stock, and the body that sets it.

use super::json::{required, JsonObject};
use super::{Id, PetStatus, StockQuantity, TextField, ValidationError};
use serde::{Deserialize, Serialize};

/// One pet's stock, as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InventoryItem {
    pub pet_id: Id,
    pub quantity: StockQuantity,
    pub status: PetStatus,
}

/// The body of `PUT /store/inventory/{petId}`.
#[derive(Debug, Clone, PartialEq)]
pub struct InventoryUpdate {
    pub quantity: StockQuantity,
}

impl InventoryUpdate {
    /// Its free-text fields (see [`TextField`]): none.
    pub const TEXT: &[TextField] = &[];

    pub fn parse(body: &JsonObject) -> Result<InventoryUpdate, ValidationError> {
        let quantity = required(body, "quantity")?
            .as_u64()
            .and_then(|q| u32::try_from(q).ok())
            .and_then(StockQuantity::new)
            .ok_or_else(|| ValidationError::new("quantity must be an integer from 0 to 1000000"))?;
        Ok(InventoryUpdate { quantity })
    }
}

#[cfg(test)]
mod tests {
    use super::super::json::object;
    use super::*;
    use serde_json::json;

    #[test]
    fn stock_is_bounded() {
        assert!(InventoryUpdate::parse(&object(json!({"quantity": 0}))).is_ok());
        assert!(InventoryUpdate::parse(&object(json!({"quantity": 1_000_000}))).is_ok());
        assert!(InventoryUpdate::parse(&object(json!({"quantity": 1_000_001}))).is_err());
        assert!(InventoryUpdate::parse(&object(json!({"quantity": -1}))).is_err());
        assert!(InventoryUpdate::parse(&object(json!({}))).is_err());
    }
}
