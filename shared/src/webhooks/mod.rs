//! Webhooks (contract section 9): callers told of their events.
//!
//! The API's half (webhooks-api): [`types`] maps the bus's detail-types to
//! section 9's types, [`records`] are the records and bodies of the HTTP
//! API, [`endpoints`] and [`deliveries`] the stored items and their
//! conditional writes (listed on the existing GSIs, [`list`]), and [`queue`]
//! the deliveries queue's messages. [`sign`] (Standard Webhooks 1.0) and
//! [`address`] (which URLs may be called) are delivery's, used here to make
//! a secret and to check a URL at registration.

pub mod address;
pub mod deliveries;
pub mod endpoints;
pub(crate) mod list;
pub mod queue;
pub mod records;
pub mod sign;
pub mod types;
