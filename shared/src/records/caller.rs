//! Who is calling: the API key identity and its role (contract section 4a).

use super::{Id, ValidationError};
use serde::{Deserialize, Serialize};
use std::fmt;

/// What a key may do. Customers read the catalogue and place, read and cancel
/// their own orders; staff may do everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    #[default]
    Customer,
    Staff,
}

impl Role {
    pub const ALL: [Role; 2] = [Role::Customer, Role::Staff];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Customer => "customer",
            Role::Staff => "staff",
        }
    }

    pub fn parse(raw: &str) -> Result<Role, ValidationError> {
        Role::ALL
            .into_iter()
            .find(|role| role.as_str() == raw)
            .ok_or_else(|| ValidationError::new("role must be customer or staff"))
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An authenticated caller: the key identity (which survives key rotation) and
/// its role. The wrapper puts one on every admitted request with a valid key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caller {
    pub key_id: Id,
    pub role: Role,
    /// The most incomplete orders the caller may hold at once: its plan's or
    /// its key's; `None` for staff, who are not capped.
    pub open_orders_cap: Option<u32>,
    /// The most webhook endpoints the key may have (its plan's).
    pub webhooks_cap: u32,
}

impl Caller {
    /// Which owned records (orders, and any record a key owns) this caller
    /// may see and change: its key identity's, or (staff) all.
    pub fn owner_scope(&self) -> OwnerScope {
        match self.role {
            Role::Staff => OwnerScope::All,
            Role::Customer => OwnerScope::OwnedBy(self.key_id),
        }
    }
}

/// The owned records an operation may touch: every one, or those a key
/// identity owns (an order's `ownerId`; any record stored with its owner's
/// key id can use the same scope, `rules::in_scope` and `rules::scope_guard`).
/// A customer's scope is part of every read's check and every write's
/// DynamoDB condition, so another customer's record behaves exactly like a
/// missing one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnerScope {
    All,
    OwnedBy(Id),
}
