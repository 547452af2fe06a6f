//! `make run`: both functions' routers on one port, through the same wrapper
//! and handlers as in Lambda, against DynamoDB Local.
//!
//! The router is served directly with axum rather than through `cargo lambda
//! watch`: it starts in a second, needs nothing but cargo, and serves every
//! request concurrently on tokio, as many warm Lambda instances would, so races
//! the contract forbids show up locally too.

use petstore::ratelimit::keys::NewApiKey;
use petstore::ratelimit::Plan;
use std::net::SocketAddr;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    petstore::telemetry::init();
    let config = petstore::config::Config::from_env()?;
    let endpoint = std::env::var("AWS_ENDPOINT_URL_DYNAMODB")
        .unwrap_or_else(|_| "http://127.0.0.1:8000".to_string());
    let client = petstore::local_client(&endpoint).await;
    let app = petstore::App::new(config, client);
    app.create_tables().await?;
    let port: u16 = match std::env::var("PORT") {
        Ok(raw) => raw.parse()?,
        Err(_) => 3000,
    };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    print_demo_keys(&app).await?;
    // Both functions' routes on one port, as API Gateway presents them.
    let router = petstore::http::service(pets::routes().merge(store::routes()), app);
    println!("Pet store API listening on http://127.0.0.1:{port} (DynamoDB at {endpoint})");
    axum::serve(
        listener,
        router.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await?;
    Ok(())
}

/// One fresh key per plan, so `make run` can be tried at once (more with `make key`).
/// The enterprise key's limits are small, to show a 429 by hand.
async fn print_demo_keys(
    app: &petstore::App,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let plans = [
        (Plan::Free, None),
        (Plan::Pro, None),
        (Plan::Business, None),
        (Plan::Enterprise, Some((5, 100))),
    ];
    println!("Demo API keys (send as X-API-Key):");
    for (plan, limits) in plans {
        let new = NewApiKey::new(plan, limits, Some(format!("demo {}", plan.as_str())))?;
        let issued = app.limiter.keys().create(new, chrono::Utc::now()).await?;
        let record = &issued.record;
        println!(
            "  {:<10} {}  ({}/minute, {}/day, id {})",
            plan.as_str(),
            issued.key,
            record.per_minute,
            record.per_day,
            record.id
        );
    }
    Ok(())
}
