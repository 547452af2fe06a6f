//! The data table's upkeep (`petstore-admin data ...`), on DynamoDB Local:
//! `check` finds each broken invariant (`webhooks`: those of the webhook
//! items), `copy` carries a stage's data into another's table.

pub mod check;
mod copy;
mod webhooks;
