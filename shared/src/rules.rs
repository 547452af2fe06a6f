//! The rules of section 3 of the contract: stock, orders and pet status.
//!
//! Each rule is a pure function from the state a pet is in to the state it
//! should move to. The database layer ([`crate::db`]) reads the state, plans
//! with these functions, and writes the plan with a condition that the state is
//! still the one it planned from; if another request got there first the
//! condition fails and it plans again from the fresh state.
//!
//! This layer knows records, not HTTP or DynamoDB: a forbidden change is a
//! [`RuleViolation`], which the HTTP edge maps to its status once.

use crate::records::{PetStatus, StockQuantity};

/// Why the current state forbids a change (the contract's 409 answers).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleViolation {
    #[error("the pet is not available for ordering")]
    PetNotAvailable,
    #[error("only {in_stock} in stock, {requested} requested")]
    InsufficientStock { in_stock: u32, requested: u32 },
    #[error("the order is complete and cannot be changed or cancelled")]
    OrderComplete,
    #[error("the pet has incomplete orders")]
    PetHasOpenOrders,
    #[error("the category still has pets")]
    CategoryInUse,
    #[error("a category with this name exists already")]
    CategoryExists,
    #[error("a pet cannot go from {from} to {to}")]
    InvalidStatusTransition { from: PetStatus, to: PetStatus },
}

/// What the stock rules need to know about a pet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StockState {
    pub status: PetStatus,
    pub stock: u32,
    /// Incomplete orders for the pet.
    pub open_orders: u32,
}

/// A direct status change (PUT/PATCH on a pet) must be one of the allowed moves.
pub fn check_transition(from: PetStatus, to: PetStatus) -> Result<(), RuleViolation> {
    use PetStatus::*;
    match (from, to) {
        (a, b) if a == b => Ok(()),
        (Available, Pending)
        | (Available, Sold)
        | (Pending, Available)
        | (Pending, Sold)
        | (Sold, Available) => Ok(()),
        (from, to) => Err(RuleViolation::InvalidStatusTransition { from, to }),
    }
}

/// A new pet's stock: one unit if it can be ordered, none otherwise.
pub fn initial_stock(status: PetStatus) -> u32 {
    match status {
        PetStatus::Available => 1,
        PetStatus::Pending | PetStatus::Sold => 0,
    }
}

/// The state after an order of `quantity` units is placed.
pub fn place_order(state: StockState, quantity: u32) -> Result<StockState, RuleViolation> {
    if state.status != PetStatus::Available {
        return Err(RuleViolation::PetNotAvailable);
    }
    if state.stock < quantity {
        return Err(RuleViolation::InsufficientStock {
            in_stock: state.stock,
            requested: quantity,
        });
    }
    let stock = state.stock - quantity;
    Ok(StockState {
        status: if stock == 0 {
            PetStatus::Pending
        } else {
            PetStatus::Available
        },
        stock,
        open_orders: state.open_orders + 1,
    })
}

/// The state after one of the pet's incomplete orders is completed: sold once
/// nothing is left in stock and no other order is open.
pub fn complete_order(state: StockState) -> StockState {
    let open_orders = state.open_orders.saturating_sub(1);
    StockState {
        status: if state.stock == 0 && open_orders == 0 {
            PetStatus::Sold
        } else {
            state.status
        },
        stock: state.stock,
        open_orders,
    }
}

/// The state after an incomplete order of `quantity` units is cancelled: the
/// units go back, and a pending pet with stock becomes available again.
pub fn cancel_order(state: StockState, quantity: u32) -> StockState {
    let stock = state.stock.saturating_add(quantity);
    StockState {
        status: if state.status == PetStatus::Pending && stock > 0 {
            PetStatus::Available
        } else {
            state.status
        },
        stock,
        open_orders: state.open_orders.saturating_sub(1),
    }
}

/// The state after the stock is set to `quantity`.
pub fn set_stock(state: StockState, quantity: StockQuantity) -> StockState {
    let stock = quantity.get();
    let status = match (stock, state.status) {
        (0, PetStatus::Available) if state.open_orders > 0 => PetStatus::Pending,
        (0, PetStatus::Available) => PetStatus::Sold,
        (0, other) => other,
        (_, PetStatus::Pending | PetStatus::Sold) => PetStatus::Available,
        (_, other) => other,
    };
    StockState {
        status,
        stock,
        ..state
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use PetStatus::*;

    fn state(status: PetStatus, stock: u32, open_orders: u32) -> StockState {
        StockState {
            status,
            stock,
            open_orders,
        }
    }

    #[test]
    fn only_the_listed_transitions_are_allowed() {
        let allowed = [
            (Available, Pending),
            (Available, Sold),
            (Pending, Available),
            (Pending, Sold),
            (Sold, Available),
        ];
        for from in PetStatus::ALL {
            for to in PetStatus::ALL {
                let expected = from == to || allowed.contains(&(from, to));
                assert_eq!(
                    check_transition(from, to).is_ok(),
                    expected,
                    "{from} -> {to}"
                );
            }
        }
        assert_eq!(
            check_transition(Sold, Pending),
            Err(RuleViolation::InvalidStatusTransition {
                from: Sold,
                to: Pending
            })
        );
    }

    #[test]
    fn a_new_pet_has_one_unit_only_when_available() {
        assert_eq!(initial_stock(Available), 1);
        assert_eq!(initial_stock(Pending), 0);
        assert_eq!(initial_stock(Sold), 0);
    }

    #[test]
    fn an_order_needs_an_available_pet_and_enough_stock() {
        assert_eq!(
            place_order(state(Pending, 5, 0), 1),
            Err(RuleViolation::PetNotAvailable)
        );
        assert_eq!(
            place_order(state(Sold, 5, 0), 1),
            Err(RuleViolation::PetNotAvailable)
        );
        assert_eq!(
            place_order(state(Available, 2, 0), 3),
            Err(RuleViolation::InsufficientStock {
                in_stock: 2,
                requested: 3
            })
        );
        assert_eq!(
            place_order(state(Available, 5, 0), 2),
            Ok(state(Available, 3, 1))
        );
    }

    #[test]
    fn an_order_that_empties_the_stock_makes_the_pet_pending() {
        assert_eq!(
            place_order(state(Available, 2, 1), 2),
            Ok(state(Pending, 0, 2))
        );
    }

    #[test]
    fn completing_the_last_open_order_at_zero_stock_sells_the_pet() {
        assert_eq!(complete_order(state(Pending, 0, 1)), state(Sold, 0, 0));
        assert_eq!(complete_order(state(Pending, 0, 2)), state(Pending, 0, 1));
        assert_eq!(
            complete_order(state(Available, 3, 1)),
            state(Available, 3, 0)
        );
    }

    #[test]
    fn cancelling_restocks_and_frees_a_pending_pet() {
        assert_eq!(
            cancel_order(state(Pending, 0, 1), 2),
            state(Available, 2, 0)
        );
        assert_eq!(
            cancel_order(state(Available, 1, 2), 1),
            state(Available, 2, 1)
        );
        assert_eq!(cancel_order(state(Sold, 0, 1), 1), state(Sold, 1, 0));
    }

    #[test]
    fn setting_stock_moves_the_status() -> Result<(), Box<dyn std::error::Error>> {
        let q = |n| StockQuantity::new(n).unwrap_or_else(|| panic!("{n} is a valid stock"));
        assert_eq!(set_stock(state(Pending, 0, 1), q(4)).status, Available);
        assert_eq!(set_stock(state(Sold, 0, 0), q(1)).status, Available);
        assert_eq!(set_stock(state(Available, 3, 1), q(0)).status, Pending);
        assert_eq!(set_stock(state(Available, 3, 0), q(0)).status, Sold);
        assert_eq!(set_stock(state(Pending, 3, 1), q(0)).status, Pending);
        assert_eq!(
            set_stock(state(Available, 3, 0), q(7)),
            state(Available, 7, 0)
        );
        Ok(())
    }
}
