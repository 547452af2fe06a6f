//! The rules of section 3 of the contract (stock, orders and pet status) and
//! who may see and change an order (section 4a).
//!
//! Each rule is a pure function from the state it reads to its decision: what to
//! change, and the [`Guard`]s, the facts of that state the decision rested
//! on. The database layer ([`crate::db`]) reads the state, asks the rule for
//! its decision, and writes the change on the condition that every guard still
//! holds; if another request changed one of those facts first, the condition
//! fails and it decides again from the fresh state. A rule and the condition
//! that enforces it are one piece of code: change the rule and its guards
//! change with it.
//!
//! A decision guards only what it depended on, so unrelated concurrent
//! changes do not invalidate each other: an order that leaves stock above zero
//! needs only `stock > quantity`, and just the order that takes the last units
//! pins `stock = quantity` (it makes the pet pending).
//!
//! This layer knows records, not HTTP or DynamoDB: a forbidden change is a
//! [`RuleViolation`], which the HTTP edge maps to its status once, and a guard
//! is a fact about a record, which the database layer turns into a condition
//! expression.

use crate::records::{
    Id, Name, Order, OrderPatch, OrderQuantity, OwnerScope, PetStatus, StockQuantity,
};
use chrono::{DateTime, Utc};

pub mod holds;

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
    #[error(
        "this API key has {cap} incomplete orders, its plan's most; complete or cancel one first"
    )]
    TooManyOpenOrders { cap: u32 },
    #[error("this API key has {cap} webhook endpoints, its plan's most; delete one first")]
    TooManyWebhooks { cap: u32 },
}

/// A fact about a stored record that a decision rests on. The write carries it as
/// its condition, so a decision made from a state that has changed since is never
/// applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Guard {
    /// The pet's status is this.
    StatusIs(PetStatus),
    /// The pet has exactly this many units in stock.
    StockIs(u32),
    /// The pet has more than this many units in stock.
    StockAbove(u32),
    /// The pet has exactly this many incomplete orders.
    OpenOrdersIs(u32),
    /// The pet is in this category.
    CategoryIs(Id),
    /// The category has no pets.
    CategoryUnused,
    /// The category has this name.
    NameIs(Name),
    /// The order is not complete.
    OrderIncomplete,
    /// The order was placed by this key identity.
    OwnedBy(Id),
    /// The order is not being lapsed (see [`holds`]).
    NotLapsing,
    /// The order is being lapsed: marked, its cancellation to follow.
    Lapsing,
    /// The order's hold lapses at or before this instant.
    LapsesBy(DateTime<Utc>),
    /// The order carries a lapse time: its hold is on its owner's count
    /// (negated: an order placed before holds were counted, not yet given
    /// one by migration 0001's backfill, see [`holds`]).
    HoldCounted,
    /// A key's hold count is below this cap (absent counts as none).
    OpenHoldsBelow(u32),
    /// The fact does not hold.
    Not(Box<Guard>),
    /// Every one of these facts holds.
    All(Vec<Guard>),
}

impl Guard {
    /// The guard that holds exactly when this one does not.
    pub fn negated(self) -> Guard {
        Guard::Not(Box::new(self))
    }
}

/// What the stock rules need to know about a pet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StockState {
    pub status: PetStatus,
    pub stock: u32,
    /// Incomplete orders for the pet.
    pub open_orders: u32,
}

/// What a decision does to a pet's stock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StockMove {
    Keep,
    Set(u32),
    Add(u32),
    Take(u32),
}

/// What a decision writes to a pet's stock and status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StockChange {
    pub stock: StockMove,
    /// 1 when an order is placed, -1 when one is completed or cancelled.
    pub open_orders: i32,
    /// The pet's new status, when it moves.
    pub status: Option<PetStatus>,
}

impl StockChange {
    fn applied_to(self, state: StockState) -> StockState {
        let stock = match self.stock {
            StockMove::Keep => state.stock,
            StockMove::Set(units) => units,
            StockMove::Add(units) => state.stock.saturating_add(units),
            StockMove::Take(units) => state.stock.saturating_sub(units),
        };
        StockState {
            status: self.status.unwrap_or(state.status),
            stock,
            open_orders: state.open_orders.saturating_add_signed(self.open_orders),
        }
    }
}

/// A decided change of a pet's stock: the state it leads to, what to write,
/// and the facts it rests on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StockDecision {
    pub next: StockState,
    pub change: StockChange,
    pub guards: Vec<Guard>,
}

impl StockDecision {
    fn new(from: StockState, change: StockChange, guards: Vec<Guard>) -> StockDecision {
        StockDecision {
            next: change.applied_to(from),
            change,
            guards,
        }
    }
}

/// A direct status change (PUT/PATCH on a pet) must be one of the allowed
/// moves; it rests on the status it moves from.
pub fn check_transition(from: PetStatus, to: PetStatus) -> Result<Guard, RuleViolation> {
    use PetStatus::*;
    match (from, to) {
        (a, b) if a == b => Ok(Guard::StatusIs(from)),
        (Available, Pending)
        | (Available, Sold)
        | (Pending, Available)
        | (Pending, Sold)
        | (Sold, Available) => Ok(Guard::StatusIs(from)),
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

/// A pet with incomplete orders cannot be deleted.
pub fn delete_pet(state: StockState) -> Result<Guard, RuleViolation> {
    if state.open_orders > 0 {
        return Err(RuleViolation::PetHasOpenOrders);
    }
    Ok(Guard::OpenOrdersIs(0))
}

/// A category with pets in it cannot be deleted.
pub fn delete_category(pet_count: u64) -> Result<Guard, RuleViolation> {
    if pet_count > 0 {
        return Err(RuleViolation::CategoryInUse);
    }
    Ok(Guard::CategoryUnused)
}

/// Placing an order of `quantity` units: the pet must be available with
/// enough stock; the units leave the stock, and taking the last ones makes the
/// pet pending.
pub fn place_order(
    state: StockState,
    quantity: OrderQuantity,
) -> Result<StockDecision, RuleViolation> {
    let quantity = quantity.get();
    if state.status != PetStatus::Available {
        return Err(RuleViolation::PetNotAvailable);
    }
    if state.stock < quantity {
        return Err(RuleViolation::InsufficientStock {
            in_stock: state.stock,
            requested: quantity,
        });
    }
    let available = Guard::StatusIs(PetStatus::Available);
    let (change, stock) = if state.stock == quantity {
        let change = StockChange {
            stock: StockMove::Set(0),
            open_orders: 1,
            status: Some(PetStatus::Pending),
        };
        (change, Guard::StockIs(quantity))
    } else {
        let change = StockChange {
            stock: StockMove::Take(quantity),
            open_orders: 1,
            status: None,
        };
        (change, Guard::StockAbove(quantity))
    };
    Ok(StockDecision::new(state, change, vec![available, stock]))
}

/// Completing one of the pet's incomplete orders: the pet is sold once
/// nothing is left in stock and no other order is open.
pub fn complete_order(state: StockState) -> StockDecision {
    let sold_out = Guard::All(vec![Guard::StockIs(0), Guard::OpenOrdersIs(1)]);
    let sells = state.stock == 0 && state.open_orders == 1;
    // Written even when the pet is sold already, so the decision need not rest
    // on the status as well.
    let change = StockChange {
        stock: StockMove::Keep,
        open_orders: -1,
        status: sells.then_some(PetStatus::Sold),
    };
    let guard = if sells { sold_out } else { sold_out.negated() };
    StockDecision::new(state, change, vec![guard])
}

/// Cancelling an incomplete order of `quantity` units: the units go back,
/// and a pending pet (which then has stock) becomes available again.
///
/// The stock stays within the contract's range: units that would take it
/// past [`StockQuantity::MAX`] (stock set to the most while the order was
/// open) are not returned, since no record, answer or event may carry more.
pub fn cancel_order(state: StockState, quantity: OrderQuantity) -> StockDecision {
    let pending = Guard::StatusIs(PetStatus::Pending);
    let frees = state.status == PetStatus::Pending;
    let room = StockQuantity::MAX - quantity.get();
    let overflows = Guard::StockAbove(room);
    let (stock, fits) = if state.stock > room {
        (StockMove::Set(StockQuantity::MAX), overflows)
    } else {
        (StockMove::Add(quantity.get()), overflows.negated())
    };
    let change = StockChange {
        stock,
        open_orders: -1,
        status: frees.then_some(PetStatus::Available),
    };
    let guard = if frees { pending } else { pending.negated() };
    StockDecision::new(state, change, vec![guard, fits])
}

/// Setting the stock to `quantity`: above 0 makes a pending or sold pet
/// available; 0 makes an available pet pending if it has incomplete orders,
/// else sold. The decision rests on the status, and on the open orders exactly
/// when they decide.
pub fn set_stock(state: StockState, quantity: StockQuantity) -> StockDecision {
    let stock = quantity.get();
    let mut guards = vec![Guard::StatusIs(state.status)];
    let status = match (stock, state.status) {
        (0, PetStatus::Available) => {
            let no_open_orders = Guard::OpenOrdersIs(0);
            if state.open_orders > 0 {
                guards.push(no_open_orders.negated());
                PetStatus::Pending
            } else {
                guards.push(no_open_orders);
                PetStatus::Sold
            }
        }
        (0, other) => other,
        (_, PetStatus::Pending | PetStatus::Sold) => PetStatus::Available,
        (_, other) => other,
    };
    let change = StockChange {
        stock: StockMove::Set(stock),
        open_orders: 0,
        status: (status != state.status).then_some(status),
    };
    StockDecision::new(state, change, guards)
}

/// Only an incomplete order may be changed or cancelled, and not once its
/// lapse has begun (a lapsing order reads as gone, see [`holds`]). The
/// change also rests on whether the order's hold was counted as read: a
/// backfill that counts it meanwhile (migration 0001) makes the change
/// decide again, so its count is moved exactly once or not at all.
pub fn open_order(order: &Order) -> Result<Guard, RuleViolation> {
    if order.complete {
        return Err(RuleViolation::OrderComplete);
    }
    let counted = match order.lapses_at {
        Some(_) => Guard::HoldCounted,
        None => Guard::HoldCounted.negated(),
    };
    Ok(Guard::All(vec![
        Guard::OrderIncomplete,
        Guard::NotLapsing,
        counted,
    ]))
}

/// A decided change of an order: the order it becomes, and the fact it rests on.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderDecision {
    pub updated: Order,
    pub guard: Guard,
}

impl OrderDecision {
    /// Whether the change completes the order (which moves its pet's stock
    /// state too, see [`complete_order`]).
    pub fn completes(&self) -> bool {
        self.updated.complete
    }
}

/// What a patch makes of an order; `None` when it changes nothing. Completing
/// sets `shipDate` to `now` when it has none; a complete order accepts only
/// an empty patch.
pub fn patch_order(
    order: &Order,
    patch: &OrderPatch,
    now: DateTime<Utc>,
) -> Result<Option<OrderDecision>, RuleViolation> {
    if order.complete && patch.is_empty() {
        return Ok(None);
    }
    let guard = open_order(order)?;
    let mut updated = patch.merged(order);
    if updated.complete {
        updated.ship_date.get_or_insert(now);
    }
    Ok((updated != *order).then_some(OrderDecision { updated, guard }))
}

/// Whether a record owned by `owner` (an order's placer) is within `scope`.
/// Outside it, the record is answered exactly as a missing one.
pub fn in_scope(scope: OwnerScope, owner: Option<Id>) -> bool {
    match scope {
        OwnerScope::All => true,
        OwnerScope::OwnedBy(caller) => owner == Some(caller),
    }
}

/// What keeps a write on an owned record (an order) within `scope`: a
/// customer's writes are conditioned on the item's `ownerId`, so ownership
/// holds in the database and not only in the read before the write. Staff
/// may change any.
pub fn scope_guard(scope: OwnerScope) -> Option<Guard> {
    match scope {
        OwnerScope::All => None,
        OwnerScope::OwnedBy(caller) => Some(Guard::OwnedBy(caller)),
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

    fn units(n: u32) -> OrderQuantity {
        OrderQuantity::new(n).unwrap_or_else(|| panic!("{n} is a valid order quantity"))
    }

    fn next(decision: StockDecision) -> StockState {
        decision.next
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
            place_order(state(Pending, 5, 0), units(1)).map(next),
            Err(RuleViolation::PetNotAvailable)
        );
        assert_eq!(
            place_order(state(Sold, 5, 0), units(1)).map(next),
            Err(RuleViolation::PetNotAvailable)
        );
        assert_eq!(
            place_order(state(Available, 2, 0), units(3)).map(next),
            Err(RuleViolation::InsufficientStock {
                in_stock: 2,
                requested: 3
            })
        );
        assert_eq!(
            place_order(state(Available, 5, 0), units(2)).map(next),
            Ok(state(Available, 3, 1))
        );
    }

    #[test]
    fn an_order_that_empties_the_stock_makes_the_pet_pending() {
        assert_eq!(
            place_order(state(Available, 2, 1), units(2)).map(next),
            Ok(state(Pending, 0, 2))
        );
    }

    #[test]
    fn completing_the_last_open_order_at_zero_stock_sells_the_pet() {
        assert_eq!(complete_order(state(Pending, 0, 1)).next, state(Sold, 0, 0));
        assert_eq!(
            complete_order(state(Pending, 0, 2)).next,
            state(Pending, 0, 1)
        );
        assert_eq!(
            complete_order(state(Available, 3, 1)).next,
            state(Available, 3, 0)
        );
    }

    #[test]
    fn cancelling_restocks_and_frees_a_pending_pet() {
        assert_eq!(
            cancel_order(state(Pending, 0, 1), units(2)).next,
            state(Available, 2, 0)
        );
        assert_eq!(
            cancel_order(state(Available, 1, 2), units(1)).next,
            state(Available, 2, 1)
        );
        assert_eq!(
            cancel_order(state(Sold, 0, 1), units(1)).next,
            state(Sold, 1, 0)
        );
    }

    #[test]
    fn cancelling_never_takes_the_stock_past_the_most_a_pet_holds() {
        let most = StockQuantity::MAX;
        assert_eq!(
            cancel_order(state(Available, most - 1, 1), units(3)).next,
            state(Available, most, 0)
        );
        assert_eq!(
            cancel_order(state(Available, most - 3, 1), units(3)).next,
            state(Available, most, 0)
        );
    }

    #[test]
    fn setting_stock_moves_the_status() -> Result<(), Box<dyn std::error::Error>> {
        let q = |n| StockQuantity::new(n).unwrap_or_else(|| panic!("{n} is a valid stock"));
        assert_eq!(set_stock(state(Pending, 0, 1), q(4)).next.status, Available);
        assert_eq!(set_stock(state(Sold, 0, 0), q(1)).next.status, Available);
        assert_eq!(set_stock(state(Available, 3, 1), q(0)).next.status, Pending);
        assert_eq!(set_stock(state(Available, 3, 0), q(0)).next.status, Sold);
        assert_eq!(set_stock(state(Pending, 3, 1), q(0)).next.status, Pending);
        assert_eq!(
            set_stock(state(Available, 3, 0), q(7)).next,
            state(Available, 7, 0)
        );
        Ok(())
    }

    /// Whether a guard on a pet's stock item holds in `state`.
    fn holds(guard: &Guard, state: &StockState) -> bool {
        match guard {
            Guard::StatusIs(status) => state.status == *status,
            Guard::StockIs(units) => state.stock == *units,
            Guard::StockAbove(units) => state.stock > *units,
            Guard::OpenOrdersIs(count) => state.open_orders == *count,
            Guard::Not(inner) => !holds(inner, state),
            Guard::All(guards) => guards.iter().all(|g| holds(g, state)),
            other => panic!("{other:?} is not a fact of a pet's stock"),
        }
    }

    /// Small pet states: every status, a few units (and a few short of the
    /// most a pet holds), a few open orders.
    fn states() -> Vec<StockState> {
        let mut all = Vec::new();
        let most = StockQuantity::MAX;
        for status in PetStatus::ALL {
            for stock in (0..5).chain(most - 4..=most) {
                for open_orders in 0..4 {
                    all.push(state(status, stock, open_orders));
                }
            }
        }
        all
    }

    /// A decision's guards hold where it was made, and wherever they hold its
    /// change leads where the rule would have: a write conditioned on them is
    /// exactly the rule, whatever happened between the read and the write. `domain`
    /// is where the rule can be asked at all (completing or cancelling
    /// concerns one of the pet's open orders).
    fn assert_guards_are_exact(
        rule: &str,
        domain: impl Fn(&StockState) -> bool,
        decide_at: impl Fn(StockState) -> Option<StockDecision>,
    ) {
        let states: Vec<StockState> = states().into_iter().filter(|s| domain(s)).collect();
        for read in &states {
            let Some(decision) = decide_at(*read) else {
                continue;
            };
            assert!(
                decision.guards.iter().all(|g| holds(g, read)),
                "{rule}: the guards of {read:?} fail on it: {:?}",
                decision.guards
            );
            for written in &states {
                if decision.guards.iter().all(|g| holds(g, written)) {
                    assert_eq!(
                        Some(decision.change.applied_to(*written)),
                        decide_at(*written).map(|p| p.next),
                        "{rule}: decided at {read:?}, written at {written:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn every_stock_decision_guards_exactly_what_it_depends_on() {
        let any = |_: &StockState| true;
        let has_open_order = |s: &StockState| s.open_orders > 0;
        for n in 1..4 {
            assert_guards_are_exact("place order", any, |s| place_order(s, units(n)).ok());
            assert_guards_are_exact("cancel order", has_open_order, |s| {
                Some(cancel_order(s, units(n)))
            });
        }
        assert_guards_are_exact("complete order", has_open_order, |s| {
            Some(complete_order(s))
        });
        for n in 0..5 {
            let quantity = StockQuantity::new(n);
            assert_guards_are_exact("set stock", any, |s| quantity.map(|q| set_stock(s, q)));
        }
    }

    #[test]
    fn completing_the_last_order_of_a_pet_already_sold_keeps_it_sold() {
        let decision = complete_order(state(Sold, 0, 1));
        assert_eq!(decision.next, state(Sold, 0, 0));
        assert!(decision.guards.iter().all(|g| holds(g, &state(Sold, 0, 1))));
    }

    #[test]
    fn a_pet_is_deleted_and_a_category_emptied_only_without_dependants() {
        assert_eq!(
            delete_pet(state(Available, 1, 1)),
            Err(RuleViolation::PetHasOpenOrders)
        );
        assert_eq!(delete_pet(state(Sold, 0, 0)), Ok(Guard::OpenOrdersIs(0)));
        assert_eq!(delete_category(2), Err(RuleViolation::CategoryInUse));
        assert_eq!(delete_category(0), Ok(Guard::CategoryUnused));
    }

    fn an_order(complete: bool) -> Order {
        Order {
            id: Id::clamped(1),
            pet_id: Id::clamped(2),
            quantity: units(1),
            ship_date: None,
            complete,
            lapses_at: None,
        }
    }

    #[test]
    fn completing_an_order_sets_its_ship_date_and_rests_on_it_being_open() {
        let now = Utc::now();
        let completing = OrderPatch {
            complete: Some(true),
            ..OrderPatch::default()
        };
        let decision = patch_order(&an_order(false), &completing, now);
        let decision = decision
            .ok()
            .flatten()
            .unwrap_or_else(|| panic!("a change"));
        assert!(decision.completes());
        assert_eq!(decision.updated.ship_date, Some(now));
        let uncounted = Guard::HoldCounted.negated();
        assert_eq!(
            decision.guard,
            Guard::All(vec![Guard::OrderIncomplete, Guard::NotLapsing, uncounted])
        );

        let nothing = OrderPatch::default();
        assert_eq!(patch_order(&an_order(true), &nothing, now), Ok(None));
        assert_eq!(patch_order(&an_order(false), &nothing, now), Ok(None));
        assert_eq!(
            patch_order(&an_order(true), &completing, now),
            Err(RuleViolation::OrderComplete)
        );
        assert_eq!(
            open_order(&an_order(true)),
            Err(RuleViolation::OrderComplete)
        );
    }

    #[test]
    fn a_customer_sees_and_changes_only_its_own_orders() {
        let (me, other) = (Id::clamped(7), Id::clamped(8));
        let mine = OwnerScope::OwnedBy(me);
        assert!(in_scope(mine, Some(me)));
        assert!(!in_scope(mine, Some(other)));
        assert!(!in_scope(mine, None));
        assert!(in_scope(OwnerScope::All, Some(other)));
        assert_eq!(scope_guard(mine), Some(Guard::OwnedBy(me)));
        assert_eq!(scope_guard(OwnerScope::All), None);
    }
}
