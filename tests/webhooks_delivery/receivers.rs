//! Receivers as a caller would write them, verifying with the Standard
//! Webhooks libraries: the crates.io `standardwebhooks` crate here, and the
//! PyPI package in `tools/gates/src/gates/webhook_receiver.py`.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;

/// One request a receiver got.
#[derive(Debug, Clone)]
pub struct Seen {
    pub webhook_id: String,
    /// Whether each of the receiver's secrets verified it, in order.
    pub verified: Vec<bool>,
    pub body: Value,
    /// When it arrived (the delay measurement's end).
    pub arrived: std::time::Instant,
}

/// What the Rust receiver answers a request.
#[derive(Debug, Clone)]
pub enum Answer {
    Status(u16),
    /// Never answers.
    Hang,
    /// `307` to this location.
    RedirectTo(String),
    /// This status with this `Retry-After`.
    AskingToWait(u16, String),
    /// 200 once the semaphore gives a permit (one per request): the test
    /// holds an attempt under way until it opens the gate.
    Gated(Arc<tokio::sync::Semaphore>),
}

struct Script {
    secrets: Vec<String>,
    answers: Mutex<Vec<Answer>>,
    seen: mpsc::UnboundedSender<Seen>,
}

/// A receiver on 127.0.0.1: its URL, and each request it gets, in order.
pub struct Receiver {
    pub url: String,
    pub seen: mpsc::UnboundedReceiver<Seen>,
}

impl Receiver {
    /// The next request, within the tests' bound.
    pub async fn next(&mut self) -> Seen {
        tokio::time::timeout(super::WITHIN, self.seen.recv())
            .await
            .expect("a webhook arrives within the bound")
            .expect("the receiver runs")
    }

    /// Whatever arrived so far, without waiting.
    pub fn so_far(&mut self) -> Vec<Seen> {
        std::iter::from_fn(|| self.seen.try_recv().ok()).collect()
    }
}

/// A Rust receiver verifying with the `standardwebhooks` crate against each
/// of `secrets`, answering with `answers` in turn (the last one repeated).
pub async fn rust_receiver(secrets: &[&str], answers: Vec<Answer>) -> Receiver {
    let (sender, seen) = mpsc::unbounded_channel();
    let script = Arc::new(Script {
        secrets: secrets.iter().map(|s| s.to_string()).collect(),
        answers: Mutex::new(answers),
        seen: sender,
    });
    let router = axum::Router::new().fallback(receive).with_state(script);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let url = format!(
        "http://{}/hooks",
        listener.local_addr().expect("its address")
    );
    tokio::spawn(async move { axum::serve(listener, router).await });
    Receiver { url, seen }
}

async fn receive(State(script): State<Arc<Script>>, headers: HeaderMap, body: Bytes) -> Response {
    let verified = script
        .secrets
        .iter()
        .map(|secret| {
            let webhook = standardwebhooks::Webhook::new(secret).expect("a whsec_ secret");
            webhook.verify(&body, &headers).is_ok()
        })
        .collect();
    let webhook_id = headers
        .get("webhook-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let _ = script.seen.send(Seen {
        webhook_id: webhook_id.to_string(),
        verified,
        body,
        arrived: std::time::Instant::now(),
    });
    let answer = {
        let mut answers = script.answers.lock().unwrap_or_else(|e| e.into_inner());
        if answers.len() > 1 {
            answers.remove(0)
        } else {
            answers[0].clone()
        }
    };
    match answer {
        Answer::Status(code) => StatusCode::from_u16(code)
            .expect("a status")
            .into_response(),
        Answer::Hang => std::future::pending().await,
        Answer::RedirectTo(location) => {
            (StatusCode::TEMPORARY_REDIRECT, [("location", location)]).into_response()
        }
        Answer::AskingToWait(code, retry_after) => {
            let status = StatusCode::from_u16(code).expect("a status");
            (status, [("retry-after", retry_after)]).into_response()
        }
        Answer::Gated(gate) => {
            gate.acquire().await.expect("the gate stays open").forget();
            StatusCode::OK.into_response()
        }
    }
}

/// A Python receiver (`tools/gates/src/gates/webhook_receiver.py`, PyPI `standardwebhooks`),
/// answering `answers` (comma-separated statuses) in turn. The process ends
/// with the returned guard.
pub async fn python_receiver(secrets: &[&str], answers: &str) -> (Receiver, tokio::process::Child) {
    let root = crate::helpers::repo_root();
    let mut command =
        tokio::process::Command::new(root.join(".venv/bin/petstore-webhook-receiver"));
    command.args(["--answers", answers]);
    for secret in secrets {
        command.args(["--secret", secret]);
    }
    let mut child = command
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the Python receiver starts (make venv installs standardwebhooks)");
    let mut lines = BufReader::new(child.stdout.take().expect("its stdout")).lines();
    let first = lines
        .next_line()
        .await
        .expect("its first line")
        .unwrap_or_default();
    let port = first
        .strip_prefix("listening ")
        .expect("`listening <port>` first")
        .to_string();
    let (sender, seen) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            let line: Value = serde_json::from_str(&line).expect("a JSON line");
            let verified = line["verified"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|v| v == true)
                .collect();
            let body = serde_json::from_str(line["body"].as_str().unwrap_or_default())
                .unwrap_or(Value::Null);
            let webhook_id = line["webhookId"].as_str().unwrap_or_default().to_string();
            let _ = sender.send(Seen {
                webhook_id,
                verified,
                body,
                arrived: std::time::Instant::now(),
            });
        }
    });
    (
        Receiver {
            url: format!("http://127.0.0.1:{port}/hooks"),
            seen,
        },
        child,
    )
}
