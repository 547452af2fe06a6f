//! `make bench`: measures the pet store on this machine and reports, never fails.
//!
//! - [`cold`]: each function's release `bootstrap` against a minimal Lambda Runtime API;
//! - [`load`]: warm latency and throughput of `petstore-local` on DynamoDB Local;
//! - [`proxy`]: DynamoDB calls and capacity units per operation, counted in between;
//! - [`cost`]: those turned into dollars per million requests;
//! - the in-process router + wrapper overhead is `benches/overhead.rs` (criterion).

pub mod client;
pub mod cold;
pub mod cost;
pub mod load;
pub mod proxy;
pub mod stats;
