//! `petstore-local`: local stacks on DynamoDB Local.
//!
//!   petstore-local             `make run`: both functions' routers on PORT
//!   petstore-local setup       `make run-lambda`: the tables, the sample
//!                              events' key, and the demo keys, printed
//!   petstore-local event FILE  `make invoke`: FILE's records made, the
//!                              event printed ready to send
//!
//! `make run` serves the router directly with axum rather than through
//! `cargo lambda watch`: it starts in a second, needs nothing but cargo, and
//! serves every request concurrently on tokio, as many warm Lambda instances
//! would, so races the contract forbids show up locally too. `make
//! run-lambda` is the faithful way: the function binaries themselves.

use petstore::db::{cause_chain, DbError};
use petstore_local::{demo, sample_events};
use std::net::SocketAddr;
use std::process::ExitCode;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> ExitCode {
    let endpoint = std::env::var("AWS_ENDPOINT_URL_DYNAMODB")
        .unwrap_or_else(|_| "http://127.0.0.1:8000".to_string());
    let args: Vec<String> = std::env::args().skip(1).collect();
    let done = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [] => serve(&endpoint).await,
        ["setup"] => setup(&endpoint).await.map(|_| ()),
        // No log lines: stdout is the event, for `cargo lambda invoke`.
        ["event", file] => print_event(&endpoint, file).await,
        _ => {
            eprintln!("usage: petstore-local [setup | event FILE]");
            return ExitCode::from(2);
        }
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // One plain line, not the SDK's debug dump.
            let unreachable = error
                .downcast_ref::<DbError>()
                .is_some_and(|e| matches!(e, DbError::Unavailable(_)));
            if unreachable {
                eprintln!("petstore-local: cannot reach DynamoDB at {endpoint} (is DynamoDB Local running on that port?)");
            } else {
                // With its causes: a DynamoDB failure names its operation,
                // table, and AWS's code and message (`DbFailure`).
                eprintln!("petstore-local: {}", cause_chain(error.as_ref()));
            }
            ExitCode::FAILURE
        }
    }
}

async fn app(endpoint: &str) -> Result<petstore::App, BoxError> {
    let config = petstore::config::Config::from_env()?;
    let app = petstore::App::new(config, petstore::local_client(endpoint).await);
    // Run with a Lambda function's environment (`make bench` counts the bytes
    // a request logs that way), it logs as that function does: its metrics
    // line, which is then the request's one line, on stdout.
    Ok(match std::env::var("AWS_LAMBDA_FUNCTION_NAME") {
        Ok(function) => app.with_metrics(petstore::metrics::Emitter::stdout(Box::leak(
            function.into_boxed_str(),
        ))),
        Err(_) => app,
    })
}

/// What every local stack starts with: its tables, the sample events' key,
/// and fresh demo keys, printed.
async fn setup(endpoint: &str) -> Result<petstore::App, BoxError> {
    petstore::telemetry::init();
    let app = app(endpoint).await?;
    app.create_tables().await?;
    demo::print_demo_keys(&app).await?;
    match sample_events::create_events_key(&app, endpoint).await {
        Ok(()) => println!(
            "The sample events in events/ carry {} (local stacks only).",
            sample_events::EVENTS_API_KEY
        ),
        // A DynamoDB elsewhere still serves; it just never gets the published key.
        Err(sample_events::EventError::NotLocal(_)) => {
            println!("The sample events' key is not stored: {endpoint} is not on this machine.")
        }
        Err(other) => return Err(other.into()),
    }
    Ok(app)
}

async fn serve(endpoint: &str) -> Result<(), BoxError> {
    let port: u16 = match std::env::var("PORT") {
        Ok(raw) => raw.parse()?,
        Err(_) => 3000,
    };
    // Before the keys are printed: a port in use prints nothing else.
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let app = setup(endpoint).await?;
    // Endpoint secrets sealed with this machine's own key, made on first
    // use under .local/ (WEBHOOK_SECRETS_KEY_FILE names another).
    let keyring = petstore::webhooks::secrets::Keyring::local_from_env()?;
    petstore::webhooks::secrets::install(keyring);
    let deliverer = petstore::webhooks::deliver::local::start(
        app.db.client().clone(),
        &app.config,
        std::sync::Arc::new(petstore::webhooks::address::SystemResolver),
    )?;
    // LOCAL_FOLLOW_STREAM=0: no stream follower (no events, no webhooks),
    // to measure what following the stream costs the local read mix.
    let following = std::env::var("LOCAL_FOLLOW_STREAM").map_or(true, |v| v != "0");
    let events_file = if following {
        follow_events(endpoint, &app.config.table_name, deliverer.clone())
    } else {
        "nowhere (LOCAL_FOLLOW_STREAM=0)".to_string()
    };
    sweep_holds(app.db.clone())?;
    let origins = app.config.allowed_origins.join(", ");
    // Every function's routes on one port, as API Gateway presents them: the
    // docs function's static files outside the wrapper, as in Lambda.
    // A ping or a retry goes on the same in-process queue as the fan-out's
    // messages, as both go on the deliveries queue in AWS.
    let hooks = webhooks::Webhooks::from_env(deliverer.queue.clone());
    let routes = pets::routes()
        .merge(store::routes())
        .merge(webhooks::routes(hooks));
    let router = petstore::http::service(routes, app).merge(docs::routes());
    println!("Pet store API listening on http://127.0.0.1:{port} (DynamoDB at {endpoint})");
    println!("Events (as EventBridge delivers them) are appended to {events_file}");
    if petstore::webhooks::address::UrlPolicy::from_env().allow_loopback {
        println!("Webhooks may call http:// and loopback receivers (WEBHOOKS_ALLOW_LOOPBACK=1)");
    }
    if !origins.is_empty() {
        println!("Browsers may call it from pages on {origins} (ALLOWED_ORIGINS)");
    }
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

/// Runs the events function's hold sweep in the background, as its schedule
/// does in AWS, every `HOLD_SWEEP_SECONDS` (60 unless set).
fn sweep_holds(db: petstore::db::Db) -> Result<(), BoxError> {
    let seconds: u64 = match std::env::var("HOLD_SWEEP_SECONDS") {
        Ok(raw) => raw.parse()?,
        Err(_) => 60,
    };
    tokio::spawn(async move {
        let mut every = tokio::time::interval(std::time::Duration::from_secs(seconds.max(1)));
        loop {
            every.tick().await;
            if let Err(error) = events::holds::sweep(&db, chrono::Utc::now()).await {
                tracing::warn!("sweeping holds: {error}");
            }
        }
    });
    Ok(())
}

/// Prints the event in `file` ready to send to the local stack.
async fn print_event(endpoint: &str, file: &str) -> Result<(), BoxError> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("cannot read {file}: {e}"))?;
    let app = app(endpoint).await?;
    let ready = sample_events::prepare(&app, &text)
        .await
        .map_err(|e| format!("{file}: {e}"))?;
    println!("{ready}");
    Ok(())
}

/// Runs the `events` function's consumer on the data table's stream, in the
/// background, appending each event to `EVENTS_FILE` (`.local/events.jsonl`)
/// and handing it to the webhooks' fan-out; answers that file's name.
fn follow_events(
    endpoint: &str,
    table: &str,
    deliverer: std::sync::Arc<petstore::webhooks::deliver::Deliverer>,
) -> String {
    let file = std::env::var("EVENTS_FILE").unwrap_or_else(|_| ".local/events.jsonl".into());
    let region = std::env::var("AWS_REGION").unwrap_or_else(|_| "us-east-1".into());
    let reader =
        events::local::StreamReader::new(events::local::local_streams_client(endpoint), table);
    let file_publisher = events::FilePublisher::new(&file, region);
    // The events function's own fan-out, as in Lambda: an event not fanned
    // out leaves its record to be read again.
    let publisher = events::WithWebhooks::new(file_publisher, deliverer);
    tokio::spawn(reader.follow(publisher));
    file
}
