//! The processes the runner measures against: DynamoDB Local and
//! `petstore-local`, each on a free port so a running `make run` or another
//! bench is never disturbed.

use crate::client::Error;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The hold sweep's period for a counted service: a day, so that its
/// queries (the events function's, each minute in AWS) never land in a
/// counted request's window; it sweeps once at start, before any count.
pub const NO_HOLD_SWEEP: &str = "HOLD_SWEEP_SECONDS=86400";

fn free_port() -> Result<u16, Error> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// DynamoDB Local in the foreground (`dynamodb-local.sh serve`), watching our
/// pid so it goes away with us however we exit.
pub struct DynamoDbLocal {
    child: Child,
    pub addr: SocketAddr,
}

impl DynamoDbLocal {
    pub async fn start(root: &Path) -> Result<DynamoDbLocal, Error> {
        let port = free_port()?;
        let mut child = Command::new("bash")
            .arg(root.join("scripts/dynamodb-local.sh"))
            .args(["serve", &port.to_string(), &std::process::id().to_string()])
            .stdout(Stdio::piped())
            .stdin(Stdio::null())
            .spawn()?;
        let stdout = child
            .stdout
            .take()
            .ok_or("dynamodb-local.sh without stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let ready = tokio::time::timeout(Duration::from_secs(90), async {
            while let Ok(Some(line)) = lines.next_line().await {
                if line.starts_with("ready") {
                    return true;
                }
            }
            false
        })
        .await;
        if ready != Ok(true) {
            let _ = child.start_kill();
            return Err("DynamoDB Local did not start (scripts/dynamodb-local.sh serve)".into());
        }
        eprintln!("bench: DynamoDB Local on 127.0.0.1:{port}");
        Ok(DynamoDbLocal {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
        })
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub async fn stop(&mut self) {
        terminate(&mut self.child).await;
    }
}

/// `petstore-local`, logging to a file of its own.
pub struct PetstoreLocal {
    child: Child,
    pub addr: SocketAddr,
}

impl PetstoreLocal {
    /// `binary` on a free port, with `env` (`NAME=value`) added.
    pub async fn start(
        binary: &Path,
        dynamodb_url: &str,
        log: &Path,
        env: &[String],
    ) -> Result<Self, Error> {
        let port = free_port()?;
        let log = std::fs::File::create(log)?;
        let env = env.iter().filter_map(|pair| pair.split_once('='));
        let child = Command::new(binary)
            .env("RUST_LOG", "warn")
            .envs(env)
            .env("PORT", port.to_string())
            .env("AWS_ENDPOINT_URL_DYNAMODB", dynamodb_url)
            .env("AWS_ACCESS_KEY_ID", "local")
            .env("AWS_SECRET_ACCESS_KEY", "local")
            .env("AWS_REGION", "us-east-1")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .kill_on_drop(true)
            .spawn()?;
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + Duration::from_secs(30);
        while tokio::net::TcpStream::connect(addr).await.is_err() {
            if Instant::now() > deadline {
                return Err("petstore-local did not listen within 30 s".into());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(PetstoreLocal { child, addr })
    }

    /// Its process id, while it runs (`petstore-read-mix` reads its CPU).
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    pub async fn stop(&mut self) {
        terminate(&mut self.child).await;
    }
}

/// SIGTERM (so the child can clean up), then SIGKILL after 10 s.
async fn terminate(child: &mut Child) {
    if let Some(pid) = child.id() {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(pid.to_string())
            .status()
            .await;
        if tokio::time::timeout(Duration::from_secs(10), child.wait())
            .await
            .is_ok()
        {
            return;
        }
    }
    let _ = child.kill().await;
}
