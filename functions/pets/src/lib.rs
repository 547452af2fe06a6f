//! The `pets` function's routes: pets and categories, and a key's own view
//! (`GET /me`).
//!
//! One module per resource, each with its router and handlers. A handler
//! parses (records), calls the database layer (which applies the rules), and
//! answers; every error becomes the Error record through `ApiError`.

mod categories;
mod me;
mod pets;

use axum::Router;
use petstore::App;

/// Every route this function serves (the wrapper and `GET /openapi.json` are
/// added by [`petstore::http::service`]).
pub fn routes() -> Router<App> {
    pets::routes()
        .merge(categories::routes())
        .merge(me::routes())
}
