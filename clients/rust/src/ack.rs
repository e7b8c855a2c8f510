//! The acknowledgement (docs/consumers.md, "The acknowledgement"): after it puts a keyring in
//! service, the pod writes that keyring's fingerprint on its own Pod object with one request,
//!
//! ```text
//! PATCH /api/v1/namespaces/<ns>/pods/<pod>?fieldManager=mrtr-ack HTTP/1.1
//! Authorization: Bearer <the service account token, read again for every request>
//! Content-Type: application/merge-patch+json
//! {"metadata":{"annotations":{"loaded.mrtr.dev/<secret>":"<fingerprint>"}}}
//! ```
//!
//! over TLS verified against the service account's `ca.crt` and nothing else. A failure (an error
//! status, a refused connection, an answer lost on the way) is retried with jittered exponential
//! backoff, without end, for the latest fingerprint only; serving never waits for it.
//!
//! Why a client of its own, on rustls and httparse, rather than an HTTP client crate: this request
//! carries the pod's token, and the contract forbids exactly what HTTP clients do for their users
//! (read `HTTPS_PROXY` and friends, follow redirects, trust the system's roots, time out only when
//! idle). Here none of that exists to be switched off: the code opens one TCP connection to the API
//! server's address, verifies it with a root store holding `ca.crt` alone, writes one request,
//! reads the answer's status (a 3xx is a failure like any other), and bounds the whole of it,
//! connection, handshake and answer, by one deadline. One connection per request (`Connection:
//! close`): an acknowledgement is sent once per keyring, so a connection kept open would only keep
//! a socket busy between rotations, and a fresh one verifies the certificate every time.

use std::fmt;
use std::fs;
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use sha2::{Digest, Sha256};

use crate::metrics::{AckState, Metrics};
use crate::watch::KeyringWatcher;

/// Starts every acknowledgement annotation key.
pub const ANNOTATION_PREFIX: &str = "loaded.mrtr.dev/";
/// The field manager of every acknowledgement: the operator counts only its writes.
pub const FIELD_MANAGER: &str = "mrtr-ack";
/// Where the kubelet mounts the pod's service account.
pub const DEFAULT_SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// Replaces the default service account directory when set (the conformance check points it at
/// its fake API server's token and CA).
pub const SERVICE_ACCOUNT_DIR_ENV: &str = "MRTR_SERVICE_ACCOUNT_DIR";
/// The default bound of one request, answer included (Go's pkg/ack: 10 s).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The default bounds of the pause after a failure: 200 ms to 30 s.
pub const DEFAULT_MIN_BACKOFF: Duration = Duration::from_millis(200);
/// See [`DEFAULT_MIN_BACKOFF`].
pub const DEFAULT_MAX_BACKOFF: Duration = Duration::from_secs(30);

const USER_AGENT: &str = "mrtr-ack (mrtr-keyring for Rust)";
const MAX_NAME_PART: usize = 63;
const HASH_LEN: usize = 16;
// The answer's head (status line and headers): a Pod's answer has a dozen short headers.
const MAX_HEAD: usize = 16 << 10;
const MAX_HEADERS: usize = 64;
// Of a refusal, enough of the body to find the Status's message.
const MAX_ERROR_BODY: usize = 4 << 10;
const MAX_MESSAGE: usize = 200;

/// The Pod annotation under which a pod acknowledges the keyring of the Secret named `secret`:
/// the prefix and the name when it is at most 63 characters, else its first 46, a dash and 16 hex
/// digits of its SHA-256 (Go's `ack.AnnotationKey`).
pub fn annotation_key(secret: &str) -> String {
    if secret.len() <= MAX_NAME_PART {
        return format!("{ANNOTATION_PREFIX}{secret}");
    }
    let digest = Sha256::digest(secret.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    let keep = MAX_NAME_PART - 1 - HASH_LEN;
    // A Secret name is ASCII (checked by the reporter); a byte index is a character index.
    let head = secret.get(..keep).unwrap_or(secret);
    format!("{ANNOTATION_PREFIX}{head}-{}", &hex[..HASH_LEN])
}

/// Why a reporter could not be made, or one acknowledgement failed. No message carries the token
/// or key bytes: the text an API server sends back has the token removed, quoted and cut.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AckError {
    /// The configuration is missing or wrong; the message names what.
    #[error("ack: {0}")]
    Config(String),
    /// The service account token could not be read.
    #[error("ack: service account token {path}: {reason}")]
    Token {
        /// The token file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// No answer: the connection was refused or cut, TLS failed, or the deadline passed. The API
    /// server may have applied the patch all the same (a lost answer).
    #[error("ack: patch pod {pod}: {reason}")]
    NoAnswer {
        /// namespace/name.
        pod: String,
        /// What happened.
        reason: String,
    },
    /// The API server (or whatever answered) refused the patch with this status.
    #[error("ack: patch pod {pod}: {status_line}: {message}{hint}", hint = hint(*.status))]
    Refused {
        /// namespace/name.
        pod: String,
        /// The status code.
        status: u16,
        /// The status code and its reason phrase.
        status_line: String,
        /// The message of the answer's Status (quoted and cut), or "no message".
        message: String,
    },
}

impl AckError {
    /// The HTTP status of a refusal.
    pub fn status(&self) -> Option<u16> {
        match self {
            AckError::Refused { status, .. } => Some(*status),
            _ => None,
        }
    }
}

fn hint(status: u16) -> &'static str {
    match status {
        300..=399 => " (a redirect: not followed, the token goes to the API server only)",
        401 => " (the service account token was not accepted)",
        403 => " (is the ClusterRole mrtr-keyring-consumer bound to the pod's ServiceAccount?)",
        404 => " (no such pod: check $POD_NAME and $POD_NAMESPACE)",
        _ => "",
    }
}

/// A callback that hears of every failed acknowledgement.
pub type ErrorHandler = Box<dyn Fn(&AckError) + Send + Sync>;

/// What an [`AckReporter`] needs; what is left `None` comes from the environment the kubelet gives
/// every container.
#[non_exhaustive]
pub struct AckConfig {
    /// The name of the keyring Secret the pod mounts (the MRTRKeyring's `status.secretName`).
    pub secret: String,
    /// This pod: default `$POD_NAME` (the downward API's `metadata.name`).
    pub pod_name: Option<String>,
    /// Default `$POD_NAMESPACE`, else the service account's `namespace` file.
    pub namespace: Option<String>,
    /// `https://host:port`: default `https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`.
    pub api_server: Option<String>,
    /// Holds `token`, `ca.crt` and `namespace`: default `$MRTR_SERVICE_ACCOUNT_DIR`, else
    /// [`DEFAULT_SERVICE_ACCOUNT_DIR`].
    pub service_account_dir: Option<PathBuf>,
    /// Bounds one request, connection and answer included.
    pub timeout: Duration,
    /// Bounds of the jittered pause after a failure.
    pub min_backoff: Duration,
    /// See `min_backoff`.
    pub max_backoff: Duration,
    /// Hears of every failed attempt (log it; never key bytes, never the token).
    pub on_error: Option<ErrorHandler>,
    /// Where the acknowledgement's state is reported (`mrtr_consumer_ack_state`): pending once a
    /// keyring is reported, acknowledged once the Pod carries it, retrying after a failure.
    pub metrics: Option<Arc<Metrics>>,
}

impl fmt::Debug for AckConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AckConfig")
            .field("secret", &self.secret)
            .field("pod_name", &self.pod_name)
            .field("namespace", &self.namespace)
            .field("api_server", &self.api_server)
            .field("service_account_dir", &self.service_account_dir)
            .field("timeout", &self.timeout)
            .field("min_backoff", &self.min_backoff)
            .field("max_backoff", &self.max_backoff)
            .field("metrics", &self.metrics.is_some())
            .finish_non_exhaustive()
    }
}

impl AckConfig {
    /// The defaults, for the Secret named `secret`.
    pub fn new(secret: impl Into<String>) -> Self {
        Self {
            secret: secret.into(),
            pod_name: None,
            namespace: None,
            api_server: None,
            service_account_dir: None,
            timeout: DEFAULT_TIMEOUT,
            min_backoff: DEFAULT_MIN_BACKOFF,
            max_backoff: DEFAULT_MAX_BACKOFF,
            on_error: None,
            metrics: None,
        }
    }
}

#[derive(Default)]
struct State {
    latest: String,
    acked: String,
    // What the Pod is known to carry: the acknowledged fingerprint after an accepted request, ""
    // after a failed one, whose patch the API server may have applied although its answer was
    // lost; so a return to the fingerprint acknowledged before is sent again.
    on_pod: String,
    stopped: bool,
    running: bool,
}

/// Publishes the fingerprint of the keyring this pod has loaded on its Pod object. `report` never
/// blocks or fails; `run` (or `start`, on a thread of its own) publishes the latest fingerprint,
/// retrying until it is accepted.
pub struct AckReporter {
    host: String,
    port: u16,
    authority: String,
    server_name: ServerName<'static>,
    path: String,
    pod: String,
    key: String,
    token_path: PathBuf,
    tls: Arc<ClientConfig>,
    timeout: Duration,
    min_backoff: Duration,
    max_backoff: Duration,
    on_error: Option<ErrorHandler>,
    metrics: Option<Arc<Metrics>>,
    state: Mutex<State>,
    changed: Condvar,
}

impl fmt::Debug for AckReporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AckReporter")
            .field("api_server", &self.authority)
            .field("pod", &self.pod)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn config_err(msg: impl Into<String>) -> AckError {
    AckError::Config(msg.into())
}

/// A DNS subdomain, as a Secret's name must be: at most 253 of `[a-z0-9.-]`, labels starting and
/// ending alphanumeric.
fn is_secret_name(s: &str) -> bool {
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && alnum(b[0])
                && alnum(b[b.len() - 1])
                && b.iter().all(|&c| alnum(c) || c == b'-')
        })
}

/// Path-escapes one segment: everything but RFC 3986's unreserved characters.
fn escape_segment(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Splits `https://host:port` (an IPv6 host in brackets, no path) into its host and port.
fn parse_api_server(base: &str) -> Result<(String, u16), AckError> {
    let Some(rest) = base.strip_prefix("https://") else {
        // Plain http would send the token in the clear.
        let scheme = base.split("://").next().unwrap_or_default();
        return Err(config_err(format!(
            "API server {scheme:?}://…: not an https:// URL"
        )));
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.contains(['/', '?', '#', '@']) {
        return Err(config_err(format!(
            "API server {base:?}: want https://host:port, without a path or credentials"
        )));
    }
    let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
        let Some((h, after)) = v6.split_once(']') else {
            return Err(config_err(format!(
                "API server {base:?}: unclosed [ of an IPv6 address"
            )));
        };
        (h.to_owned(), after.strip_prefix(':'))
    } else {
        match rest.rsplit_once(':') {
            Some((h, p)) => (h.to_owned(), Some(p)),
            None => (rest.to_owned(), None),
        }
    };
    let port = match port {
        None => 443,
        Some(p) => p.parse::<u16>().ok().filter(|&p| p > 0).ok_or_else(|| {
            config_err(format!("API server {base:?}: port {p:?} is not 1 to 65535"))
        })?,
    };
    if host.is_empty() {
        return Err(config_err(format!("API server {base:?}: no host")));
    }
    Ok((host, port))
}

fn read_namespace_file(dir: &Path) -> Result<String, AckError> {
    let path = dir.join("namespace");
    let ns = match fs::read_to_string(&path) {
        Ok(s) => s.trim().to_owned(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
        Err(e) => {
            return Err(config_err(format!(
                "no namespace: set namespace or $POD_NAMESPACE (the downward API's metadata.namespace): {}: {e}",
                path.display()
            )));
        }
    };
    if ns.is_empty() {
        return Err(config_err(format!(
            "no namespace: set namespace or $POD_NAMESPACE (the downward API's metadata.namespace); {} is missing or empty",
            path.display()
        )));
    }
    Ok(ns)
}

/// The TLS configuration of every request: TLS 1.2 or 1.3, and the certificates of `ca.crt` as
/// the only roots (no system store, no built-in roots).
fn tls_config(ca_path: &Path) -> Result<ClientConfig, AckError> {
    let pem = fs::read(ca_path)
        .map_err(|e| config_err(format!("API server CA {}: {e}", ca_path.display())))?;
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert =
            cert.map_err(|e| config_err(format!("API server CA {}: {e}", ca_path.display())))?;
        roots
            .add(cert)
            .map_err(|e| config_err(format!("API server CA {}: {e}", ca_path.display())))?;
    }
    if roots.is_empty() {
        return Err(config_err(format!(
            "API server CA: no PEM certificate in {}",
            ca_path.display()
        )));
    }
    // ring, not aws-lc-rs: it builds with a C compiler alone (no cmake, no Go, a fraction of the
    // build on a small builder), and ring's provider is deprecated only for want of a
    // post-quantum key exchange, which protects recorded traffic for years; this request carries a
    // bound token that expires within the hour, over the cluster's own network.
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| config_err(format!("TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(config)
}

impl AckReporter {
    /// Checks the configuration and reads `ca.crt` once; the errors name what is missing or
    /// wrong. The token is read for every request, not here.
    pub fn new(c: AckConfig) -> Result<Self, AckError> {
        if c.secret.is_empty() {
            return Err(config_err(
                "no secret: set secret to the name of the keyring Secret the pod mounts",
            ));
        }
        if !is_secret_name(&c.secret) {
            return Err(config_err(format!(
                "secret {:?} is not a Secret name (a DNS subdomain: at most 253 lowercase letters, digits, '-' and '.')",
                c.secret
            )));
        }
        let dir = c
            .service_account_dir
            .or_else(|| env(SERVICE_ACCOUNT_DIR_ENV).map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from(DEFAULT_SERVICE_ACCOUNT_DIR));
        let pod = c.pod_name.or_else(|| env("POD_NAME")).ok_or_else(|| {
            config_err("no pod name: set pod_name or $POD_NAME (the downward API's metadata.name)")
        })?;
        let ns = match c.namespace.or_else(|| env("POD_NAMESPACE")) {
            Some(ns) => ns,
            None => read_namespace_file(&dir)?,
        };
        let base = match c.api_server {
            Some(b) => b,
            None => {
                let (Some(host), Some(port)) = (
                    env("KUBERNETES_SERVICE_HOST"),
                    env("KUBERNETES_SERVICE_PORT"),
                ) else {
                    return Err(config_err(
                        "no API server: set api_server or $KUBERNETES_SERVICE_HOST and $KUBERNETES_SERVICE_PORT (the kubelet sets both in every container)",
                    ));
                };
                if host.contains(':') {
                    format!("https://[{host}]:{port}")
                } else {
                    format!("https://{host}:{port}")
                }
            }
        };
        let (host, port) = parse_api_server(&base)?;
        let server_name = ServerName::try_from(host.clone())
            .map_err(|e| config_err(format!("API server host {host:?}: {e}")))?;
        if c.timeout.is_zero() {
            return Err(config_err("timeout is 0: it must be positive"));
        }
        if c.min_backoff > c.max_backoff {
            return Err(config_err(format!(
                "min_backoff {:?} exceeds max_backoff {:?}",
                c.min_backoff, c.max_backoff
            )));
        }
        let tls = tls_config(&dir.join("ca.crt"))?;
        let authority = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        Ok(Self {
            path: format!(
                "/api/v1/namespaces/{}/pods/{}?fieldManager={FIELD_MANAGER}",
                escape_segment(&ns),
                escape_segment(&pod)
            ),
            pod: format!("{ns}/{pod}"),
            key: annotation_key(&c.secret),
            token_path: dir.join("token"),
            host,
            port,
            authority,
            server_name,
            tls: Arc::new(tls),
            timeout: c.timeout,
            min_backoff: c.min_backoff,
            max_backoff: c.max_backoff,
            on_error: c.on_error,
            metrics: c.metrics,
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        })
    }

    /// The annotation key it writes.
    pub fn annotation_key(&self) -> &str {
        &self.key
    }

    /// namespace/name of the Pod it writes.
    pub fn pod(&self) -> &str {
        &self.pod
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while the lock was held cannot leave State half-written: every write is one
        // field assignment. Carry on with it.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records that the process now seals and opens with the keyring of this fingerprint. The
    /// latest wins: an older one is never sent after a newer one.
    pub fn report(&self, fingerprint: &str) {
        if fingerprint.is_empty() {
            return;
        }
        let mut st = self.lock();
        if st.latest == fingerprint {
            return; // nothing new, and no retry out of the backoff
        }
        st.latest = fingerprint.to_owned();
        self.changed.notify_all();
        drop(st);
        self.state_changed(AckState::Pending);
    }

    fn state_changed(&self, state: AckState) {
        if let Some(m) = &self.metrics {
            m.ack_state_changed(state);
        }
    }

    /// The last fingerprint the API server accepted, "" before the first.
    pub fn acknowledged(&self) -> String {
        self.lock().acked.clone()
    }

    /// Reports the watcher's keyring now and every keyring it puts in service from now on.
    pub fn follow(self: &Arc<Self>, watcher: &KeyringWatcher) {
        let me = Arc::clone(self);
        watcher.on_change(move |ring| me.report(ring.fingerprint()));
        // Registered first, so that no change is missed.
        self.report(watcher.keyring().fingerprint());
    }

    /// Runs [`AckReporter::run`] on a thread of its own, until [`AckReporter::stop`].
    pub fn start(self: &Arc<Self>) -> std::thread::JoinHandle<()> {
        let me = Arc::clone(self);
        std::thread::Builder::new()
            .name(format!("mrtr-ack {}", self.pod))
            .spawn(move || me.run())
            .unwrap_or_else(|e| panic!("ack: cannot start a thread: {e}"))
    }

    /// Ends `run` once its request in flight, if any, ends (by its deadline at the latest).
    pub fn stop(&self) {
        self.lock().stopped = true;
        self.changed.notify_all();
    }

    /// Publishes each reported fingerprint with one PATCH of the Pod, retrying failures with
    /// backoff, until `stop`. Serving never waits on it. A second `run` at the same time returns
    /// at once.
    pub fn run(&self) {
        {
            let mut st = self.lock();
            if st.running {
                return;
            }
            st.running = true;
        }
        let mut failures: u32 = 0;
        let mut failed = String::new();
        let mut retry_at: Option<Instant> = None;
        while let Some(fp) = self.next(&failed, &mut retry_at) {
            match self.publish(&fp) {
                Ok(()) => {
                    failures = 0;
                    failed.clear();
                    {
                        let mut st = self.lock();
                        st.acked.clone_from(&fp);
                        st.on_pod = fp;
                    }
                    self.state_changed(AckState::Acknowledged);
                }
                Err(e) => {
                    self.lock().on_pod.clear();
                    failures = failures.saturating_add(1);
                    retry_at = Some(Instant::now() + self.backoff(failures));
                    failed = fp;
                    self.state_changed(AckState::Retrying);
                    if let Some(f) = &self.on_error {
                        // A handler's panic must not stop the acknowledgements.
                        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&e)));
                    }
                }
            }
        }
        self.lock().running = false;
    }

    /// Waits for a fingerprint to publish: the latest one, unless the Pod carries it; while
    /// backing off from a failure of `failed`, only a newer one or the end of the pause. None once
    /// stopped.
    fn next(&self, failed: &str, retry_at: &mut Option<Instant>) -> Option<String> {
        let mut st = self.lock();
        loop {
            if st.stopped {
                return None;
            }
            let pending = if st.latest != st.on_pod {
                st.latest.clone()
            } else {
                String::new()
            };
            match *retry_at {
                None => {
                    if !pending.is_empty() {
                        return Some(pending);
                    }
                    st = self.changed.wait(st).unwrap_or_else(|p| p.into_inner());
                }
                Some(at) => {
                    if !pending.is_empty() && pending != failed {
                        *retry_at = None; // a newer fingerprint: try it at once
                        return Some(pending);
                    }
                    let now = Instant::now();
                    if now >= at {
                        *retry_at = None;
                        continue;
                    }
                    st = self
                        .changed
                        .wait_timeout(st, at - now)
                        .map(|(g, _)| g)
                        .unwrap_or_else(|p| p.into_inner().0);
                }
            }
        }
    }

    /// The pause after the n-th failure in a row: uniformly random in the upper half of
    /// min(min_backoff · 2ⁿ, max_backoff), never outside the bounds.
    pub fn backoff(&self, failures: u32) -> Duration {
        let mut d = self.min_backoff;
        for _ in 0..failures {
            if d > self.max_backoff / 2 {
                d = self.max_backoff;
                break;
            }
            d *= 2;
        }
        (d / 2 + d.mul_f64(0.5 * jitter())).clamp(self.min_backoff, self.max_backoff)
    }

    fn token(&self) -> Result<String, AckError> {
        let err = |reason: String| AckError::Token {
            path: self.token_path.clone(),
            reason,
        };
        let raw = fs::read_to_string(&self.token_path).map_err(|e| err(e.to_string()))?;
        let token = raw.trim();
        if token.is_empty() {
            return Err(err("is empty".into()));
        }
        // It goes in a header: a line break would end it and let the rest forge others.
        if token.bytes().any(|b| !(0x21..0x7f).contains(&b)) {
            return Err(err(
                "holds a character a header cannot carry (a token is printable ASCII)".into(),
            ));
        }
        Ok(token.to_owned())
    }

    /// Sends one acknowledgement of `fingerprint` and waits for its answer: Ok on a 2xx.
    pub fn publish(&self, fingerprint: &str) -> Result<(), AckError> {
        let token = self.token()?;
        let body =
            serde_json::json!({"metadata": {"annotations": {&self.key: fingerprint}}}).to_string();
        let deadline = Instant::now() + self.timeout;
        let answer = self
            .exchange(&token, body.as_bytes(), deadline)
            .map_err(|e| {
                let reason = if e.kind() == io::ErrorKind::TimedOut || Instant::now() >= deadline {
                    format!("no answer within {:?}", self.timeout)
                } else {
                    e.to_string()
                };
                AckError::NoAnswer {
                    pod: self.pod.clone(),
                    reason: redact(&reason, &token),
                }
            })?;
        if (200..300).contains(&answer.status) {
            return Ok(());
        }
        Err(AckError::Refused {
            pod: self.pod.clone(),
            status: answer.status,
            status_line: status_line(answer.status, &answer.reason, &token),
            message: status_message(&answer.body, &token),
        })
    }

    /// One request on a connection of its own, within `deadline`.
    fn exchange(&self, token: &str, body: &[u8], deadline: Instant) -> io::Result<Answer> {
        let tcp = connect(&self.host, self.port, deadline)?;
        let conn = ClientConnection::new(Arc::clone(&self.tls), self.server_name.clone())
            .map_err(io::Error::other)?;
        let mut tls = StreamOwned::new(conn, tcp);
        let head = format!(
            "PATCH {} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/merge-patch+json\r\nAccept: application/json\r\nUser-Agent: {USER_AGENT}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            self.path,
            self.authority,
            body.len()
        );
        let mut request = head.into_bytes();
        request.extend_from_slice(body);
        // The handshake runs inside the first write: the same deadline bounds it.
        within(&tls.sock, deadline)?;
        tls.write_all(&request)?;
        tls.flush()?;
        read_answer(&mut tls, deadline)
    }
}

/// A uniformly distributed number in [0, 1) for the backoff's jitter, from std's randomly keyed
/// SipHash (RandomState) over the time: the jitter keeps the pods of a Deployment from coming back
/// together, it protects no secret, and a dependency for it would buy nothing.
fn jitter() -> f64 {
    use std::hash::BuildHasher;
    let x = std::collections::hash_map::RandomState::new().hash_one(Instant::now());
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// Sets both socket timeouts to what is left before `deadline`: a blocking socket's timeouts bound
/// one read or write each, so setting them before every one makes them a single deadline.
fn within(sock: &TcpStream, deadline: Instant) -> io::Result<()> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(io::Error::new(io::ErrorKind::TimedOut, "deadline passed"));
    }
    sock.set_read_timeout(Some(left))?;
    sock.set_write_timeout(Some(left))
}

fn connect(host: &str, port: u16, deadline: Instant) -> io::Result<TcpStream> {
    // In a pod the host is the Service's IP address: no name to resolve.
    let mut last = io::Error::new(io::ErrorKind::NotFound, format!("{host}: no address"));
    for addr in (host, port).to_socket_addrs()? {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "deadline passed"));
        }
        match TcpStream::connect_timeout(&addr, left) {
            Ok(s) => {
                s.set_nodelay(true)?;
                return Ok(s);
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

struct Answer {
    status: u16,
    reason: String,
    body: Vec<u8>,
}

fn timed<T>(r: io::Result<T>) -> io::Result<T> {
    // A blocking socket's timeout reads as WouldBlock on Unix.
    r.map_err(|e| match e.kind() {
        io::ErrorKind::WouldBlock => io::Error::new(io::ErrorKind::TimedOut, "deadline passed"),
        _ => e,
    })
}

/// Reads the answer's head and, of a refusal, up to MAX_ERROR_BODY of its body (a body that does
/// not end in time is cut: the status came, the body only explains it).
fn read_answer(
    tls: &mut StreamOwned<ClientConnection, TcpStream>,
    deadline: Instant,
) -> io::Result<Answer> {
    let mut buf = Vec::with_capacity(2048);
    let mut chunk = [0u8; 4096];
    let (status, reason, head_len, chunked, length) = loop {
        within(&tls.sock, deadline)?;
        let n = timed(tls.read(&mut chunk))?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the connection closed before an answer",
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut headers);
        match resp.parse(&buf) {
            Ok(httparse::Status::Complete(len)) => {
                let code = resp.code.unwrap_or(0);
                if (100..200).contains(&code) {
                    // An interim answer (100 Continue): the real one follows.
                    buf.drain(..len);
                    continue;
                }
                let header = |name: &str| {
                    resp.headers
                        .iter()
                        .find(|h| h.name.eq_ignore_ascii_case(name))
                        .map(|h| String::from_utf8_lossy(h.value).trim().to_ascii_lowercase())
                };
                let chunked = header("transfer-encoding").is_some_and(|v| v.ends_with("chunked"));
                let length = header("content-length").and_then(|v| v.parse::<usize>().ok());
                break (
                    code,
                    resp.reason.unwrap_or("").to_owned(),
                    len,
                    chunked,
                    length,
                );
            }
            Ok(httparse::Status::Partial) if buf.len() <= MAX_HEAD => {}
            Ok(httparse::Status::Partial) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("an answer whose head is longer than {MAX_HEAD} bytes"),
                ));
            }
            Err(e) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("not an HTTP answer: {e}"),
                ));
            }
        }
    };
    let mut body = buf.split_off(head_len);
    if (200..300).contains(&status) {
        // Accepted: the body (the patched Pod) tells nothing more; the connection closes.
        return Ok(Answer {
            status,
            reason,
            body: Vec::new(),
        });
    }
    let want = length.unwrap_or(usize::MAX).min(MAX_ERROR_BODY * 2);
    while body.len() < want {
        if within(&tls.sock, deadline).is_err() {
            break;
        }
        match timed(tls.read(&mut chunk)) {
            Ok(0) | Err(_) => break,
            Ok(n) => body.extend_from_slice(&chunk[..n]),
        }
    }
    if chunked {
        body = dechunk(&body);
    }
    body.truncate(length.unwrap_or(usize::MAX).min(MAX_ERROR_BODY));
    Ok(Answer {
        status,
        reason,
        body,
    })
}

/// The data of a chunked body, as much of it as `raw` holds.
fn dechunk(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = raw;
    while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
        let size_text = String::from_utf8_lossy(&rest[..eol]);
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let Ok(size) = usize::from_str_radix(size_text, 16) else {
            break;
        };
        if size == 0 {
            break;
        }
        rest = &rest[eol + 2..];
        let take = size.min(rest.len());
        out.extend_from_slice(&rest[..take]);
        if take < size || rest.len() < size + 2 {
            break;
        }
        rest = &rest[size + 2..];
    }
    out
}

fn redact(text: &str, token: &str) -> String {
    text.replace(token, "[token]")
}

fn quote_cut(msg: &str) -> String {
    let chars: Vec<char> = msg.chars().collect();
    if chars.len() > MAX_MESSAGE {
        let head: String = chars[..MAX_MESSAGE].iter().collect();
        format!("{head:?}…")
    } else {
        format!("{msg:?}")
    }
}

/// The message of the metav1.Status in `body`, else its start, with the token removed, quoted
/// and cut.
fn status_message(body: &[u8], token: &str) -> String {
    let text = String::from_utf8_lossy(body);
    let msg = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v.get("message").and_then(|m| m.as_str()).map(str::to_owned))
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| text.trim().to_owned());
    let msg = redact(&msg, token);
    if msg.is_empty() {
        return "no message".into();
    }
    quote_cut(&msg)
}

fn standard_reason(code: u16) -> &'static str {
    match code {
        200 => "OK",
        201 => "Created",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        409 => "Conflict",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

/// The status code and reason phrase: a phrase other than the standard one is the server's text
/// (any endpoint the CA trusts can answer), treated like a message: redacted, quoted, cut.
fn status_line(code: u16, reason: &str, token: &str) -> String {
    let std = standard_reason(code);
    if reason.is_empty() || reason == std {
        return format!("{code} {std}").trim_end().to_owned();
    }
    format!("{code} {}", quote_cut(&redact(reason, token)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotation_keys() {
        assert_eq!(
            annotation_key("weather-keyring"),
            "loaded.mrtr.dev/weather-keyring"
        );
        let long = "a".repeat(64);
        let key = annotation_key(&long);
        let name = key.strip_prefix(ANNOTATION_PREFIX).unwrap_or_default();
        assert_eq!(name.len(), 63);
        assert!(name.starts_with(&"a".repeat(46)));
        assert_eq!(&name[46..47], "-");
    }

    #[test]
    fn api_servers() {
        assert_eq!(
            parse_api_server("https://10.0.0.1:443").ok(),
            Some(("10.0.0.1".into(), 443))
        );
        assert_eq!(
            parse_api_server("https://[fd00::1]:6443/").ok(),
            Some(("fd00::1".into(), 6443))
        );
        assert_eq!(
            parse_api_server("https://kubernetes").ok(),
            Some(("kubernetes".into(), 443))
        );
        for bad in [
            "http://10.0.0.1:443",
            "https://a:0",
            "https://a:99999",
            "https://a/x",
            "https://u@a",
            "https://",
            "https://[::1",
        ] {
            assert!(parse_api_server(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn secret_names() {
        assert!(is_secret_name("weather-keyring"));
        assert!(is_secret_name("a.b-c"));
        for bad in ["", "A", "-a", "a-", "a..b", "a_b", &"a".repeat(254)] {
            assert!(!is_secret_name(bad), "{bad} accepted");
        }
    }

    #[test]
    fn chunked_bodies() {
        assert_eq!(
            dechunk(b"5\r\nhello\r\n6;x=y\r\n world\r\n0\r\n\r\n"),
            b"hello world"
        );
        assert_eq!(dechunk(b"a\r\nhel"), b"hel");
        assert_eq!(dechunk(b"zz\r\n"), b"");
    }

    #[test]
    fn messages_lose_the_token() {
        let tok = "secret-token-value";
        let m = status_message(
            br#"{"kind":"Status","message":"token secret-token-value refused"}"#,
            tok,
        );
        assert_eq!(m, "\"token [token] refused\"");
        assert_eq!(status_message(b"", tok), "no message");
        assert!(status_message("x".repeat(500).as_bytes(), tok).ends_with('…'));
        assert_eq!(status_line(409, "Conflict", tok), "409 Conflict");
        assert_eq!(
            status_line(500, "oops secret-token-value", tok),
            "500 \"oops [token]\""
        );
    }
}
