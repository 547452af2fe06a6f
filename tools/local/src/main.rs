//! `make run`: both functions' routers on one port, through the same wrapper
//! and handlers as in Lambda, against DynamoDB Local.
//!
//! The router is served directly with axum rather than through `cargo lambda
//! watch`: it starts in a second, needs nothing but cargo, and serves every
//! request concurrently on tokio, as many warm Lambda instances would, so races
//! the contract forbids show up locally too.

use std::net::SocketAddr;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    petstore::telemetry::init();
    let config = petstore::config::Config::from_env()?;
    let endpoint =
        std::env::var("AWS_ENDPOINT_URL_DYNAMODB").unwrap_or_else(|_| "http://127.0.0.1:8000".to_string());
    let client = petstore::local_client(&endpoint).await;
    let app = petstore::App::new(config, client);
    app.create_tables().await?;
    let port: u16 = match std::env::var("PORT") {
        Ok(raw) => raw.parse()?,
        Err(_) => 3000,
    };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let router = petstore::http::local_router(app);
    println!("Pet store API listening on http://127.0.0.1:{port} (DynamoDB at {endpoint})");
    axum::serve(listener, router.into_make_service_with_connect_info::<SocketAddr>())
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
