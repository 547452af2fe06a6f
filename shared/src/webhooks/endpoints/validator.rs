//! An endpoint's validator (contract 4c, 1.3.0), made as every record's is
//! (`records::validator`): the hash of the endpoint as the API sends it.
//!
//! Two things in an endpoint's answers are no state of the endpoint: its
//! secret (only in the answer that made it) and, in a `GET`'s answer,
//! `receiving` and `notReceivingReason`, decided from its owner key's state
//! at that moment. So an answer's `ETag` is the hash of the endpoint as
//! sent without the secret: a `GET`'s covers `receiving` too (so a 304 is
//! never sent for a copy whose `receiving` is out of date), a change's
//! answer has none. `If-Match` on a change is met by the validator of any
//! of these forms of the endpoint as stored now, whatever `receiving` the
//! `GET` showed: a change is held to the endpoint's own state, which is all
//! it can overwrite, and checking it costs no read of the owner's key. The
//! write is then conditional on every attribute the endpoint is shown from
//! being as read ([`Changes::as_read`]), so a write landing in between (a
//! delivery's `failingSince`, another change) makes it 412.

use super::Endpoint;
use crate::db::expr::Expr;
use crate::db::{Changes, DbError};
use crate::webhooks::receiving::NotReceiving;
use crate::webhooks::records::WebhookEndpoint;

/// What the `PRECONDITION_FAILED` message calls an endpoint.
const KIND: &str = "webhook endpoint";

impl Changes {
    /// 412 unless the request's `If-Match` names the validator of
    /// `endpoint` (as read) in one of the forms an answer sends it in.
    pub(super) fn check_endpoint_precondition(&self, endpoint: &Endpoint) -> Result<(), DbError> {
        let changed = endpoint.record(None);
        let first = self.check_precondition(KIND, endpoint.id, &changed);
        if first.is_ok() {
            return first;
        }
        let met = shown_by_get(&changed)
            .iter()
            .any(|shown| self.check_precondition(KIND, endpoint.id, shown).is_ok());
        if met {
            Ok(())
        } else {
            first
        }
    }

    /// `expr` on the condition that every attribute `endpoint` is shown
    /// from is as read, when the request names validators.
    pub(super) fn endpoint_as_read(
        &self,
        expr: Expr,
        endpoint: &Endpoint,
    ) -> Result<Expr, DbError> {
        self.as_read(expr, &endpoint.record(None))
    }
}

/// `changed` (an endpoint as a change answers it) as a `GET` may have shown
/// it: receiving, or not for each reason there is.
fn shown_by_get(changed: &WebhookEndpoint) -> Vec<WebhookEndpoint> {
    let receiving = WebhookEndpoint {
        receiving: Some(true),
        not_receiving_reason: None,
        ..changed.clone()
    };
    let not_receiving = NotReceiving::REASONS.iter().map(|reason| WebhookEndpoint {
        receiving: Some(false),
        not_receiving_reason: Some((*reason).to_string()),
        ..changed.clone()
    });
    std::iter::once(receiving).chain(not_receiving).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{ETag, Id, IfMatch, Role};
    use crate::webhooks::receiving::{decide, KeyState};
    use chrono::Utc;

    fn endpoint(enabled: bool) -> Endpoint {
        Endpoint {
            id: Id::clamped(7),
            owner_id: Id::clamped(42),
            owner_role: Role::Customer,
            url: "https://example.com/hook".into(),
            events: vec![],
            description: None,
            enabled,
            disabled_reason: None,
            secrets: vec![],
            created_at: "2030-01-01T00:00:00.000Z".into(),
            failing_since: None,
            delivery_shards: 1,
        }
    }

    #[test]
    fn every_receiving_decision_a_get_can_show_is_one_of_its_forms() {
        let now = Utc::now();
        let key = |revoked, banned: bool| KeyState {
            role: Role::Customer,
            revoked,
            expires_at: None,
            banned_until: banned.then(|| now + chrono::Duration::hours(1)),
        };
        for enabled in [true, false] {
            let changed = endpoint(enabled).record(None);
            let forms = shown_by_get(&changed);
            let states = [
                None,
                Some(key(false, false)),
                Some(key(true, false)),
                Some(key(false, true)),
            ];
            for state in states {
                let decided = decide(enabled, state.as_ref(), now);
                let shown = WebhookEndpoint {
                    receiving: Some(decided.is_ok()),
                    not_receiving_reason: decided.err().map(|why| why.reason().to_string()),
                    ..changed.clone()
                };
                assert!(forms.contains(&shown), "{shown:?}");
            }
        }
    }

    #[test]
    fn another_state_of_the_endpoint_meets_no_if_match() -> Result<(), serde_json::Error> {
        let stored = endpoint(true);
        let moved = Endpoint {
            url: "https://example.com/other".into(),
            ..stored.clone()
        };
        let tags_of = |endpoint: &Endpoint| -> Result<Vec<ETag>, serde_json::Error> {
            let changed = endpoint.record(None);
            let mut tags = vec![ETag::of(&changed)?];
            for shown in shown_by_get(&changed) {
                tags.push(ETag::of(&shown)?);
            }
            Ok(tags)
        };
        let (now, before) = (tags_of(&stored)?, tags_of(&moved)?);
        for tag in &before {
            let asked = IfMatch::Tags(vec![tag.as_str().to_string()]);
            assert!(!now.iter().any(|current| asked.matches(current)));
        }
        Ok(())
    }
}
