//! `make bench`: measures the pet store on this machine and reports, never fails.
//!
//! - [`cold`]: each function's release `bootstrap` against a minimal Lambda Runtime API;
//! - [`load`]: warm latency and throughput of `petstore-local` on DynamoDB Local,
//!   with [`oha`] as a cross-check;
//! - [`calls`]: DynamoDB calls and capacity units per operation, counted by the
//!   [`proxy`] in between;
//! - [`cost`]: those turned into dollars per million requests;
//! - [`sizes`]: the arm64 zips; [`targets`]: each figure against its target;
//! - [`partitions`]: the partition-load model of a mix ([`replay`]) replayed
//!   through the [`proxy`] with a [`capture`], attributed to partition keys
//!   by the table's [`layout`] (raw calls in [`dynamo`]);
//! - the in-process router + wrapper overhead is `benches/overhead/` (criterion).
//!
//! Every figure lands in a record of [`results`], which `results.json` is
//! made of and [`report`] prints; the runner (`main.rs`) only sequences the
//! steps, with the [`processes`] they need.

pub mod api_key;
pub mod calls;
pub mod capture;
pub mod client;
pub mod cold;
pub mod cost;
pub mod dynamo;
pub mod events;
pub mod layout;
pub mod load;
pub mod machine;
pub mod oha;
pub mod partitions;
pub mod processes;
pub mod proxy;
pub mod replay;
pub mod report;
pub mod results;
pub mod sizes;
pub mod stats;
pub mod targets;
