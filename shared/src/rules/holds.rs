//! Holds (contract 3, "Holds lapse" and "Holds are capped"): an incomplete
//! order holds its units until it is completed or cancelled, or until its
//! hold lapses; and a customer key holds at most its plan's number at once.
//!
//! A hold is counted on its owner's hold counter (see `db::holds`) from the
//! order that places it to the one write that ends it (completion,
//! cancellation or lapse), each in the same transaction as the order. Orders
//! placed before holds existed have no `lapsesAt`: they are neither counted
//! nor lapsed, so the counter never goes below what it counted, until
//! migration 0001's backfill gives each its `lapsesAt` and counts it, in one
//! transaction (docs/upgrade.md). Until then the cap counts them from the
//! orders themselves ([`cap_guard`]), and a change of one rests on it being
//! still uncounted ([`Guard::HoldCounted`]).
//!
//! A lapse is two conditional writes: the order is marked `lapsing` once its
//! `lapsesAt` has passed (only while it is incomplete and not lapsing, so
//! one mark wins against any racing cancel, completion or second sweep), then
//! it is cancelled as a cancellation is, on the condition that it is the
//! one marked. A marked order answers as gone, and a cancel or completion
//! carries [`Guard::NotLapsing`], so exactly one of the three ends a hold.

use super::{Guard, RuleViolation};
use crate::records::{Id, Order};
use chrono::{DateTime, Duration, Utc};

/// The default hold: 30 days from when the order was placed, or from its
/// `shipDate` when that is later. A store completes an order when it ships
/// it, within days; an order still incomplete a month after the day it was
/// to ship is one nobody is fulfilling, while a backorder or a late shipment
/// is still well inside it.
pub const DEFAULT_HOLD_DAYS: u32 = 30;

/// When a hold placed at `placed` for a shipment on `ship_date` lapses.
pub fn lapses_at(
    placed: DateTime<Utc>,
    ship_date: Option<DateTime<Utc>>,
    hold: Duration,
) -> DateTime<Utc> {
    after(placed.max(ship_date.unwrap_or(placed)), hold)
}

/// The last instant RFC 3339 can write (a four-digit year).
fn last_writable() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("9999-12-31T23:59:59Z")
        .map(|at| at.with_timezone(&Utc))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

/// `hold` after `from`, at most the last instant a date-time can be written:
/// staff may set a `shipDate` in year 9999, and a lapse past it would be
/// written `+10000-...`, which no client reads as a date-time.
fn after(from: DateTime<Utc>, hold: Duration) -> DateTime<Utc> {
    from.checked_add_signed(hold)
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
        .min(last_writable())
}

/// What a patch that leaves the order `updated` does to its hold: a complete
/// order holds nothing and shows no lapse; a later `shipDate` moves the lapse
/// later (never earlier: a hold is never shortened under a waiting store).
pub fn after_patch(updated: &mut Order, hold: Duration) {
    if updated.complete {
        updated.lapses_at = None;
    } else if let (Some(at), Some(ship)) = (updated.lapses_at, updated.ship_date) {
        updated.lapses_at = Some(at.max(after(ship, hold)));
    }
}

/// Whether `order`, placed by `owner`, counts on its owner's hold counter:
/// an incomplete order placed since holds were counted.
pub fn counted(order: &Order, owner: Option<Id>) -> Option<Id> {
    owner.filter(|_| !order.complete && order.lapses_at.is_some())
}

/// What a new hold rests on for a caller capped at `cap` (staff have none)
/// who also holds `uncounted` open orders placed before holds were counted
/// (only on a table of layout 1, before migration 0001's backfill; 0 once it
/// ran): the counter's condition in the order's own transaction, so the cap
/// is exact under any concurrency. `uncounted` only falls (the backfill
/// moves an order onto the count in one transaction, a cancel removes it), so
/// one read a little stale errs on the refusing side only. Its failure, here
/// or in the transaction, is [`RuleViolation::TooManyOpenOrders`].
pub fn cap_guard(cap: u32, uncounted: u32) -> Result<Guard, RuleViolation> {
    match cap.checked_sub(uncounted) {
        Some(room) if room > 0 => Ok(Guard::OpenHoldsBelow(room)),
        _ => Err(RuleViolation::TooManyOpenOrders { cap }),
    }
}

/// What a sweep at `now` does with an order it found open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lapse {
    /// Not due, complete, or from before holds lapsed: nothing.
    Keep,
    /// Due: mark it, on these guards.
    Mark(Guard),
    /// Marked already (a sweep stopped between its two writes): cancel it.
    Cancel,
}

/// The lapse decision for `order` (its `lapsing` mark as read) at `now`.
pub fn lapse(order: &Order, lapsing: bool, now: DateTime<Utc>) -> Lapse {
    match order.lapses_at {
        _ if order.complete => Lapse::Keep,
        _ if lapsing => Lapse::Cancel,
        Some(at) if at <= now => Lapse::Mark(Guard::All(vec![
            Guard::OrderIncomplete,
            Guard::NotLapsing,
            Guard::LapsesBy(now),
        ])),
        _ => Lapse::Keep,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::OrderQuantity;
    use chrono::TimeZone;

    fn at(day: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, day, 0, 0, 0)
            .single()
            .unwrap_or_default()
    }

    fn order(complete: bool, lapses_at: Option<DateTime<Utc>>) -> Order {
        Order {
            id: Id::clamped(1),
            pet_id: Id::clamped(2),
            quantity: OrderQuantity::DEFAULT,
            ship_date: None,
            complete,
            lapses_at,
        }
    }

    #[test]
    fn a_hold_runs_from_the_later_of_placing_and_shipping() {
        let hold = Duration::days(7);
        assert_eq!(lapses_at(at(1), None, hold), at(8));
        assert_eq!(lapses_at(at(1), Some(at(10)), hold), at(17));
        assert_eq!(lapses_at(at(5), Some(at(2)), hold), at(12));
    }

    #[test]
    fn a_lapse_is_never_past_year_9999() {
        let ship = DateTime::parse_from_rfc3339("9999-12-31T23:59:59Z")
            .map(|at| at.with_timezone(&Utc))
            .ok();
        let lapse = lapses_at(at(1), ship, Duration::days(30));
        assert_eq!(lapse.to_rfc3339(), "9999-12-31T23:59:59+00:00");
    }

    #[test]
    fn completing_ends_the_hold_and_a_later_ship_date_extends_it() {
        let hold = Duration::days(7);
        let mut done = Order {
            complete: true,
            ..order(false, Some(at(8)))
        };
        after_patch(&mut done, hold);
        assert_eq!(done.lapses_at, None);
        let mut later = Order {
            ship_date: Some(at(20)),
            ..order(false, Some(at(8)))
        };
        after_patch(&mut later, hold);
        assert_eq!(later.lapses_at, Some(at(27)));
        let mut earlier = Order {
            ship_date: Some(at(1)),
            ..order(false, Some(at(8)))
        };
        after_patch(&mut earlier, hold);
        assert_eq!(earlier.lapses_at, Some(at(8)));
    }

    #[test]
    fn only_incomplete_orders_with_a_lapse_are_counted() {
        let owner = Some(Id::clamped(7));
        assert_eq!(counted(&order(false, Some(at(8))), owner), owner);
        assert_eq!(counted(&order(true, None), owner), None);
        assert_eq!(counted(&order(false, None), owner), None);
        assert_eq!(counted(&order(false, Some(at(8))), None), None);
    }

    #[test]
    fn the_cap_leaves_room_for_the_uncounted_holds_too() {
        assert_eq!(cap_guard(10, 0), Ok(Guard::OpenHoldsBelow(10)));
        assert_eq!(cap_guard(10, 3), Ok(Guard::OpenHoldsBelow(7)));
        let full = Err(RuleViolation::TooManyOpenOrders { cap: 10 });
        assert_eq!(cap_guard(10, 10), full);
        assert_eq!(cap_guard(10, 11), full);
    }

    #[test]
    fn a_hold_lapses_once_due_and_only_while_open() {
        let due = order(false, Some(at(8)));
        assert_eq!(lapse(&due, false, at(7)), Lapse::Keep);
        assert!(matches!(lapse(&due, false, at(8)), Lapse::Mark(_)));
        assert_eq!(lapse(&due, true, at(9)), Lapse::Cancel);
        assert_eq!(lapse(&order(true, None), false, at(9)), Lapse::Keep);
        assert_eq!(lapse(&order(false, None), false, at(9)), Lapse::Keep);
    }
}
