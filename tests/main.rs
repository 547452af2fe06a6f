//! The integration tests: one test binary with a module per area, so the
//! helpers are compiled once and one DynamoDB Local serves every test.
//!
//! Run one area with its module path as the filter:
//! `cargo test -p petstore-tests --test api store::`.

// What the tests share: the test app and its DynamoDB Local (helpers), and
// what template.yaml and openapi.yaml say (deploy).
mod deploy;
mod helpers;

// The areas.
mod abuse;
mod bodies;
mod caching;
mod conditional;
mod cors;
mod data;
mod docs;
mod domain_events;
mod events;
mod front;
mod idempotency;
mod key_rotation;
mod lambda;
mod me;
mod new_account;
mod observe;
mod pages;
mod partitions;
mod pets;
mod pretraffic;
mod ratelimit;
mod refusals;
mod responses;
mod roles;
mod routes;
mod shield;
mod store;
mod upgrade;
mod values;
mod webhooks;
mod webhooks_delivery;
