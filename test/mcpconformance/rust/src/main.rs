//! The Rust consumer's server for the MCP project's conformance suite
//! (@modelcontextprotocol/conformance).
//!
//! rmcp, the official Rust SDK, stateless streamable HTTP, with the suite's multi round-trip test
//! tools (test_input_required_result_*) and prompt, scenario for scenario as python/server.py and
//! typescript/server.mjs. Its request state is rmcp's `rs2` format, sealed and opened with the
//! keyring of a mounted folder by mrtr-keyring's `Rs2Codec`, which the `KeyringWatcher` reloads.
//! test/mcpconformance runs replicas of it behind a round-robin balancer while it rotates the
//! keyring.
//!
//!     mrtr-mcpconf-rust --listen 127.0.0.1:8080 --keyring-dir DIR --token-ttl 3
#![forbid(unsafe_code)]
// The suite's scenarios still ask for sampling and roots, which SEP-2577 deprecates: rmcp marks
// their result types deprecated.
#![allow(deprecated)]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use mrtr_keyring::{KeyringWatcher, Rs2Codec};
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CreateMessageResult,
    ElicitResult, ElicitationAction, ErrorData, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, InputRequest, InputRequests, InputRequiredResult, InputResponses,
    ListPromptsResult, ListRootsResult, ListToolsResult, PaginatedRequestParams, Prompt,
    ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Map, Value, json};

/// Every replica binds its request state to this audience, so that any of them opens the others'.
const AUDIENCE: &str = "mrtr-conformance";

const TOOLS: [&str; 8] = [
    "test_input_required_result_elicitation",
    "test_input_required_result_sampling",
    "test_input_required_result_list_roots",
    "test_input_required_result_request_state",
    "test_input_required_result_tampered_state",
    "test_input_required_result_multiple_inputs",
    "test_input_required_result_multi_round",
    "test_input_required_result_capabilities",
];

const PROMPT: &str = "test_input_required_result_prompt";

fn internal(e: impl std::fmt::Display) -> ErrorData {
    ErrorData::internal_error(e.to_string(), None)
}

fn invalid(message: impl Into<String>) -> ErrorData {
    ErrorData::invalid_params(message.into(), None)
}

fn invalid_state() -> ErrorData {
    // One answer for every cause, the one the Go, TypeScript and Python servers give.
    ErrorData::invalid_params(
        "Invalid or expired requestState",
        Some(json!({"reason": "invalid_request_state"})),
    )
}

/// An input request from its wire form: rmcp's request envelopes are the JSON-RPC ones.
fn input(request: Value) -> Result<InputRequest, ErrorData> {
    serde_json::from_value(request).map_err(internal)
}

fn elicit(message: &str, field: &str, kind: &str) -> Result<InputRequest, ErrorData> {
    input(json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": {field: {"type": kind}},
                "required": [field],
            },
        },
    }))
}

fn sample(text: &str, max_tokens: u32) -> Result<InputRequest, ErrorData> {
    input(json!({
        "method": "sampling/createMessage",
        "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
            "maxTokens": max_tokens,
        },
    }))
}

fn list_roots() -> Result<InputRequest, ErrorData> {
    input(json!({"method": "roots/list"}))
}

fn text(s: impl Into<String>) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(s)]).into()
}

fn requests(
    inputs: impl IntoIterator<Item = (&'static str, InputRequest)>,
) -> Option<InputRequests> {
    let mut r = InputRequests::new();
    for (key, request) in inputs {
        r.insert(key.into(), request);
    }
    Some(r)
}

/// The answer to key, read as T, or None.
fn answer<T: serde::de::DeserializeOwned>(
    responses: Option<&InputResponses>,
    key: &str,
) -> Option<T> {
    responses
        .and_then(|r| r.get(key))
        .and_then(|v| T::deserialize(v).ok())
}

/// The content of the accepted elicitation answering key, or None.
fn accepted(responses: Option<&InputResponses>, key: &str) -> Option<Map<String, Value>> {
    answer::<ElicitResult>(responses, key)
        .filter(|r| r.action == ElicitationAction::Accept)
        .map(|r| match r.content {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        })
}

fn field(content: &Map<String, Value>, name: &str) -> String {
    match content.get(name) {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => "None".into(),
    }
}

/// The handler: rmcp makes one per request (stateless HTTP); what it holds is shared.
#[derive(Clone)]
struct Everything {
    codec: Arc<Rs2Codec>,
}

impl Everything {
    /// The associated data of a state: the audience and the tool or prompt that sealed it, so that
    /// a state opens on any replica but for its own tool only.
    fn binding(name: &str) -> Vec<u8> {
        format!("{AUDIENCE}\n{name}").into_bytes()
    }

    /// Asks for inputs with a state sealed with the keyring in service.
    fn sealed(
        &self,
        name: &str,
        step: u64,
        inputs: Option<InputRequests>,
        extra: Option<(&str, String)>,
    ) -> Result<InputRequiredResult, ErrorData> {
        let mut state = json!({"tool": name, "step": step});
        if let (Some((k, v)), Value::Object(m)) = (extra, &mut state) {
            m.insert(k.into(), Value::String(v));
        }
        let payload = serde_json::to_vec(&state).map_err(internal)?;
        let token = self
            .codec
            .seal(&payload, &Self::binding(name))
            .map_err(internal)?;
        Ok(InputRequiredResult::new(inputs, Some(token)))
    }

    /// The state of a retry, opened: it must have been sealed by name at step want.
    fn opened(&self, token: &str, name: &str, want: u64) -> Result<Map<String, Value>, ErrorData> {
        let payload = self
            .codec
            .open(token, &Self::binding(name))
            .map_err(|_| invalid_state())?;
        match serde_json::from_slice::<Value>(&payload) {
            Ok(Value::Object(m))
                if m.get("tool").and_then(Value::as_str) == Some(name)
                    && m.get("step").and_then(Value::as_u64) == Some(want) =>
            {
                Ok(m)
            }
            _ => Err(invalid(format!(
                "the request state is not {name}'s step {want}"
            ))),
        }
    }

    /// request-state and tampered-state: a sealed state, which the retry must bring back unchanged.
    fn confirmed(&self, r: &CallToolRequestParams) -> Result<CallToolResponse, ErrorData> {
        let Some(token) = r.request_state.as_deref() else {
            let inputs = requests([("confirm", elicit("Please confirm", "ok", "boolean")?)]);
            return Ok(self.sealed(&r.name, 1, inputs, None)?.into());
        };
        self.opened(token, &r.name, 1)?;
        if accepted(r.input_responses.as_ref(), "confirm").is_none() {
            return Err(invalid("inputResponses lack an accepted confirm"));
        }
        Ok(text("state-ok: the request state opened on this replica"))
    }

    fn multiple_inputs(&self, r: &CallToolRequestParams) -> Result<CallToolResponse, ErrorData> {
        let Some(token) = r.request_state.as_deref() else {
            let inputs = requests([
                ("user_name", elicit("What is your name?", "name", "string")?),
                ("greeting", sample("Generate a greeting", 50)?),
                ("client_roots", list_roots()?),
            ]);
            return Ok(self.sealed(&r.name, 1, inputs, None)?.into());
        };
        self.opened(token, &r.name, 1)?;
        let rs = r.input_responses.as_ref();
        if accepted(rs, "user_name").is_none()
            || answer::<CreateMessageResult>(rs, "greeting").is_none()
            || answer::<ListRootsResult>(rs, "client_roots").is_none()
        {
            return Err(invalid(
                "inputResponses lack one of user_name, greeting and client_roots",
            ));
        }
        Ok(text("all three inputs received"))
    }

    /// Asks for a name, then (sealing the name into a new state) for a colour.
    fn multi_round(&self, r: &CallToolRequestParams) -> Result<CallToolResponse, ErrorData> {
        let Some(token) = r.request_state.as_deref() else {
            let inputs = requests([(
                "step1",
                elicit("Step 1: What is your name?", "name", "string")?,
            )]);
            return Ok(self.sealed(&r.name, 1, inputs, None)?.into());
        };
        let rs = r.input_responses.as_ref();
        if let Some(name) = accepted(rs, "step1") {
            self.opened(token, &r.name, 1)?;
            let inputs = requests([(
                "step2",
                elicit("Step 2: What is your favorite color?", "color", "string")?,
            )]);
            let extra = Some(("name", field(&name, "name")));
            return Ok(self.sealed(&r.name, 2, inputs, extra)?.into());
        }
        let state = self.opened(token, &r.name, 2)?;
        let Some(colour) = accepted(rs, "step2") else {
            return Err(invalid("inputResponses lack an accepted step2"));
        };
        Ok(text(format!(
            "{} likes {}",
            field(&state, "name"),
            field(&colour, "color")
        )))
    }

    /// Asks only for what the client declared it can answer.
    fn capabilities(
        r: &CallToolRequestParams,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if r.input_responses.as_ref().is_some_and(|m| !m.is_empty()) {
            return Ok(text("inputs received"));
        }
        let caps = ctx.client_capabilities();
        let mut inputs = Vec::new();
        if caps.as_ref().is_some_and(|c| c.sampling.is_some()) {
            inputs.push(("question", sample("What is the capital of France?", 100)?));
        }
        if caps.as_ref().is_some_and(|c| c.elicitation.is_some()) {
            inputs.push(("user_name", elicit("What is your name?", "name", "string")?));
        }
        if inputs.is_empty() {
            return Ok(text("the client declared no capability to ask with"));
        }
        Ok(InputRequiredResult::new(requests(inputs), None).into())
    }
}

impl ServerHandler for Everything {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .build(),
        )
        .with_protocol_version(ProtocolVersion::V_2026_07_28)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = Map::from_iter([("type".to_owned(), json!("object"))]);
        Ok(ListToolsResult::with_all_items(
            TOOLS
                .iter()
                .map(|name| Tool::new(*name, *name, schema.clone()))
                .collect(),
        ))
    }

    async fn call_tool(
        &self,
        r: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let rs = r.input_responses.as_ref();
        match &*r.name {
            // No state: its scenarios retry with the answer alone (extra keys, wrong keys, bad values).
            "test_input_required_result_elicitation" => Ok(match accepted(rs, "user_name") {
                Some(c) => text(format!("Hello, {}!", field(&c, "name"))),
                None => InputRequiredResult::new(
                    requests([("user_name", elicit("What is your name?", "name", "string")?)]),
                    None,
                )
                .into(),
            }),
            "test_input_required_result_sampling" => Ok(
                match answer::<CreateMessageResult>(rs, "capital_question") {
                    Some(m) => text(serde_json::to_string(&m).map_err(internal)?),
                    None => InputRequiredResult::new(
                        requests([(
                            "capital_question",
                            sample("What is the capital of France?", 100)?,
                        )]),
                        None,
                    )
                    .into(),
                },
            ),
            "test_input_required_result_list_roots" => {
                Ok(match answer::<ListRootsResult>(rs, "client_roots") {
                    Some(l) => text(format!(
                        "roots: {}",
                        l.roots
                            .iter()
                            .map(|root| root.uri.as_str())
                            .collect::<Vec<_>>()
                            .join(" ")
                    )),
                    None => {
                        InputRequiredResult::new(requests([("client_roots", list_roots()?)]), None)
                            .into()
                    }
                })
            }
            "test_input_required_result_request_state"
            | "test_input_required_result_tampered_state" => self.confirmed(&r),
            "test_input_required_result_multiple_inputs" => self.multiple_inputs(&r),
            "test_input_required_result_multi_round" => self.multi_round(&r),
            "test_input_required_result_capabilities" => Self::capabilities(&r, &context),
            other => Err(invalid(format!("no tool {other:?}"))),
        }
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(vec![Prompt::new(
            PROMPT,
            Some(PROMPT),
            None,
        )]))
    }

    async fn get_prompt(
        &self,
        r: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if r.name != PROMPT {
            return Err(invalid(format!("no prompt {:?}", r.name)));
        }
        let Some(token) = r.request_state.as_deref() else {
            let inputs = requests([(
                "user_context",
                elicit("What context should the prompt use?", "context", "string")?,
            )]);
            return Ok(self.sealed(PROMPT, 1, inputs, None)?.into());
        };
        self.opened(token, PROMPT, 1)?;
        let Some(c) = accepted(r.input_responses.as_ref(), "user_context") else {
            return Err(invalid("inputResponses lack an accepted user_context"));
        };
        // From the wire form, which must carry the 2026-07-28 resultType that rmcp's deserializer
        // leaves unset when absent.
        let result: GetPromptResult = serde_json::from_value(json!({
            "resultType": "complete",
            "messages": [{
                "role": "user",
                "content": {"type": "text", "text": format!("Use this context: {}", field(&c, "context"))},
            }],
        }))
        .map_err(internal)?;
        Ok(result.into())
    }
}

struct Flags {
    listen: String,
    keyring_dir: PathBuf,
    token_ttl: Duration,
}

fn parse_flags() -> Result<Flags, String> {
    let mut f = Flags {
        listen: "127.0.0.1:8080".into(),
        keyring_dir: PathBuf::new(),
        token_ttl: Duration::from_secs(3),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let name = arg.trim_start_matches('-').to_owned();
        let value = args
            .next()
            .ok_or_else(|| format!("flag --{name} needs a value"))?;
        match name.as_str() {
            "listen" => f.listen = value,
            "keyring-dir" => f.keyring_dir = value.into(),
            "token-ttl" => {
                let s: f64 = value
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s > 0.0)
                    .ok_or_else(|| {
                        format!("--token-ttl {value:?} is not a positive number of seconds")
                    })?;
                f.token_ttl = Duration::from_secs_f64(s);
            }
            _ => return Err(format!("unknown flag --{name}")),
        }
    }
    if f.keyring_dir.as_os_str().is_empty() {
        return Err("--keyring-dir is required: the folder the keyring is mounted at".into());
    }
    Ok(f)
}

type Body = BoxBody<Bytes, Infallible>;

fn reply(status: StatusCode, body: String) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(body)).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
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
    let watcher = Arc::new(KeyringWatcher::new(&f.keyring_dir).map_err(|e| e.to_string())?);
    let codec =
        Arc::new(Rs2Codec::new(&watcher.keyring(), f.token_ttl).map_err(|e| e.to_string())?);
    let c = Arc::clone(&codec);
    watcher.on_change(move |ring| {
        if let Err(e) = c.reload(ring) {
            eprintln!("WARN keyring not put in service: {e}");
        }
    });
    watcher.on_error(|e| eprintln!("WARN keyring not reloaded: {e}"));
    // The writer rotates every token-ttl: a reload must follow well within it.
    watcher.start(Duration::from_millis(100));

    let handler = Everything { codec };
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .disable_allowed_hosts();
    let mcp = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let addr: SocketAddr = f
        .listen
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
        let (mcp, watcher) = (mcp.clone(), Arc::clone(&watcher));
        let service = hyper::service::service_fn(move |req: Request<Incoming>| {
            let (mcp, watcher) = (mcp.clone(), Arc::clone(&watcher));
            async move {
                let path = req.uri().path().to_owned();
                Ok::<_, Infallible>(match (req.method(), path.as_str()) {
                    (&Method::GET, "/debug/keyring") => reply(
                        StatusCode::OK,
                        json!({"fingerprint": watcher.keyring().fingerprint()}).to_string(),
                    ),
                    (_, "/mcp") => mcp.handle(req).await,
                    _ => reply(StatusCode::NOT_FOUND, "{}".into()),
                })
            }
        });
        tokio::spawn(async move {
            let _ = Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
    watcher.stop();
    Ok(())
}
