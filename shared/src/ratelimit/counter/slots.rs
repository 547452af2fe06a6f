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
//!
//! # The slot families, drawn
//!
//! One item per subject in the counter table (`PK` = `LIMIT#key:<id>` or
//! `LIMIT#ip:<address>`); what this module writes of it, `S` standing for
//! [`SPAN`], `k` for a minute's number (its start in Unix seconds / 60) and
//! `day` for a day's (Unix seconds / 86,400):
//!
//! ```text
//!   lastMinute       the start of the minute last counted (Unix s)
//!   d<day>           the day's count                    (1 name: the day's)
//!   m7_<k mod 7>   \
//!   m8_<k mod 8>    |  the count of minute k, as k*S + count, under one
//!   m9_<k mod 9>    |  name per family: the residue of the minute it was
//!   m11_<k mod 11> /   counted in (4 of the 35 names the families take)
//!   expiresAt        TTL; refusals and bans beside them (`bans`)
//! ```
//!
//! A request in minute `k` picks, in each family `p`, the slot
//! `m<p>_<k mod p>`: one `UpdateItem` sets those four and the day's, and
//! removes every other name of each family and the three days before:
//!
//! ```text
//!   SET     m<p>_<k mod p> = if_not_exists(m<p>_<k mod p>, k*S) + 1   (each p)
//!           d<day> = if_not_exists(d<day>, 0) + 1
//!           lastMinute = <minute's start>, expiresAt = <ttl>
//!   REMOVE  m<p>_<r> for every r != k mod p                 (31 names)
//!           d<day-1>, d<day-2>, d<day-3>
//!   IF      lastMinute <= the minute, no ban in force, d<day> < day limit,
//!           every family's slot < k*S + minute limit (a stale one is),
//!           and some family's slot absent or >= k*S (it counts minute k)
//! ```
//!
//! Three requests in minute 1000, then one in minute 1007 (residues mod
//! 7, 8, 9, 11: 6, 0, 1, 10 and 6, 7, 8, 6):
//!
//! ```text
//!   after minute 1000        after the request in minute 1007
//!   m7_6   = 1000*S + 3      m7_6  = 1000*S + 4  same name (7 divides 1007 - 1000),
//!                                                 another minute's value: stale
//!   m8_0   = 1000*S + 3  x   m8_7  = 1007*S + 1  absent before: counted from 0
//!   m9_1   = 1000*S + 3  x   m9_8  = 1007*S + 1
//!   m11_10 = 1000*S + 3  x   m11_6 = 1007*S + 1
//!                        x = removed by the count
//! ```
//!
//! **A window's count** is read, not summed (both windows are fixed: the
//! minute from its first second, the day from midnight UTC). The day's is
//! `d<day>`. The minute's ([`MinuteSlots::count_in`]) is `value mod S` of a
//! family whose slot holds minute `k` (`value div S = k`: every count of
//! minute `k` wrote each such slot); else 0 if a family's name for `k` is
//! absent (no count of minute `k` yet); else unknown: every family's name
//! for `k` holds another minute. Above, minute 1007 reads 1 (families 8, 9
//! and 11; family 7 says nothing).
//!
//! **A slot is reset** by its removal: every count removes each family's
//! names but its minute's, so after any count a family holds one name. A
//! stale value (an earlier minute's under this minute's name) goes on
//! counting below `k*S`, which the condition passes over, until a count in
//! a minute of another residue removes it. When every family is stale at
//! once (an idle gap a multiple of 5,544 minutes), the count's condition
//! fails, the item it returns says so, and [`Count::Reset`] sets the four
//! slots to `k*S + 1`, on condition that no count of minute `k` came first
//! (`lastMinute` below its start).

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
mod tests;
