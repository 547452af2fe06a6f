//! Webhooks (contract section 9): callers told of their events.
//!
//! Delivery's half (this file's modules; the stored endpoints, deliveries and
//! the HTTP API are the other half): [`sign`] signs as Standard Webhooks 1.0,
//! [`address`] decides which URLs may be called and to which address,
//! [`attempt`] makes one HTTP attempt on that address only, [`schedule`] says
//! when the next one is due, and [`deliver`] runs the two queue handlers
//! (fan-out and delivery) that tie them together.

pub mod address;
pub mod attempt;
pub mod deliver;
pub mod schedule;
pub mod sign;
