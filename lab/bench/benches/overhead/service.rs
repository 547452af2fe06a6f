//! The one place that names the service's crate: each function's routes with
//! the wrapper, as the function serves them, on a DynamoDB client of ours.

use axum::Router;

pub struct Routers {
    pub pets: Router,
    pub store: Router,
}

/// On the default configuration, as a function with no settings runs.
pub fn routers(client: aws_sdk_dynamodb::Client) -> Result<Routers, petstore::config::ConfigError> {
    let config = petstore::config::Config::from_lookup(|_| None)?;
    let app = petstore::App::new(config, client);
    Ok(Routers {
        pets: petstore::http::service(pets::routes(), app.clone()),
        store: petstore::http::service(store::routes(), app),
    })
}
