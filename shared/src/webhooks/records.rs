//! The webhook records of contract section 9 (JSON, camelCase), and the
//! bodies that create and change an endpoint, each field checked by hand so
//! that its refusal names it.
//!
//! The URL's rules need a look-up (`address::check_url`), so parsing here
//! only says that `url` is a string; the handler checks it before any write.

use super::types::EventType;
use crate::records::{Description, Id, JsonObject, NewCategory, Role, TextField, ValidationError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The rules on an endpoint that its schema cannot state
/// ([`BeyondSchema`](crate::records::BeyondSchema)), written in the records
/// layer so that its list of every record's rules needs nothing of this one.
pub use crate::records::WEBHOOK_ENDPOINT_RULES as RULES;

/// A webhook endpoint, as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookEndpoint {
    pub id: Id,
    /// The key identity that registered it (section 4a).
    pub owner_id: Id,
    pub url: String,
    /// The types it receives; empty: every type its owner may receive.
    pub events: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<Description>,
    pub enabled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disabled_reason: Option<String>,
    /// Since when every attempt has failed (absent when the last succeeded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failing_since: Option<String>,
    /// Whether it receives events now (`GET` answers; `receiving::show`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiving: Option<bool>,
    /// Why not, when it does not (`key_revoked`, `key_banned`, `disabled`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_receiving_reason: Option<String>,
    pub created_at: String,
    /// The newest secret: only in the answers of `POST /webhooks` and
    /// `POST /webhooks/{webhookId}/secret`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

/// One attempt of a delivery, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookAttempt {
    pub at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_code: Option<u16>,
    /// The failure's kind when there was no status to judge by.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub duration_ms: u64,
    /// Made by hand (`POST .../retry`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub manual: bool,
}

/// One event's delivery to one endpoint, as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookDelivery {
    pub webhook_id: Id,
    pub event_id: String,
    #[serde(rename = "type")]
    pub event_type: String,
    /// `pending`, `delivered` or `failed`.
    pub state: String,
    /// The last 20 attempts, oldest first.
    #[serde(default)]
    pub attempts: Vec<WebhookAttempt>,
    #[serde(default)]
    pub attempt_count: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<String>,
    pub created_at: String,
}

/// The body of `POST /webhooks`.
#[derive(Debug, Clone, PartialEq)]
pub struct NewWebhookEndpoint {
    pub url: String,
    pub events: Vec<EventType>,
    pub description: Option<Description>,
}

/// The body of `PATCH /webhooks/{webhookId}`: each field present replaces
/// the stored one (`description: null` removes it).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WebhookEndpointPatch {
    pub url: Option<String>,
    pub events: Option<Vec<EventType>>,
    pub description: Option<Option<Description>>,
    pub enabled: Option<bool>,
}

/// `description`: free text, as a category's (`records::WEBHOOK_TEXT`).
pub const DESCRIPTION: TextField = NewCategory::DESCRIPTION;

impl WebhookEndpointPatch {
    /// Whether it carries no field: the endpoint stays as it is.
    pub fn is_empty(&self) -> bool {
        let WebhookEndpointPatch {
            url,
            events,
            description,
            enabled,
        } = self;
        url.is_none() && events.is_none() && description.is_none() && enabled.is_none()
    }
}

impl NewWebhookEndpoint {
    /// The body as a caller with `role` may send it.
    pub fn parse(body: &JsonObject, role: Role) -> Result<NewWebhookEndpoint, ValidationError> {
        let url = match body.get("url") {
            None | Some(Value::Null) => return Err(ValidationError::new("url is required")),
            Some(value) => url(value)?,
        };
        let events = match body.get("events") {
            None | Some(Value::Null) => Vec::new(),
            Some(value) => events(value, role)?,
        };
        Ok(NewWebhookEndpoint {
            url,
            events,
            description: DESCRIPTION.optional(body)?,
        })
    }
}

impl WebhookEndpointPatch {
    pub fn parse(body: &JsonObject, role: Role) -> Result<WebhookEndpointPatch, ValidationError> {
        let description = match body.get("description") {
            None => None,
            Some(Value::Null) => Some(None),
            Some(_) => Some(DESCRIPTION.optional(body)?),
        };
        let enabled = body
            .get("enabled")
            .map(|v| {
                v.as_bool()
                    .ok_or_else(|| ValidationError::new("enabled must be a boolean"))
            })
            .transpose()?;
        Ok(WebhookEndpointPatch {
            url: body.get("url").map(url).transpose()?,
            // `null`, as empty: every type the key may receive.
            events: match body.get("events") {
                None => None,
                Some(Value::Null) => Some(Vec::new()),
                Some(value) => Some(events(value, role)?),
            },
            description,
            enabled,
        })
    }
}

fn url(value: &Value) -> Result<String, ValidationError> {
    value
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| ValidationError::new("url must be a string"))
}

/// `events`: known types, each once (kept in the order sent), and for a
/// customer `order.*` only (section 9, "Who").
fn events(value: &Value, role: Role) -> Result<Vec<EventType>, ValidationError> {
    let Some(names) = value.as_array() else {
        return Err(ValidationError::new(
            "events must be an array of event types",
        ));
    };
    // The schema's maxItems: at most every type once.
    let most = EventType::all().len();
    if names.len() > most {
        return Err(ValidationError::new(format!(
            "events may list at most {most} types"
        )));
    }
    let mut types = Vec::new();
    for name in names {
        let event_type = name.as_str().and_then(EventType::parse).ok_or_else(|| {
            ValidationError::new(format!("events: {name} is not a known event type"))
        })?;
        if role == Role::Customer && !event_type.is_order() {
            return Err(ValidationError::new(format!(
                "events: a customer key may subscribe only to order.* types, not {}",
                event_type.as_str()
            )));
        }
        if !types.contains(&event_type) {
            types.push(event_type);
        }
    }
    Ok(types)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(value: Value) -> JsonObject {
        match value {
            Value::Object(map) => map,
            _ => JsonObject::new(),
        }
    }

    #[test]
    fn events_are_known_deduplicated_and_order_only_for_customers() {
        let events = json!(["order.placed", "order.placed", "pet.created"]);
        let new = body(json!({"url": "https://example.com", "events": events}));
        let staff = NewWebhookEndpoint::parse(&new, Role::Staff).map(|n| n.events);
        assert_eq!(
            staff,
            Ok(vec![EventType::OrderPlaced, EventType::PetCreated])
        );
        let customer = NewWebhookEndpoint::parse(&new, Role::Customer);
        assert!(customer.is_err_and(|e| e.to_string().contains("pet.created")));
        let unknown = body(json!({"url": "https://example.com", "events": ["order.shipped"]}));
        assert!(NewWebhookEndpoint::parse(&unknown, Role::Staff).is_err());
        assert!(NewWebhookEndpoint::parse(&body(json!({})), Role::Staff).is_err());
    }

    #[test]
    fn a_patch_tells_absent_from_null() {
        let patch = WebhookEndpointPatch::parse(&body(json!({"description": null})), Role::Staff);
        assert_eq!(patch.map(|p| p.description), Ok(Some(None)));
        let patch = WebhookEndpointPatch::parse(&body(json!({})), Role::Staff);
        assert_eq!(patch, Ok(WebhookEndpointPatch::default()));
        let patch = WebhookEndpointPatch::parse(&body(json!({"enabled": "yes"})), Role::Staff);
        assert!(patch.is_err());
    }
}
