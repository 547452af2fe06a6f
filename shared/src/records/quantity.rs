//! Counts of units: in one order, and in stock.

use serde::{Deserialize, Serialize};

/// Units in one order: 1–1000.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct OrderQuantity(u32);

impl OrderQuantity {
    pub const DEFAULT: OrderQuantity = OrderQuantity(1);

    pub fn new(value: u32) -> Option<OrderQuantity> {
        (1..=1000).contains(&value).then_some(OrderQuantity(value))
    }

    pub fn get(self) -> u32 {
        self.0
    }
}

/// Units in stock: 0–1,000,000.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct StockQuantity(u32);

impl StockQuantity {
    pub const MAX: u32 = 1_000_000;

    pub fn new(value: u32) -> Option<StockQuantity> {
        (value <= Self::MAX).then_some(StockQuantity(value))
    }

    pub fn get(self) -> u32 {
        self.0
    }
}
