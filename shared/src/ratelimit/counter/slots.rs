//! How a subject's item holds its counts so that ONE conditional
//! `UpdateItem` counts a request whatever windows the item last counted
//! (this minute, an earlier minute today, an earlier day, never), with no
//! read first and no guess that can be wrong.
//!
//! DynamoDB's update expressions have no conditional arithmetic: `SET` adds
//! and subtracts, and its only branch is `if_not_exists(path, value)`, on
//! whether an attribute exists. So "the count of this window + 1, or 1 if
//! the item last counted another window" must be the existence of an
//! attribute whose *name* says the window:
//!
//! - **The day** is one attribute named by the day's number since the epoch,
//!   `d<day>`: `d<day> = if_not_exists(d<day>, 0) + 1`. A name is never used
//!   for two days, so it cannot hold another day's count. Each count removes
//!   the three days before (`REMOVE` of an absent attribute is a no-op); an
//!   older one can linger only on an item idle for days past its TTL
//!   (`expiresAt`) that DynamoDB has not deleted yet, and it is never read.
//! - **The minute** cannot have a name per minute: a subject counted with
//!   gaps would leave a name behind at every gap, growing the item (write
//!   units grow with it). Its names are residues instead, in families of
//!   pairwise coprime moduli ([`MODULI`]): family `p` holds the count of
//!   minute `k` in `m<p>_<k mod p>`, and each count removes the family's
//!   other `p - 1` names. So after a count in minute `j`, family `p` holds
//!   exactly `m<p>_<j mod p>`; in a later minute `k` its name is absent (a
//!   new minute: counts from 0) unless `p` divides `k - j`. The value is
//!   `k * SPAN + count`, so a name left from an earlier minute `j` reads as
//!   below `k * SPAN` and is known stale: the condition ignores it, and the
//!   count it takes (stale + 1) stays below `k * SPAN` (at most `SPAN - 1`
//!   counts a minute) and is removed by the next minute's count. At least one
//!   family is right about minute `k` unless `k - j` is a multiple of every
//!   modulus (their product, 5,544 minutes: 3.85 days, past the item's TTL).
//!
//! The condition is then exact for every stored state: the day's attribute
//! is below the day's limit (absent is 0), every family's attribute is below
//! `k * SPAN + minute limit` (true of a stale one, whose count is not this
//! minute's), and at least one family counts this minute (absent, or at
//! least `k * SPAN`). Only a request over a limit, a ban, a clock behind the
//! item's minute (`lastMinute`: windows never go back) or an item idle a
//! multiple of 5,544 minutes fails it; the last two are retried with what the
//! failure returned (`ALL_OLD`), the last by [`Count::Reset`].

use super::super::clock::UnixSeconds;
use super::super::window::{Limits, RateWindow, Usage};
use crate::db::{n, Item};
use aws_sdk_dynamodb::types::AttributeValue;
use std::sync::{Arc, Mutex, PoisonError};

/// The minute's slot families: pairwise coprime, so all are stale together
/// only after a gap that is a multiple of their product (5,544 minutes).
/// Each count removes `sum(p - 1)` = 31 names.
const MODULI: [i64; 4] = [7, 8, 9, 11];

/// How far apart consecutive minutes are in a slot's value: more than any
/// minute's count (a minute limit above it counts as `SPAN - 1`).
const SPAN: i128 = 1_000_000_000_000;

/// How many days before the counted one each count removes.
const DAYS_REMOVED: i64 = 3;

/// The attribute holding the start of the minute last counted (Unix s).
pub(super) const LAST_MINUTE: &str = "lastMinute";

/// Which update counts a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Count {
    /// The one update for every stored state.
    Any,
    /// Every family stale (an item idle a multiple of 5,544 minutes): set
    /// the minute's slots to 1, if no count of this minute got in first.
    Reset,
}

/// An update's expression, condition and values.
pub(super) struct Expression {
    pub update: Arc<str>,
    pub condition: Arc<str>,
    pub values: Vec<(&'static str, AttributeValue)>,
}

/// The text of a count's update and condition. It names only the minute's
/// slots and the day's (every number is a value), so it is the same for
/// every request of a minute: [`Count::text`] builds it once a minute, not
/// once a request (57 `format!`s, about 70,000 instructions of a warm
/// request under callgrind: `petstore-warm-instructions`).
#[derive(Clone)]
struct Text {
    update: Arc<str>,
    condition: Arc<str>,
}

/// The text last built for each kind of count, with its minute number.
static BUILT: Mutex<[Option<(i64, Text)>; 2]> = Mutex::new([None, None]);

fn minute_slot(p: i64, residue: i64) -> String {
    format!("m{p}_{residue}")
}

/// The family (index in [`MODULI`]) and residue a minute slot's name
/// `m<p>_<r>` says, exactly as [`minute_slot`] writes it; `None` for any
/// other name.
fn slot_of(name: &str) -> Option<(usize, i64)> {
    let (p, r) = name.strip_prefix('m')?.split_once('_')?;
    let (p, r) = (decimal(p)?, decimal(r)?);
    let family = MODULI.iter().position(|q| *q == p)?;
    (r < p).then_some((family, r))
}

/// `digits` as `{}` writes a non-negative number: ASCII digits, no sign, no
/// leading zero.
fn decimal(digits: &str) -> Option<i64> {
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    canonical.then(|| digits.parse().ok()).flatten()
}

fn day_slot(day: i64) -> String {
    format!("d{day}")
}

fn minute_number(minute: UnixSeconds) -> i64 {
    minute.div_euclid(RateWindow::Minute.seconds())
}

fn day_number(day: UnixSeconds) -> i64 {
    day.div_euclid(RateWindow::Day.seconds())
}

impl Count {
    /// Counting one request against `limits` in the minute starting at `m`
    /// (and its day), at `now`; the item expires at `ttl`.
    pub fn expression(
        self,
        limits: Limits,
        now: UnixSeconds,
        m: UnixSeconds,
        ttl: UnixSeconds,
    ) -> Expression {
        let k = minute_number(m);
        let base = i128::from(k) * SPAN;
        let text = self.text(k);
        let mut values = vec![
            (":one", n(1)),
            (":zero", n(0)),
            (":m", n(m)),
            (":now", n(now)),
            (":ttl", n(ttl)),
            (":dl", n(limits.per_day)),
        ];
        match self {
            Count::Any => {
                let per_minute = i128::from(limits.per_minute).min(SPAN - 1);
                values.extend([(":base", n(base)), (":cap", n(base + per_minute))]);
            }
            // No count of this minute got in (`lastMinute < :m`), so it has room.
            Count::Reset => values.push((":first", n(base + 1))),
        }
        Expression {
            update: text.update,
            condition: text.condition,
            values,
        }
    }

    /// The text of this count in minute number `k`: the one built last, if
    /// it was for `k`.
    fn text(self, k: i64) -> Text {
        let kind = match self {
            Count::Any => 0,
            Count::Reset => 1,
        };
        let mut built = BUILT.lock().unwrap_or_else(PoisonError::into_inner);
        match &built[kind] {
            Some((minute, text)) if *minute == k => text.clone(),
            _ => {
                let text = self.build_text(k);
                built[kind] = Some((k, text.clone()));
                text
            }
        }
    }

    /// The text of this count in minute number `k`, built.
    fn build_text(self, k: i64) -> Text {
        let (mut set, mut remove) = (Vec::new(), Vec::new());
        let (mut room, mut counts_this_minute) = (Vec::new(), Vec::new());
        for p in MODULI {
            let slot = minute_slot(p, k.rem_euclid(p));
            set.push(match self {
                Count::Any => format!("{slot} = if_not_exists({slot}, :base) + :one"),
                Count::Reset => format!("{slot} = :first"),
            });
            let others = (0..p).filter(|r| *r != k.rem_euclid(p));
            remove.extend(others.map(|r| minute_slot(p, r)));
            room.push(format!("(attribute_not_exists({slot}) OR {slot} < :cap)"));
            counts_this_minute.push(format!("attribute_not_exists({slot}) OR {slot} >= :base"));
        }
        let day = day_number(k * RateWindow::Minute.seconds());
        let slot = day_slot(day);
        set.push(format!("{slot} = if_not_exists({slot}, :zero) + :one"));
        set.push(format!("{LAST_MINUTE} = :m, expiresAt = :ttl"));
        remove.extend((1..=DAYS_REMOVED).map(|back| day_slot(day - back)));
        let window = match self {
            Count::Any => format!("(attribute_not_exists({LAST_MINUTE}) OR {LAST_MINUTE} <= :m)"),
            Count::Reset => format!("(attribute_not_exists({LAST_MINUTE}) OR {LAST_MINUTE} < :m)"),
        };
        let mut condition = vec![
            window,
            "(attribute_not_exists(bannedUntil) OR bannedUntil <= :now)".to_string(),
            format!("(attribute_not_exists({slot}) OR {slot} < :dl)"),
        ];
        if self == Count::Any {
            condition.extend(room);
            condition.push(format!("({})", counts_this_minute.join(" OR ")));
        }
        Text {
            update: format!("SET {} REMOVE {}", set.join(", "), remove.join(", ")).into(),
            condition: condition.join(" AND ").into(),
        }
    }
}

/// The minute slots an item holds: per family, the minute its one slot's
/// value was counted in (`value / SPAN`: its name is that minute's residue)
/// and its count (`value % SPAN`), if it holds one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MinuteSlots([Option<(i64, u64)>; MODULI.len()]);

impl MinuteSlots {
    /// Reads the slots of `item`; a value that is not a number is absent
    /// (of two slots of a family, the lower residue's). One pass over the
    /// item's names, none made: the 35 names looked up one by one, each made
    /// with `format!`, were about 22,000 instructions a count.
    pub(super) fn read(item: &Item) -> MinuteSlots {
        let mut slots = MinuteSlots::default();
        let mut residues = [None::<i64>; MODULI.len()];
        for (name, value) in item {
            let Some((family, r)) = slot_of(name) else {
                continue;
            };
            if residues[family].is_some_and(|held| held < r) {
                continue;
            }
            let read = || {
                let value: i128 = value.as_n().ok()?.parse().ok()?;
                let minute = i64::try_from(value.div_euclid(SPAN)).ok()?;
                Some((minute, u64::try_from(value.rem_euclid(SPAN)).ok()?))
            };
            if let Some(read) = read() {
                slots.0[family] = Some(read);
                residues[family] = Some(r);
            }
        }
        slots
    }

    /// What the families say of the minute starting at `m`: `None` when
    /// every family holds a stale slot (only [`Count::Reset`] can count it),
    /// else the minute's count (0 when none counted it).
    pub(super) fn count_in(&self, m: UnixSeconds) -> Option<u64> {
        let k = minute_number(m);
        let mut count = None;
        for (slot, p) in self.0.iter().zip(MODULI) {
            match slot {
                // This minute's own count.
                Some((minute, n)) if *minute == k => count = Some(count.unwrap_or(0).max(*n)),
                // Another minute's, under this minute's name: says nothing.
                Some((minute, _)) if minute.rem_euclid(p) == k.rem_euclid(p) => {}
                // This minute's name absent: none counted it yet.
                _ => count = Some(count.unwrap_or(0)),
            }
        }
        count
    }
}

/// The counts an item records: of the minute it last counted
/// (`lastMinute`) and of that minute's day; nothing for an item that never
/// counted (it may hold only refusals).
pub(super) fn usage_of(item: &Item, slots: &MinuteSlots) -> Usage {
    let Some(minute) = number(item, LAST_MINUTE) else {
        return Usage::default();
    };
    usage_in(item, slots, minute)
}

/// The counts `item` records of the minute starting at `minute` and of its day.
pub(super) fn usage_in(item: &Item, slots: &MinuteSlots, minute: UnixSeconds) -> Usage {
    let day = RateWindow::Day.start(minute);
    let day_count = number(item, &day_slot(day_number(day))).unwrap_or(0);
    Usage {
        minute,
        minute_count: slots.count_in(minute).unwrap_or(0),
        day,
        day_count: u64::try_from(day_count).unwrap_or(0),
    }
}

fn number(item: &Item, name: &str) -> Option<i64> {
    item.get(name)?.as_n().ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An item as a count of `count` requests in the minute `gap` minutes
    /// before `m` leaves it (every family's slot of that minute).
    fn counted_before(m: UnixSeconds, gap: i64, count: i128) -> Item {
        let j = minute_number(m) - gap;
        MODULI
            .iter()
            .map(|p| {
                (
                    minute_slot(*p, j.rem_euclid(*p)),
                    n(i128::from(j) * SPAN + count),
                )
            })
            .collect()
    }

    #[test]
    fn a_slot_counts_its_own_minute_and_a_stale_one_nothing() {
        let m = 1_893_456_060;
        let count_in = |gap| MinuteSlots::read(&counted_before(m, gap, 5)).count_in(m);
        assert_eq!(count_in(0), Some(5), "this minute's count");
        assert_eq!(
            count_in(1),
            Some(0),
            "every family's name absent: a new minute"
        );
        assert_eq!(count_in(7), Some(0), "family 7 stale, the others absent");
        assert_eq!(count_in(693), Some(0), "only family 8 absent");
        assert_eq!(count_in(5_544), None, "every family stale: a reset");
        assert_eq!(MinuteSlots::read(&Item::new()).count_in(m), Some(0));
    }

    /// The text is built once a minute and then reused: each minute's
    /// names its own slots, whichever was built before it.
    #[test]
    fn each_minutes_expression_names_that_minutes_slots() {
        let limits = Limits::new(60, 1_000);
        let m = 1_893_456_060;
        for (minute, count) in [(m, Count::Any), (m + 60, Count::Any), (m, Count::Reset)] {
            let k = minute_number(minute);
            let again = count.expression(limits, minute + 1, minute, minute + 86_400);
            let fresh = count.build_text(k);
            assert_eq!(again.update, fresh.update);
            assert_eq!(again.condition, fresh.condition);
            let slot = minute_slot(7, k.rem_euclid(7));
            assert!(
                again.update.starts_with(&format!("SET {slot} = ")),
                "{}",
                again.update
            );
        }
        let next = Count::Any.expression(limits, m + 61, m + 60, m + 86_400);
        let this = Count::Any.expression(limits, m + 1, m, m + 86_400);
        assert_ne!(next.update, this.update);
    }

    #[test]
    fn a_slot_is_read_under_its_exact_name_only() {
        let m = 1_893_456_060;
        let k = minute_number(m);
        let mut item = counted_before(m, 0, 5);
        let read = MinuteSlots::read(&item);
        assert!(read.0.iter().all(|slot| *slot == Some((k, 5))), "{read:?}");
        // Names minute_slot never writes, holding this minute's count: not slots.
        let value = n(i128::from(k) * SPAN + 9);
        for name in [
            "m07_0", "m7_07", "m+7_0", "m7_7", "m5_0", "m7_", "x7_0", "m7_0_",
        ] {
            item.insert(name.to_string(), value.clone());
        }
        assert_eq!(MinuteSlots::read(&item), read);
        // Of two slots of a family, the lower residue's.
        let family_7: Vec<i64> = (0..7)
            .filter(|r| item.contains_key(&minute_slot(7, *r)))
            .collect();
        assert_eq!(family_7.len(), 1);
        let lower = (family_7[0] + 6) % 7;
        item.insert(minute_slot(7, lower), n(i128::from(k) * SPAN + 3));
        let expected = if lower < family_7[0] { 3 } else { 5 };
        assert_eq!(MinuteSlots::read(&item).0[0], Some((k, expected)));
        item.insert(minute_slot(7, lower), AttributeValue::S("3".into()));
        assert_eq!(
            MinuteSlots::read(&item).0[0],
            Some((k, 5)),
            "not a number: absent"
        );
    }

    /// The families' moduli are pairwise coprime, so all are stale together
    /// only after a multiple of their product.
    #[test]
    fn the_families_are_stale_together_only_after_a_multiple_of_their_product() {
        let product: i64 = MODULI.iter().product();
        assert_eq!(product, 5_544);
        let all_stale = |gap: i64| MODULI.iter().all(|p| gap % p == 0);
        let gaps: Vec<i64> = (1..=2 * product).filter(|gap| all_stale(*gap)).collect();
        assert_eq!(gaps, vec![product, 2 * product]);
    }
}
