//! Webhooks (contract section 9): callers told of their events.
//!
//! Two halves. The API's: [`types`] maps the bus's detail-types to
//! section 9's types, [`records`] are the records and bodies of the HTTP
//! API, [`endpoints`] and [`deliveries`] the stored items and their
//! conditional writes (listed on the existing GSIs, [`list`]), and [`queue`]
//! the deliveries queue's messages, [`subscriptions`] the version every change
//! of who receives what writes. Delivery's: [`sign`] signs as Standard
//! Webhooks 1.0 with the secrets [`secrets`] keeps sealed, [`address`]
//! decides which URLs may be called and to which address, [`attempt`]
//! makes one HTTP attempt on that address only, [`schedule`] says when the next one is due, and [`deliver`] runs the two
//! queue handlers (fan-out and delivery) that tie them together.

pub mod address;
pub mod attempt;
pub mod deliver;
pub mod deliveries;
pub mod endpoints;
pub mod held;
pub(crate) mod list;
pub mod queue;
pub mod receiving;
pub mod records;
pub mod schedule;
pub mod secrets;
pub mod sign;
pub mod subscriptions;
pub mod types;
