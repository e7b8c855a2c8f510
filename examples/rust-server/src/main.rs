//! The example MCP server on rmcp, the official Rust SDK, a consumer of an mrtr-operator keyring
//! through mrtr-keyring (clients/rust).
//!
//! It is examples/mcp-server in Rust: the same get_weather tool (round 1 asks for a GitHub login
//! with an elicitation and returns sealed request state; the retry, on any replica, opens it and
//! answers), the same GET /debug/keyring, GET /metrics (the contract's consumer metrics) and
//! GET /healthz and the same flags, so that the e2e
//! harness runs, observes and balances it like the Go server. Its request state is rmcp's `rs2`
//! format, sealed with keys[0] of the keyring in service by `Rs2Codec`, which Go's token.RS2 reads
//! and writes too: a Go replica (`--codec=rs2`) and a Rust replica open each other's state. The
//! watcher follows the mounted Secret and the reporter acknowledges each keyring on the pod, so
//! that the operator rotates the keys without a restart.
//!
//! Served statelessly (the 2026-07-28 HTTP entry, no sessions): any replica answers any round.
#![forbid(unsafe_code)]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use mrtr_keyring::metrics::{self, MeteredRs2, Metrics};
use mrtr_keyring::{AckConfig, AckReporter, KeyringWatcher, Rs2Codec};
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequest,
    ElicitRequestParams, ElicitResult, ElicitationAction, ErrorData, InputRequest, InputRequests,
    InputRequiredResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The example's flags, as the Go server's: `--name=value` or `--name value`, one dash or two.
struct Flags {
    listen: String,
    keyring_dir: PathBuf,
    keyring_secret: String,
    serviceaccount_dir: Option<PathBuf>,
    server: String,
    replica: String,
    token_ttl: Duration,
}

/// Seconds of a Go duration of hours, minutes and seconds ("30s", "1m0s", "5m"), as the Go
/// server's --token-ttl takes it.
fn go_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("--token-ttl {text:?} is not a duration such as 30s or 1m30s");
    let (mut total, mut num) = (0u64, String::new());
    for c in text.chars() {
        if c.is_ascii_digit() {
            num.push(c);
            continue;
        }
        let n: u64 = num.parse().map_err(|_| bad())?;
        num.clear();
        total += match c {
            'h' => n * 3600,
            'm' => n * 60,
            's' => n,
            _ => return Err(bad()),
        };
    }
    if !num.is_empty() || total == 0 {
        return Err(bad());
    }
    Ok(Duration::from_secs(total))
}

fn parse_flags() -> Result<Flags, String> {
    let mut f = Flags {
        listen: ":8080".into(),
        keyring_dir: PathBuf::new(),
        keyring_secret: std::env::var("MRTR_KEYRING_SECRET").unwrap_or_default(),
        serviceaccount_dir: None,
        server: "mrtr-example".into(),
        replica: std::env::var("POD_NAME")
            .ok()
            .filter(|p| !p.is_empty())
            .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
            .map(|h| h.trim().to_owned())
            .unwrap_or_default(),
        token_ttl: Duration::from_secs(300),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let name = arg.trim_start_matches('-');
        let (name, value) = match name.split_once('=') {
            Some((n, v)) => (n.to_owned(), v.to_owned()),
            None => (
                name.to_owned(),
                args.next()
                    .ok_or_else(|| format!("flag --{name} needs a value"))?,
            ),
        };
        match name.as_str() {
            "listen" => f.listen = value,
            "keyring-dir" => f.keyring_dir = value.into(),
            "keyring-secret" => f.keyring_secret = value,
            "serviceaccount-dir" => f.serviceaccount_dir = Some(value.into()),
            "server" => f.server = value,
            "replica" => f.replica = value,
            "token-ttl" => f.token_ttl = go_duration(&value)?,
            _ => return Err(format!("unknown flag --{name}")),
        }
    }
    if f.keyring_dir.as_os_str().is_empty() {
        return Err(
            "--keyring-dir is required: the folder the keyring Secret is mounted at".into(),
        );
    }
    Ok(f)
}

/// What round 1 seals for the retry: the same fields as the Go server's state.
#[derive(Serialize, Deserialize)]
struct WeatherState {
    location: String,
    #[serde(rename = "sealedBy")]
    sealed_by: String,
    #[serde(rename = "sealKey")]
    seal_key: String,
}

/// The associated data of a get_weather token: the server's identity, the principal (anonymous
/// here), the tool and its argument, so that a token opens for that call only. Go's example server
/// builds the same bytes (examples/mcp-server, --codec=rs2).
fn binding(server: &str, location: &str) -> Vec<u8> {
    format!("{server}\nanonymous\ntools/call\nget_weather\n{location}").into_bytes()
}

#[derive(Default)]
struct Stats {
    completed: AtomicU64,
    rejected: AtomicU64,
}

/// The MCP handler: rmcp makes one per request (stateless HTTP); what it holds is shared.
#[derive(Clone)]
struct Weather {
    codec: MeteredRs2,
    watcher: Arc<KeyringWatcher>,
    stats: Arc<Stats>,
    server: Arc<str>,
    replica: Arc<str>,
}

fn invalid_state() -> ErrorData {
    // One answer for every cause, the one the Go and TypeScript servers give (mcpstate's).
    ErrorData::invalid_params(
        "Invalid or expired requestState",
        Some(json!({"reason": "invalid_request_state"})),
    )
}

impl Weather {
    fn tool() -> Tool {
        let schema = json!({
            "type": "object",
            "properties": {"location": {"type": "string"}},
            "required": ["location"],
        });
        let serde_json::Value::Object(schema) = schema else {
            unreachable!("a JSON object literal")
        };
        Tool::new(
            "get_weather",
            "Weather for a location. Asks for your GitHub login first (an elicitation), then answers.",
            schema,
        )
    }

    fn first_round(&self, location: &str) -> Result<CallToolResponse, ErrorData> {
        let state = WeatherState {
            location: location.to_owned(),
            sealed_by: self.replica.to_string(),
            seal_key: self.watcher.keyring().primary().id().to_owned(),
        };
        let payload = serde_json::to_vec(&state)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let sealed = self
            .codec
            .seal(&payload, &binding(&self.server, location))
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let schema = serde_json::from_value(json!({
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
        }))
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let mut requests = InputRequests::new();
        requests.insert(
            "github_login".into(),
            InputRequest::Elicitation(ElicitRequest::new(
                ElicitRequestParams::FormElicitationParams {
                    meta: None,
                    message: "Your GitHub username?".into(),
                    requested_schema: schema,
                },
            )),
        );
        Ok(InputRequiredResult::new(Some(requests), Some(sealed)).into())
    }
}

impl ServerHandler for Weather {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_protocol_version(ProtocolVersion::V_2026_07_28)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![Self::tool()]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != "get_weather" {
            return Err(ErrorData::invalid_params(
                format!("no tool {:?}", request.name),
                None,
            ));
        }
        let location = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("location"))
            .and_then(|l| l.as_str())
            .ok_or_else(|| {
                ErrorData::invalid_params("get_weather: location, a string, is required", None)
            })?
            .to_owned();
        let Some(sealed) = request.request_state.as_deref() else {
            return self.first_round(&location);
        };
        let state: WeatherState = match self
            .codec
            .open(sealed, &binding(&self.server, &location))
            .ok()
            .and_then(|p| serde_json::from_slice(&p).ok())
        {
            Some(s) => s,
            None => {
                self.stats.rejected.fetch_add(1, Ordering::Relaxed);
                eprintln!("WARN rejected request state");
                return Err(invalid_state());
            }
        };
        let login = request
            .input_responses
            .as_ref()
            .and_then(|r| r.get("github_login"))
            .and_then(|v| ElicitResult::deserialize(v).ok())
            .filter(|r| r.action == ElicitationAction::Accept)
            .and_then(|r| r.content)
            .and_then(|c| c.get("name").and_then(|n| n.as_str()).map(str::to_owned))
            .unwrap_or_default();
        self.stats.completed.fetch_add(1, Ordering::Relaxed);
        let mut result = CallToolResult::success(vec![ContentBlock::text(format!(
            "Sunny in {} for {login}",
            state.location
        ))]);
        result.structured_content = Some(json!({
            "location": state.location,
            "login": login,
            "sealedBy": state.sealed_by,
            "sealKey": state.seal_key,
            "openedBy": &*self.replica,
        }));
        Ok(result.into())
    }
}

type Body = BoxBody<Bytes, Infallible>;

fn reply(status: StatusCode, content_type: &str, body: String) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(body)).boxed());
    *r.status_mut() = status;
    if let Ok(v) = content_type.parse() {
        r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    r
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ERROR {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), String> {
    let f = parse_flags()?;
    // A pod told to acknowledge that cannot must not start: the operator would wait for it.
    // The contract's consumer metrics (docs/consumers.md), served on GET /metrics: every seal and
    // open by its result, the keyring in service, reload failures and the acknowledgement's state.
    let metrics = Metrics::new();
    let reporter = if f.keyring_secret.is_empty() {
        None
    } else {
        let mut c = AckConfig::new(f.keyring_secret.clone());
        c.metrics = Some(Arc::clone(&metrics));
        c.service_account_dir = f.serviceaccount_dir.clone();
        c.on_error = Some(Box::new(|e| {
            eprintln!("WARN keyring not acknowledged yet, retrying: {e}")
        }));
        Some(Arc::new(AckReporter::new(c).map_err(|e| e.to_string())?))
    };
    let watcher = Arc::new(KeyringWatcher::new(&f.keyring_dir).map_err(|e| e.to_string())?);
    let codec =
        Arc::new(Rs2Codec::new(&watcher.keyring(), f.token_ttl).map_err(|e| e.to_string())?);
    metrics.follow(&watcher);
    let c = Arc::clone(&codec);
    watcher.on_change(move |ring| match c.reload(ring) {
        Ok(()) => eprintln!(
            "INFO keyring in service: {} (seal key {})",
            ring.fingerprint(),
            ring.primary().id()
        ),
        Err(e) => eprintln!("WARN keyring not put in service: {e}"),
    });
    watcher
        .on_error(|e| eprintln!("WARN keyring reload failed, keeping the last good keyring: {e}"));
    if let Some(r) = &reporter {
        r.follow(&watcher);
        r.start();
    }
    watcher.start(Duration::from_secs(1));
    eprintln!(
        "INFO serving on {} as {}: keyring {}",
        f.listen,
        f.replica,
        watcher.keyring().fingerprint()
    );

    let handler = Weather {
        codec: MeteredRs2::new(codec, Arc::clone(&metrics)),
        watcher: Arc::clone(&watcher),
        stats: Arc::default(),
        server: f.server.as_str().into(),
        replica: f.replica.as_str().into(),
    };
    let stats = Arc::clone(&handler.stats);
    // Stateless and JSON answers: any replica answers any request. Host validation is for servers
    // a browser on the same machine can reach (DNS rebinding); this one serves a cluster Service,
    // whose names and addresses it cannot list.
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .disable_allowed_hosts();
    let mcp = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );

    let addr: SocketAddr = if f.listen.starts_with(':') {
        format!("0.0.0.0{}", f.listen)
    } else {
        f.listen.clone()
    }
    .parse()
    .map_err(|e| format!("--listen {:?}: {e}", f.listen))?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("--listen {addr}: {e}"))?;
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| e.to_string())?;
    loop {
        let (stream, _) = tokio::select! {
            _ = term.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => { eprintln!("WARN accept: {e}"); continue; }
            },
        };
        let (mcp, watcher, reporter, stats, replica, metrics) = (
            mcp.clone(),
            Arc::clone(&watcher),
            reporter.clone(),
            Arc::clone(&stats),
            f.replica.clone(),
            Arc::clone(&metrics),
        );
        let service = hyper::service::service_fn(move |req: Request<Incoming>| {
            let (mcp, watcher, reporter, stats, replica, metrics) = (
                mcp.clone(),
                Arc::clone(&watcher),
                reporter.clone(),
                Arc::clone(&stats),
                replica.clone(),
                Arc::clone(&metrics),
            );
            async move {
                let path = req.uri().path().to_owned();
                Ok::<_, Infallible>(match (req.method(), path.as_str()) {
                    (&Method::GET, "/healthz") => {
                        reply(StatusCode::OK, "text/plain", "ok\n".into())
                    }
                    (&Method::GET, "/debug/keyring") => {
                        let ring = watcher.keyring();
                        let body = json!({
                            "replica": replica,
                            "fingerprint": ring.fingerprint(),
                            "keyIds": ring.keys().iter().map(|k| k.id()).collect::<Vec<_>>(),
                            "sealKey": ring.primary().id(),
                            "acknowledged": reporter.as_ref().map(|r| r.acknowledged()).unwrap_or_default(),
                            "completed": stats.completed.load(Ordering::Relaxed),
                            "rejected": stats.rejected.load(Ordering::Relaxed),
                        });
                        reply(StatusCode::OK, "application/json", body.to_string())
                    }
                    (&Method::GET, "/metrics") => {
                        reply(StatusCode::OK, metrics::CONTENT_TYPE, metrics.exposition())
                    }
                    (_, "/mcp") => mcp.handle(req).await,
                    _ => reply(StatusCode::NOT_FOUND, "text/plain", String::new()),
                })
            }
        });
        tokio::spawn(async move {
            let _ = Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
    eprintln!("INFO shutting down");
    watcher.stop();
    if let Some(r) = &reporter {
        r.stop();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Go example server (examples/mcp-server, --codec=rs2) binds the same bytes: its test
    /// pins this literal too.
    #[test]
    fn binding_is_the_go_servers() {
        assert_eq!(
            binding("mrtr-example", "Paris"),
            b"mrtr-example\nanonymous\ntools/call\nget_weather\nParis"
        );
    }

    #[test]
    fn go_durations() {
        assert_eq!(go_duration("1m0s"), Ok(Duration::from_secs(60)));
        assert_eq!(go_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(go_duration("1h2m3s"), Ok(Duration::from_secs(3723)));
        for bad in ["", "0s", "5", "1.5s", "1d"] {
            assert!(go_duration(bad).is_err(), "{bad} accepted");
        }
    }
}
