//! The data table's upkeep, as `petstore-admin data ...` runs it: a library
//! too, so the integration tests run exactly what an operator runs.
//!
//! - [`check`]: every invariant the service's writes keep, over the whole table.
//! - [`copy`]: a stage's data exported as JSON lines, imported into another's table.
//! - [`migrate`]: the numbered migrations between stored layouts, their backfills.
//! - [`restore`]: a backup or point in time restored into a new table, made whole.
//! - [`scan`]: reading a whole table, in parallel segments.
//!
//! `src/cli/` (the command line) and `src/commands/` (what each command does)
//! are the binary's own modules, declared by `main.rs`, not this library's.

pub mod check;
pub mod copy;
pub mod dynamo_json;
pub mod migrate;
pub mod restore;
pub mod scan;
