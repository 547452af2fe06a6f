//! Plans (the contract's pricing tiers) and the limits they give a key.

use super::window::Limits;
use serde::{Deserialize, Serialize};

/// A key's plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Plan {
    Free,
    Pro,
    Business,
    /// Limits set on the key itself.
    Enterprise,
}

impl Plan {
    pub fn parse(raw: &str) -> Option<Plan> {
        match raw {
            "free" => Some(Plan::Free),
            "pro" => Some(Plan::Pro),
            "business" => Some(Plan::Business),
            "enterprise" => Some(Plan::Enterprise),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Plan::Free => "free",
            Plan::Pro => "pro",
            Plan::Business => "business",
            Plan::Enterprise => "enterprise",
        }
    }

    /// An enterprise key's cap on incomplete orders when the key sets none.
    pub const ENTERPRISE_OPEN_ORDERS: u32 = 1_000;

    /// The most incomplete orders a customer of the plan may hold at once
    /// (contract 3, "Holds are capped"); `None` for enterprise, whose cap is
    /// the key's.
    pub fn open_orders_cap(self) -> Option<u32> {
        match self {
            Plan::Free => Some(10),
            Plan::Pro => Some(100),
            Plan::Business => Some(1_000),
            Plan::Enterprise => None,
        }
    }

    /// An enterprise key's cap on webhook endpoints when the key sets none.
    pub const ENTERPRISE_WEBHOOKS: u32 = 100;

    /// The most webhook endpoints a key of the plan may have (contract 9);
    /// `None` for enterprise, whose cap is the key's.
    pub fn webhooks_cap(self) -> Option<u32> {
        match self {
            Plan::Free => Some(1),
            Plan::Pro => Some(5),
            Plan::Business => Some(20),
            Plan::Enterprise => None,
        }
    }

    /// The plan's own limits; `None` for enterprise, whose limits are the key's.
    pub fn limits(self) -> Option<Limits> {
        match self {
            Plan::Free => Some(Limits::FREE),
            Plan::Pro => Some(Limits::new(300, 10_000)),
            Plan::Business => Some(Limits::new(1_000, 100_000)),
            Plan::Enterprise => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_have_their_limits() {
        assert_eq!(
            Plan::parse("pro").and_then(Plan::limits),
            Some(Limits::new(300, 10_000))
        );
        assert_eq!(Plan::Business.limits(), Some(Limits::new(1_000, 100_000)));
        assert_eq!(Plan::Enterprise.limits(), None);
        assert_eq!(Plan::parse("gold"), None);
        assert_eq!(Limits::enterprise(0, 10), None);
    }
}
