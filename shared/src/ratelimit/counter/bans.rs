//! Refusals (429s) and bans, on the same counter item as the counts: a ban is
//! then a condition of every count, and costs nothing while there is none.

use super::{CounterError, Counters, Stored, Subject, Update, MAX_ATTEMPTS, TTL_SLACK};
use crate::db::{classify, n, s};
use crate::ratelimit::clock::UnixSeconds;
use crate::ratelimit::window::RateWindow;
use aws_sdk_dynamodb::types::ReturnValue;
use std::time::Duration;

impl Counters {
    /// Adds `count` refusals made in the minute window `m`; returns the item
    /// after. Refusals of a minute that is already over are dropped: they can
    /// no longer earn a ban.
    pub async fn report_refusals(
        &self,
        subject: &Subject,
        count: u64,
        m: UnixSeconds,
        now: UnixSeconds,
        same_minute: bool,
    ) -> Result<Option<Stored>, CounterError> {
        let mut same = same_minute;
        for _ in 0..MAX_ATTEMPTS {
            let (expression, condition) = if same {
                ("SET refusals = refusals + :c", "refusalMinute = :m")
            } else {
                (
                    "SET refusalMinute = :m, refusals = :c, expiresAt = if_not_exists(expiresAt, :ttl)",
                    "attribute_not_exists(refusalMinute) OR refusalMinute < :m",
                )
            };
            let mut values = vec![(":c", n(count)), (":m", n(m))];
            if !same {
                values.push((":ttl", n(super::ttl_for(RateWindow::Day.start(now)))));
            }
            match self
                .update(subject, expression, condition, values, ReturnValue::AllNew)
                .await?
            {
                Update::Done(item) => return Ok(Some(Stored::read(item)?)),
                Update::ConditionFailed(stored) if stored.refusal_minute > m => return Ok(None),
                Update::ConditionFailed(stored) => same = stored.refusal_minute == m,
            }
        }
        Err(CounterError::Contended {
            operation: "reporting refusals of",
            subject: subject.clone(),
            attempts: MAX_ATTEMPTS,
        })
    }

    /// Bans `subject` from `now`, as `stored` (the item with refusals over the
    /// threshold) calls for: the length doubles for each ban in the last 24
    /// hours. Only one instance's ban takes effect; the others learn it.
    /// Returns when the ban ends.
    pub async fn ban(
        &self,
        subject: &Subject,
        stored: Stored,
        now: UnixSeconds,
        base: Duration,
        max: Duration,
    ) -> Result<UnixSeconds, CounterError> {
        let recent = stored.last_ban_at.is_some_and(|at| at > now - 86_400);
        let level = if recent { stored.ban_level } else { 0 };
        let length = ban_length(base, max, level);
        let until = now + i64::try_from(length.as_secs()).unwrap_or(i64::MAX / 2);
        let last = match stored.last_ban_at {
            Some(_) => "lastBanAt = :last",
            None => "attribute_not_exists(lastBanAt)",
        };
        let condition =
            format!("(attribute_not_exists(bannedUntil) OR bannedUntil <= :now) AND {last}");
        let mut values = vec![
            (":until", n(until)),
            (":level", n(level.saturating_add(1))),
            (":now", n(now)),
            (":zero", n(0)),
            (":ttl", n(until.max(now + 86_400) + TTL_SLACK)),
        ];
        if let Some(at) = stored.last_ban_at {
            values.push((":last", n(at)));
        }
        let expression =
            "SET bannedUntil = :until, banLevel = :level, lastBanAt = :now, refusals = :zero, expiresAt = :ttl";
        match self
            .update(subject, expression, &condition, values, ReturnValue::AllNew)
            .await?
        {
            Update::Done(_) => Ok(until),
            // Another instance banned it first.
            Update::ConditionFailed(current) if current.banned_until > now => {
                Ok(current.banned_until)
            }
            Update::ConditionFailed(_) => Err(CounterError::Contended {
                operation: "banning",
                subject: subject.clone(),
                attempts: 1,
            }),
        }
    }

    /// Lifts a ban and forgets earlier ones and pending refusals. Returns
    /// whether a ban was in force at `now`.
    pub async fn unban(&self, subject: &Subject, now: UnixSeconds) -> Result<bool, CounterError> {
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("PK", s(subject.partition()))
            .update_expression("REMOVE bannedUntil, banLevel, lastBanAt, refusals, refusalMinute")
            .condition_expression("attribute_exists(PK)")
            .return_values(ReturnValue::AllOld)
            .send()
            .await;
        match result {
            Ok(out) => Ok(Stored::read(out.attributes)?.banned_until > now),
            Err(err)
                if err
                    .as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
            {
                Ok(false)
            }
            Err(err) => Err(classify(&self.table, err).into()),
        }
    }
}

/// How long a ban lasts, given how many bans the subject had in the last
/// 24 hours: `base`, doubled for each, at most `max`.
pub fn ban_length(base: Duration, max: Duration, recent_bans: u32) -> Duration {
    let factor = 1u32.checked_shl(recent_bans.min(31)).unwrap_or(u32::MAX);
    base.checked_mul(factor).unwrap_or(max).min(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bans_double_up_to_the_cap() {
        let (base, max) = (Duration::from_secs(900), Duration::from_secs(86_400));
        assert_eq!(ban_length(base, max, 0), Duration::from_secs(900));
        assert_eq!(ban_length(base, max, 1), Duration::from_secs(1_800));
        assert_eq!(ban_length(base, max, 6), Duration::from_secs(57_600));
        assert_eq!(ban_length(base, max, 7), max);
        assert_eq!(ban_length(base, max, 40), max);
    }
}
