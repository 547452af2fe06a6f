//! The window a customer's `shipDate` lies in (contract section 1).
//!
//! A customer asks for a shipping date when placing an order; one in the
//! past or years ahead is a typo or a probe, never an order a store fulfils
//! (and year 0001 or 9999 breaks consumers that format dates). Staff set
//! dates as they need (back-dating a delivery, say), unchecked.

use super::{Caller, NewOrder, Role, ValidationError};
use chrono::{DateTime, Duration, Utc};

/// How far in the past a customer's `shipDate` may lie: a day, so "today" in
/// any time zone (UTC-12 to UTC+14) and a client's clock that is off are
/// still accepted.
pub const SHIP_DATE_GRACE: Duration = Duration::hours(24);

/// How far ahead a customer's `shipDate` may lie: a year, the longest a
/// store plans a delivery.
pub const SHIP_DATE_HORIZON: Duration = Duration::days(365);

/// Whether `ship_date` lies in the window at `now`.
pub fn in_ship_window(ship_date: DateTime<Utc>, now: DateTime<Utc>) -> bool {
    ship_date >= now - SHIP_DATE_GRACE && ship_date <= now + SHIP_DATE_HORIZON
}

impl NewOrder {
    /// Refuses a customer's `shipDate` outside the window; staff's pass.
    pub fn check_ship_window(
        &self,
        caller: &Caller,
        now: DateTime<Utc>,
    ) -> Result<(), ValidationError> {
        match self.ship_date {
            Some(date) if caller.role == Role::Customer && !in_ship_window(date, now) => Err(
                ValidationError::new("shipDate must lie between 24 hours ago and 365 days ahead"),
            ),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{Id, OrderQuantity};

    fn at(rfc3339: &str) -> Result<DateTime<Utc>, chrono::ParseError> {
        DateTime::parse_from_rfc3339(rfc3339).map(|t| t.with_timezone(&Utc))
    }

    fn order(ship_date: DateTime<Utc>) -> NewOrder {
        NewOrder {
            pet_id: Id::clamped(1),
            quantity: OrderQuantity::DEFAULT,
            ship_date: Some(ship_date),
        }
    }

    fn caller(role: Role) -> Caller {
        Caller {
            key_id: Id::clamped(9),
            role,
            open_orders_cap: None,
            webhooks_cap: 1,
        }
    }

    #[test]
    fn a_customer_ship_date_lies_in_the_window() -> Result<(), chrono::ParseError> {
        let now = at("2026-11-25T12:00:00Z")?;
        let customer = caller(Role::Customer);
        let accepted = [
            now,
            now - SHIP_DATE_GRACE,
            now - Duration::hours(13),
            now + SHIP_DATE_HORIZON,
        ];
        for date in accepted {
            assert!(
                order(date).check_ship_window(&customer, now).is_ok(),
                "{date}"
            );
        }
        let refused = [
            at("0001-01-01T00:00:00Z")?,
            at("9999-12-31T23:59:59Z")?,
            now - SHIP_DATE_GRACE - Duration::seconds(1),
            now + SHIP_DATE_HORIZON + Duration::seconds(1),
        ];
        for date in refused {
            assert!(
                order(date).check_ship_window(&customer, now).is_err(),
                "{date}"
            );
            assert!(order(date)
                .check_ship_window(&caller(Role::Staff), now)
                .is_ok());
        }
        Ok(())
    }
}
