//! Record ids: time-ordered, random in their low bits, never coordinated.
//!
//! An id is the milliseconds since 2024-01-01 (41 bits, good until 2093) shifted
//! left by 12, plus 12 random bits: at most 2^53-1, so JavaScript clients hold
//! it exactly. No counter item means no hot key and one write fewer per create;
//! uniqueness is enforced where it matters, by `attribute_not_exists(PK)` on the
//! put, and a create that collides simply draws again. Because ids grow with
//! time, "newest first" is "highest id first".

use crate::records::Id;
use chrono::{DateTime, Utc};

/// 2024-01-01T00:00:00Z in Unix milliseconds.
const EPOCH_MILLIS: i64 = 1_704_067_200_000;
const RANDOM_BITS: u32 = 12;

/// The highest id a record created at or before `t` can have: every id
/// up to it was made no later than `t`'s millisecond.
pub(crate) fn last_id_at(t: DateTime<Utc>) -> u64 {
    let millis = (t.timestamp_millis() - EPOCH_MILLIS).max(0) as u64;
    (millis << RANDOM_BITS) | ((1 << RANDOM_BITS) - 1)
}

/// A fresh id for a record created at `now`.
pub fn new_id(now: DateTime<Utc>) -> Id {
    let millis = (now.timestamp_millis() - EPOCH_MILLIS).max(0) as u64;
    let random = rand::random::<u64>() & ((1 << RANDOM_BITS) - 1);
    Id::clamped((millis << RANDOM_BITS) | random)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn ids_are_valid_and_grow_with_time() -> Result<(), Box<dyn std::error::Error>> {
        let early = Utc
            .with_ymd_and_hms(2026, 1, 1, 0, 0, 0)
            .single()
            .ok_or("a valid instant")?;
        let later = Utc
            .with_ymd_and_hms(2026, 1, 1, 0, 0, 1)
            .single()
            .ok_or("a valid instant")?;
        let a = new_id(early);
        let b = new_id(later);
        assert!(a < b);
        assert!(b.get() <= crate::records::MAX_ID);
        let far = Utc
            .with_ymd_and_hms(2090, 1, 1, 0, 0, 0)
            .single()
            .ok_or("a valid instant")?;
        assert!(new_id(far).get() <= crate::records::MAX_ID);
        Ok(())
    }
}
