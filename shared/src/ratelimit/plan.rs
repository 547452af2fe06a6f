//! Plans (the contract's pricing tiers) and the limits they give a key.

use super::window::RateWindow;
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

/// Requests allowed per minute and per day. Both at least 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Limits {
    pub per_minute: u64,
    pub per_day: u64,
}

impl Limits {
    /// The free plan's limits, which also apply to requests without a valid key.
    pub const FREE: Limits = Limits {
        per_minute: 60,
        per_day: 1_000,
    };

    pub const fn new(per_minute: u64, per_day: u64) -> Limits {
        Limits {
            per_minute,
            per_day,
        }
    }

    /// Limits as an enterprise key may carry them.
    pub fn enterprise(per_minute: u64, per_day: u64) -> Option<Limits> {
        (per_minute >= 1 && per_day >= 1).then_some(Limits {
            per_minute,
            per_day,
        })
    }

    pub fn of(self, window: RateWindow) -> u64 {
        match window {
            RateWindow::Minute => self.per_minute,
            RateWindow::Day => self.per_day,
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
