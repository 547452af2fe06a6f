//! A delivery item as the API shows it.

use crate::db::{from_item, DbError, Item};
use crate::webhooks::records::{WebhookAttempt, WebhookDelivery};
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};
use std::collections::HashMap;

/// A claimed attempt as a delivery's `attempts` shows it until its
/// outcome is recorded: made (or being made) and not yet known.
pub const IN_PROGRESS: &str = "in_progress";

/// A delivery item as the API shows it: its recorded attempts, then those
/// claimed and not yet recorded (`in_progress`, how long so far), each an
/// attempt the receiver may already have had.
pub(super) fn shown(item: Item) -> Result<WebhookDelivery, DbError> {
    let claims = match item.get("claims") {
        Some(AttributeValue::M(claims)) => claims.clone(),
        _ => HashMap::new(),
    };
    let mut delivery: WebhookDelivery = from_item(item)?;
    let now = Utc::now();
    let mut claimed: Vec<WebhookAttempt> = claims
        .values()
        .filter_map(|claim| {
            let AttributeValue::M(claim) = claim else {
                return None;
            };
            let at = match claim.get("at") {
                Some(AttributeValue::S(at)) => at.clone(),
                _ => return None,
            };
            let since = at.parse::<DateTime<Utc>>().ok()?;
            Some(WebhookAttempt {
                duration_ms: u64::try_from((now - since).num_milliseconds()).unwrap_or(0),
                at,
                status_code: None,
                error: Some(IN_PROGRESS.to_string()),
                manual: claim.get("manual") == Some(&AttributeValue::Bool(true)),
            })
        })
        .collect();
    claimed.sort_by(|a, b| a.at.cmp(&b.at));
    delivery.attempt_count += u32::try_from(claimed.len()).unwrap_or(0);
    delivery.attempts.extend(claimed);
    let kept = delivery.attempts.len().saturating_sub(KEPT_ATTEMPTS);
    delivery.attempts.drain(..kept);
    Ok(delivery)
}

/// The last attempts a delivery shows.
pub const KEPT_ATTEMPTS: usize = 20;
