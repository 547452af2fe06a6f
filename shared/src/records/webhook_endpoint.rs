//! The rule on a webhook endpoint (contract section 9) that its schema
//! cannot state, written in this layer beside the other records' rules so
//! that [`super::beyond_schema`] gathers them all without naming a layer
//! above: the endpoint's bodies are parsed in `webhooks::records`, which
//! lists these as its `RULES`, and the URL is checked by
//! `webhooks::address::check_url`.

use super::schema_rule::{BeyondSchema, Conformance};

/// The URL's scheme, parts and where its host resolves depend on the
/// world, not on the string's form.
pub const RULES: &[BeyondSchema] = &[BeyondSchema {
    field: "NewWebhookEndpoint.url, WebhookEndpointPatch.url",
    rule: "absolute https, no user or password, no fragment, its host resolving only to public unicast addresses",
    conformance: Conformance::Hook("webhook_urls_within_the_rules"),
}];
