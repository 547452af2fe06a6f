//! DynamoDB Local for the test binary: started on first use, on a free port,
//! by `scripts/dynamodb-local.sh serve`, which stops it when the binary exits
//! however it exits; or the one `AWS_ENDPOINT_URL_DYNAMODB` names.

use super::repo_root;
use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Mutex, OnceLock};
use std::time::Duration;

/// How long DynamoDB Local may take to answer (it needs about 2 s; CI is slower).
const STARTUP_TIMEOUT: Duration = Duration::from_secs(90);

/// DynamoDB Local's endpoint, started on first use in this test binary.
pub async fn dynamodb_endpoint() -> String {
    static ENDPOINT: OnceLock<String> = OnceLock::new();
    if let Some(endpoint) = ENDPOINT.get() {
        return endpoint.clone();
    }
    // Starting takes seconds: keep the blocking wait off the async runtime.
    tokio::task::spawn_blocking(|| ENDPOINT.get_or_init(find_or_start_dynamodb).clone())
        .await
        .unwrap_or_else(|error| std::panic::resume_unwind(error.into_panic()))
}

fn find_or_start_dynamodb() -> String {
    if let Some(endpoint) = std::env::var("AWS_ENDPOINT_URL_DYNAMODB")
        .ok()
        .filter(|v| !v.is_empty())
    {
        return endpoint;
    }
    let root = repo_root();
    let jar = root.join(".local/dynamodb/DynamoDBLocal.jar");
    assert!(
        jar.is_file(),
        "DynamoDB Local is not installed ({} is missing).\n\
         Run `make test` (which installs it), or `scripts/dynamodb-local.sh install` \
         and then `cargo test`, or point AWS_ENDPOINT_URL_DYNAMODB at a running DynamoDB.",
        jar.display()
    );
    let mut last_error = String::new();
    // A free port can be taken between our probe and java's bind: retry.
    for _ in 0..3 {
        match start_dynamodb(&root, free_port()) {
            Ok(endpoint) => return endpoint,
            Err(error) => last_error = error,
        }
    }
    panic!("could not start DynamoDB Local: {last_error}");
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free local port")
        .port()
}

/// Runs `scripts/dynamodb-local.sh serve`, which stops java when this process
/// ends, and waits for its "ready" line.
fn start_dynamodb(root: &Path, port: u16) -> Result<String, String> {
    // The child is kept for the life of the test binary; the script watches
    // our pid, so nothing is left running once the binary exits, however it exits.
    static CHILDREN: Mutex<Vec<Child>> = Mutex::new(Vec::new());

    let mut child = Command::new("bash")
        .arg(root.join("scripts/dynamodb-local.sh"))
        .arg("serve")
        .arg(port.to_string())
        .arg(std::process::id().to_string())
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run scripts/dynamodb-local.sh: {e}"))?;

    let stdout = child.stdout.take().expect("stdout is piped");
    let mut stderr = child.stderr.take().expect("stderr is piped");
    let (ready_tx, ready_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = ready_tx.send(line);
    });

    let line = ready_rx.recv_timeout(STARTUP_TIMEOUT).unwrap_or_default();
    if line.trim() == format!("ready {port}") {
        // Drain stderr so the script can never block on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        CHILDREN
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(child);
        return Ok(format!("http://127.0.0.1:{port}"));
    }

    // SIGTERM, not SIGKILL: the script then stops java on its way out.
    let _ = Command::new("kill").arg(child.id().to_string()).status();
    let _ = child.wait();
    let mut output = String::new();
    let _ = stderr.read_to_string(&mut output);
    Err(format!(
        "DynamoDB Local did not become ready on port {port} within {}s; its output:\n{output}",
        STARTUP_TIMEOUT.as_secs()
    ))
}
