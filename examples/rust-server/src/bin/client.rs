//! Load for the example server from rmcp's own client: `--workers` concurrent clients call
//! get_weather over and over, rmcp's `call_tool` answering the elicitation (as octocat) and
//! retrying with the request state, until SIGTERM; then it prints its counts as one JSON line,
//! as examples/typescript-server/client.mjs does, for the e2e harness (harness.ClientLoad).
#![forbid(unsafe_code)]

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ErrorData, Implementation, ProtocolVersion,
};
use rmcp::service::{RequestContext, RoleClient, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt};
use serde_json::json;

/// The errors kept for the report: the last ones.
const KEEP_ERRORS: usize = 20;

#[derive(Default)]
struct Counts {
    completed: AtomicU64,
    rejected: AtomicU64,
    failed: AtomicU64,
    cross: AtomicU64,
    errors: Mutex<Vec<String>>,
}

impl Counts {
    fn note(&self, e: String) {
        if let Ok(mut errs) = self.errors.lock() {
            errs.push(e);
            let n = errs.len();
            if n > KEEP_ERRORS {
                errs.drain(..n - KEEP_ERRORS);
            }
        }
    }
}

/// Answers every elicitation as a user named octocat would.
#[derive(Clone)]
struct User;

impl ClientHandler for User {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().build(),
            Implementation::new("mrtr-example-rust-client", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::V_2026_07_28)
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"name": "octocat"})))
    }
}

/// The server's one answer to a request state it does not accept (mcpstate.IsInvalidRequestState).
fn is_rejection(e: &ServiceError) -> bool {
    matches!(e, ServiceError::McpError(d)
        if d.code.0 == -32602
            && d.data.as_ref().and_then(|v| v.get("reason")).and_then(|r| r.as_str()) == Some("invalid_request_state"))
}

async fn worker(url: Arc<str>, w: usize, counts: Arc<Counts>) {
    let mut i = 0u64;
    loop {
        // 2026-07-28's lifecycle (server/discover, each request self-contained): the one in which
        // a server may answer input_required, and which any replica serves.
        let lifecycle = ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        };
        let transport = StreamableHttpClientTransport::from_uri(Arc::clone(&url));
        let client = match User.serve_with_lifecycle(transport, lifecycle).await {
            Ok(c) => c,
            Err(e) => {
                counts.failed.fetch_add(1, Ordering::Relaxed);
                counts.note(format!("worker {w}: connect: {e}"));
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        loop {
            i += 1;
            let mut args = serde_json::Map::new();
            args.insert("location".into(), json!(format!("city-{w}-{i}")));
            match client
                .call_tool(CallToolRequestParams::new("get_weather").with_arguments(args))
                .await
            {
                Ok(res) if res.is_error != Some(true) && !res.content.is_empty() => {
                    counts.completed.fetch_add(1, Ordering::Relaxed);
                    let s = res.structured_content.unwrap_or_default();
                    if s.get("sealedBy") != s.get("openedBy") {
                        counts.cross.fetch_add(1, Ordering::Relaxed);
                    }
                }
                Ok(res) => {
                    counts.failed.fetch_add(1, Ordering::Relaxed);
                    counts.note(format!("worker {w}: tool error: {:?}", res.content));
                }
                Err(e) if is_rejection(&e) => {
                    counts.rejected.fetch_add(1, Ordering::Relaxed);
                    counts.note(format!("worker {w}: rejected: {e}"));
                }
                Err(e) => {
                    counts.failed.fetch_add(1, Ordering::Relaxed);
                    counts.note(format!("worker {w}: {e}"));
                    break; // start over with a fresh client
                }
            }
        }
        let _ = client.cancel().await;
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let (mut url, mut workers) = (String::new(), 2usize);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let a = a.trim_start_matches('-').to_owned();
        let (name, value) = match a.split_once('=') {
            Some((n, v)) => (n.to_owned(), v.to_owned()),
            None => (a.clone(), args.next().unwrap_or_default()),
        };
        match name.as_str() {
            "url" => url = value,
            "workers" => workers = value.parse().unwrap_or(0),
            _ => {
                eprintln!("unknown flag --{name}");
                return std::process::ExitCode::from(2);
            }
        }
    }
    if url.is_empty() || workers == 0 {
        eprintln!("usage: mrtr-example-rust-client --url <the MCP endpoint> [--workers N]");
        return std::process::ExitCode::from(2);
    }
    let counts = Arc::new(Counts::default());
    let url: Arc<str> = url.into();
    let tasks: Vec<_> = (0..workers)
        .map(|w| tokio::spawn(worker(Arc::clone(&url), w, Arc::clone(&counts))))
        .collect();
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(e) => {
            eprintln!("SIGTERM: {e}");
            return std::process::ExitCode::FAILURE;
        }
    }
    // A call interrupted here is not a result: the counts are of the calls that ended.
    tasks.iter().for_each(|t| t.abort());
    let errors = counts.errors.lock().map(|e| e.clone()).unwrap_or_default();
    println!(
        "{}",
        json!({
            "completed": counts.completed.load(Ordering::Relaxed),
            "rejected": counts.rejected.load(Ordering::Relaxed),
            "failed": counts.failed.load(Ordering::Relaxed),
            "crossReplica": counts.cross.load(Ordering::Relaxed),
            "errors": errors,
        })
    );
    std::process::ExitCode::SUCCESS
}
