//! The `store` function's routes: orders and inventory.
//!
//! One module per resource, each with its router and handlers. A handler
//! parses (records), calls the database layer (which applies the rules), and
//! answers; every error becomes the Error record through `ApiError`.

mod inventory;
mod orders;

use axum::Router;
use petstore::App;

/// Every route this function serves (the wrapper and `GET /openapi.json` are
/// added by [`petstore::http::service`]).
pub fn routes() -> Router<App> {
    orders::routes().merge(inventory::routes())
}
