//! `make run`: both functions' routers on one port, through the same wrapper
//! and handlers as in Lambda, against DynamoDB Local.
//!
//! The router is served directly with axum rather than through `cargo lambda
//! watch`: it starts in a second, needs nothing but cargo, and serves every
//! request concurrently on tokio, as many warm Lambda instances would, so races
//! the contract forbids show up locally too.

use petstore::db::DbError;
use petstore::ratelimit::keys::NewApiKey;
use petstore::ratelimit::Plan;
use petstore::records::Role;
use std::net::SocketAddr;
use std::process::ExitCode;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> ExitCode {
    petstore::telemetry::init();
    let endpoint = std::env::var("AWS_ENDPOINT_URL_DYNAMODB")
        .unwrap_or_else(|_| "http://127.0.0.1:8000".to_string());
    match serve(&endpoint).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // One plain line, not the SDK's debug dump.
            let unreachable = error
                .downcast_ref::<DbError>()
                .is_some_and(|e| matches!(e, DbError::Unavailable(_)));
            if unreachable {
                eprintln!("petstore-local: cannot reach DynamoDB at {endpoint} (is DynamoDB Local running on that port?)");
            } else {
                eprintln!("petstore-local: {error}");
            }
            ExitCode::FAILURE
        }
    }
}

async fn serve(endpoint: &str) -> Result<(), BoxError> {
    let config = petstore::config::Config::from_env()?;
    let client = petstore::local_client(endpoint).await;
    let app = petstore::App::new(config, client);
    app.create_tables().await?;
    let port: u16 = match std::env::var("PORT") {
        Ok(raw) => raw.parse()?,
        Err(_) => 3000,
    };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    print_demo_keys(&app).await?;
    let events_file = follow_events(endpoint, &app.config.table_name);
    // Both functions' routes on one port, as API Gateway presents them.
    let router = petstore::http::service(pets::routes().merge(store::routes()), app);
    println!("Pet store API listening on http://127.0.0.1:{port} (DynamoDB at {endpoint})");
    println!("Events (as EventBridge delivers them) are appended to {events_file}");
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

/// Runs the `events` function's consumer on the data table's stream, in the
/// background, appending each event to `EVENTS_FILE` (`.local/events.jsonl`);
/// answers that file's name.
fn follow_events(endpoint: &str, table: &str) -> String {
    let file = std::env::var("EVENTS_FILE").unwrap_or_else(|_| ".local/events.jsonl".into());
    let region = std::env::var("AWS_REGION").unwrap_or_else(|_| "us-east-1".into());
    let reader =
        events::local::StreamReader::new(events::local::local_streams_client(endpoint), table);
    tokio::spawn(reader.follow(events::FilePublisher::new(&file, region)));
    file
}

/// A customer key per plan and one staff key, so `make run` can be tried at
/// once (more with `make key`). The enterprise key's limits are small, to show
/// a 429 by hand.
async fn print_demo_keys(app: &petstore::App) -> Result<(), BoxError> {
    let keys = [
        (Plan::Free, None, Role::Customer),
        (Plan::Pro, None, Role::Customer),
        (Plan::Business, None, Role::Customer),
        (Plan::Enterprise, Some((5, 100)), Role::Customer),
        (Plan::Pro, None, Role::Staff),
    ];
    println!("Demo API keys (send as X-API-Key):");
    for (plan, limits, role) in keys {
        let name = format!("demo {} {}", role.as_str(), plan.as_str());
        let new = NewApiKey::new(plan, limits, Some(name))?.with_role(role);
        let issued = app.limiter.keys().create(new, chrono::Utc::now()).await?;
        let record = &issued.record;
        println!(
            "  {:<8} {:<10} {}  ({}/minute, {}/day, id {})",
            role.as_str(),
            plan.as_str(),
            issued.key,
            record.per_minute,
            record.per_day,
            record.id
        );
    }
    Ok(())
}
