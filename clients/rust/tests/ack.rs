//! The acknowledgement reporter against a real HTTPS server on loopback, with a CA generated for
//! the test (as the Python package's fakeapi.py): the request, the retries, the token read for
//! every request, one deadline per request, and what it must refuse: a certificate of another CA,
//! a redirect, the proxy the environment names.
#![forbid(unsafe_code)]

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mrtr_keyring::{AckConfig, AckError, AckReporter};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::{ServerConfig, ServerConnection, StreamOwned};

const SECRET: &str = "weather-keyring";
const FP_A: &str = "0123456789abcdef";
const FP_B: &str = "fedcba9876543210";

/// A CA of the test's own and a server configuration whose certificate it issued for 127.0.0.1.
struct Pki {
    ca_pem: String,
    server: Arc<ServerConfig>,
}

#[allow(deprecated)] // the provider the crate uses (src/ack.rs says why ring)
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn pki() -> Pki {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
        .unwrap()
        .signed_by(&leaf_key, &ca)
        .unwrap();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
    let server = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![CertificateDer::from(leaf.der().to_vec())], key)
        .unwrap();
    Pki {
        ca_pem: ca.pem(),
        server: Arc::new(server),
    }
}

/// What the fake API server answers one request with.
#[derive(Clone)]
enum Reply {
    Status(u16, &'static str),
    Redirect(String),
    /// Reads the request and closes the connection: an answer lost on the way.
    Drop,
    /// Sends a status line and then one header byte at a time, never ending the head.
    Trickle,
}

#[derive(Debug, Clone)]
struct Request {
    head: String,
    body: String,
}

impl Request {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().skip(1).find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    }
}

#[derive(Default)]
struct Shared {
    script: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Request>>,
    /// The one token accepted; others get 401.
    valid_token: Mutex<String>,
    connections: AtomicUsize,
    failed_handshakes: AtomicUsize,
}

struct FakeApi {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl FakeApi {
    fn start(config: Arc<ServerConfig>, token: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared::default());
        *shared.valid_token.lock().unwrap() = token.to_owned();
        let s = Arc::clone(&shared);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { return };
                s.connections.fetch_add(1, Ordering::SeqCst);
                let (s, config) = (Arc::clone(&s), Arc::clone(&config));
                std::thread::spawn(move || serve(conn, config, &s));
            }
        });
        Self { addr, shared }
    }

    fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    fn script(&self, replies: impl IntoIterator<Item = Reply>) {
        self.shared.script.lock().unwrap().extend(replies);
    }

    fn requests(&self) -> Vec<Request> {
        self.shared.requests.lock().unwrap().clone()
    }
}

fn serve(tcp: TcpStream, config: Arc<ServerConfig>, s: &Shared) {
    let conn = ServerConnection::new(config).unwrap();
    let mut tls = StreamOwned::new(conn, tcp);
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let (head, body) = loop {
        match tls.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(_) => {
                if tls.conn.is_handshaking() {
                    s.failed_handshakes.fetch_add(1, Ordering::SeqCst);
                }
                return;
            }
        }
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        let req = Request {
            head: head.clone(),
            body: String::new(),
        };
        let len: usize = req
            .header("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if buf.len() >= end + 4 + len {
            break (
                head,
                String::from_utf8_lossy(&buf[end + 4..end + 4 + len]).into_owned(),
            );
        }
    };
    let req = Request { head, body };
    let authorized =
        req.header("authorization") == Some(format!("Bearer {}", s.valid_token.lock().unwrap()));
    s.requests.lock().unwrap().push(req);
    let reply = if authorized {
        s.script
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(Reply::Status(200, r#"{"kind":"Pod"}"#))
    } else {
        Reply::Status(401, r#"{"kind":"Status","message":"Unauthorized"}"#)
    };
    let answer = |code: u16, extra: &str, body: &str| {
        format!(
            "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}\r\n{body}",
            body.len()
        )
    };
    let _ = match reply {
        Reply::Status(code, body) => tls.write_all(answer(code, "", body).as_bytes()),
        Reply::Redirect(to) => {
            tls.write_all(answer(307, &format!("Location: {to}\r\n"), "").as_bytes())
        }
        Reply::Drop => return,
        Reply::Trickle => {
            let _ = tls.write_all(b"HTTP/1.1 200 OK\r\n");
            let _ = tls.flush();
            loop {
                std::thread::sleep(Duration::from_millis(20)); // the trickle's pace, not a wait
                if tls.write_all(b"X").and_then(|()| tls.flush()).is_err() {
                    return;
                }
            }
        }
    };
    let _ = tls.flush();
    tls.conn.send_close_notify();
    let _ = tls.flush();
}

/// A service account directory: token, ca.crt, namespace.
struct ServiceAccount {
    dir: PathBuf,
}

impl ServiceAccount {
    fn new(name: &str, ca_pem: &str, token: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "mrtr-ack-test-{}-{name}-{}",
            std::process::id(),
            Instant::now().elapsed().as_nanos()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("ca.crt"), ca_pem).unwrap();
        std::fs::write(dir.join("namespace"), "mcp\n").unwrap();
        let sa = Self { dir };
        sa.set_token(token);
        sa
    }

    fn set_token(&self, token: &str) {
        // As the kubelet does: a new file put in place at once.
        let tmp = self.dir.join(".token.tmp");
        std::fs::write(&tmp, format!("{token}\n")).unwrap();
        std::fs::rename(tmp, self.dir.join("token")).unwrap();
    }
}

impl Drop for ServiceAccount {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

type Errors = Arc<Mutex<Vec<String>>>;
type Statuses = Arc<Mutex<Vec<Option<u16>>>>;

fn config(api: &str, sa: &Path) -> (AckConfig, Errors, Statuses) {
    let errors: Errors = Arc::default();
    let statuses: Statuses = Arc::default();
    let mut c = AckConfig::new(SECRET);
    c.pod_name = Some("weather-0".into());
    c.api_server = Some(api.to_owned());
    c.service_account_dir = Some(sa.to_owned());
    c.min_backoff = Duration::from_millis(1);
    c.max_backoff = Duration::from_millis(20);
    c.timeout = Duration::from_secs(5);
    let (e, st) = (Arc::clone(&errors), Arc::clone(&statuses));
    c.on_error = Some(Box::new(move |err: &AckError| {
        e.lock().unwrap().push(err.to_string());
        st.lock().unwrap().push(err.status());
    }));
    (c, errors, statuses)
}

/// One pod for a test: a CA of its own, an API server whose certificate the CA issued and that
/// accepts `token`, and the pod's service account directory, which trusts the CA and holds
/// `token`.
struct Pod {
    pki: Pki,
    api: FakeApi,
    sa: ServiceAccount,
}

impl Pod {
    fn new(name: &str, token: &str) -> Self {
        let pki = pki();
        let api = FakeApi::start(Arc::clone(&pki.server), token);
        let sa = ServiceAccount::new(name, &pki.ca_pem, token);
        Self { pki, api, sa }
    }

    /// The reporter's configuration for this pod (`config`).
    fn config(&self) -> (AckConfig, Errors, Statuses) {
        config(&self.api.url(), &self.sa.dir)
    }
}

/// A reporter running on its own thread (`AckReporter::start`), until `stop`.
struct Running {
    reporter: Arc<AckReporter>,
    thread: std::thread::JoinHandle<()>,
}

fn start(c: AckConfig) -> Running {
    let reporter = Arc::new(AckReporter::new(c).unwrap());
    let thread = reporter.start();
    Running { reporter, thread }
}

impl Running {
    fn stop(self) {
        self.reporter.stop();
        self.thread.join().unwrap();
    }
}

/// Waits until `cond` holds (10 s at most, then fails naming `what`).
fn eventually(what: &str, cond: impl Fn() -> bool) {
    let end = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn the_request() {
    let pod = Pod::new("request", "tok-1");
    let (c, _, _) = pod.config();
    AckReporter::new(c).unwrap().publish(FP_A).unwrap();
    let reqs = pod.api.requests();
    assert_eq!(reqs.len(), 1);
    let req = &reqs[0];
    assert_eq!(
        req.head.lines().next().unwrap(),
        "PATCH /api/v1/namespaces/mcp/pods/weather-0?fieldManager=mrtr-ack HTTP/1.1"
    );
    assert_eq!(req.header("authorization").as_deref(), Some("Bearer tok-1"));
    assert_eq!(
        req.header("content-type").as_deref(),
        Some("application/merge-patch+json")
    );
    assert_eq!(req.header("accept").as_deref(), Some("application/json"));
    assert_eq!(req.header("host"), Some(pod.api.addr.to_string()));
    assert_eq!(
        req.body,
        format!(r#"{{"metadata":{{"annotations":{{"loaded.mrtr.dev/{SECRET}":"{FP_A}"}}}}}}"#)
    );
}

#[test]
fn retries_until_accepted() {
    let pod = Pod::new("retries", "tok");
    pod.api.script([
        Reply::Status(
            409,
            r#"{"kind":"Status","message":"the object has been modified"}"#,
        ),
        Reply::Status(403, r#"{"kind":"Status","message":"forbidden"}"#),
        Reply::Status(500, "oops"),
        Reply::Drop,
    ]);
    let (mut c, errors, statuses) = pod.config();
    let metrics = mrtr_keyring::metrics::Metrics::new();
    c.metrics = Some(Arc::clone(&metrics));
    let r = start(c);
    r.reporter.report(FP_A);
    eventually("the acknowledgement", || r.reporter.acknowledged() == FP_A);
    r.stop();
    // The state the metric shows is the last one: acknowledged, after the retries.
    let text = metrics.exposition();
    assert!(
        text.contains("mrtr_consumer_ack_state{state=\"acknowledged\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("mrtr_consumer_ack_state{state=\"retrying\"} 0"),
        "{text}"
    );
    assert_eq!(
        *statuses.lock().unwrap(),
        vec![Some(409), Some(403), Some(500), None]
    );
    let errors = errors.lock().unwrap();
    assert!(
        errors[0].contains("the object has been modified"),
        "{}",
        errors[0]
    );
    assert!(errors[1].contains("mrtr-keyring-consumer"), "{}", errors[1]);
    assert_eq!(pod.api.requests().len(), 5);
}

#[test]
fn refuses_a_certificate_of_another_ca() {
    let (pod_ca, foreign) = (pki(), pki());
    let api = FakeApi::start(Arc::clone(&foreign.server), "tok");
    let sa = ServiceAccount::new("foreign", &pod_ca.ca_pem, "tok");
    let (c, _, _) = config(&api.url(), &sa.dir);
    let r = AckReporter::new(c).unwrap();
    let err = r.publish(FP_A).unwrap_err();
    assert!(matches!(err, AckError::NoAnswer { .. }), "{err}");
    assert!(err.to_string().contains("certificate"), "{err}");
    eventually("the refused handshake", || {
        api.shared.failed_handshakes.load(Ordering::SeqCst) == 1
    });
    assert!(
        api.requests().is_empty(),
        "the token reached a server of another CA"
    );
}

#[test]
fn refuses_redirects() {
    let pod = Pod::new("redirect", "tok");
    // Where the redirect points: a server the pod's CA trusts too, which must see nothing.
    let elsewhere = FakeApi::start(Arc::clone(&pod.pki.server), "tok");
    pod.api.script([
        Reply::Redirect(format!(
            "{}/api/v1/namespaces/mcp/pods/weather-0",
            elsewhere.url()
        )),
        Reply::Redirect("/api/v1/namespaces/other/pods/x".into()),
    ]);
    let (c, errors, statuses) = pod.config();
    let r = start(c);
    r.reporter.report(FP_A);
    eventually("the acknowledgement", || r.reporter.acknowledged() == FP_A);
    r.stop();
    assert_eq!(*statuses.lock().unwrap(), vec![Some(307), Some(307)]);
    assert!(errors.lock().unwrap()[0].contains("not followed"));
    assert_eq!(elsewhere.shared.connections.load(Ordering::SeqCst), 0);
    let paths: Vec<String> = pod
        .api
        .requests()
        .iter()
        .map(|r| r.head.lines().next().unwrap().to_owned())
        .collect();
    assert!(
        paths
            .iter()
            .all(|p| p.contains("/namespaces/mcp/pods/weather-0?")),
        "{paths:?}"
    );
}

#[test]
fn rereads_the_token_for_every_request() {
    let pod = Pod::new("token", "tok-1");
    let (c, _, statuses) = pod.config();
    let r = start(c);
    r.reporter.report(FP_A);
    eventually("the first acknowledgement", || {
        r.reporter.acknowledged() == FP_A
    });
    // The kubelet replaces the token; the API server stops accepting the old one.
    *pod.api.shared.valid_token.lock().unwrap() = "tok-2".into();
    pod.sa.set_token("tok-2");
    r.reporter.report(FP_B);
    eventually("the second acknowledgement", || {
        r.reporter.acknowledged() == FP_B
    });
    r.stop();
    assert!(
        statuses.lock().unwrap().is_empty(),
        "a request carried an old token"
    );
    let auth: Vec<String> = pod
        .api
        .requests()
        .iter()
        .filter_map(|r| r.header("authorization"))
        .collect();
    assert_eq!(auth, vec!["Bearer tok-1", "Bearer tok-2"]);
}

#[test]
fn one_deadline_bounds_a_trickled_answer() {
    let pod = Pod::new("deadline", "tok");
    pod.api.script([Reply::Trickle]);
    let (mut c, _, _) = pod.config();
    // Each byte comes well within any idle timeout; only a deadline over the whole answer ends it.
    c.timeout = Duration::from_millis(300);
    let r = AckReporter::new(c).unwrap();
    let err = r.publish(FP_A).unwrap_err();
    assert!(matches!(err, AckError::NoAnswer { .. }), "{err}");
    assert!(err.to_string().contains("no answer within 300ms"), "{err}");
    // And the next request goes through.
    r.publish(FP_A).unwrap();
}

#[test]
fn resends_after_a_lost_answer() {
    let pod = Pod::new("lost", "tok");
    let api = &pod.api;
    let (c, _, statuses) = pod.config();
    let r = start(c);
    r.reporter.report(FP_A);
    eventually("A acknowledged", || r.reporter.acknowledged() == FP_A);
    // B may be applied, its answer lost; then the keyring returns to A, which must be sent again.
    api.script([Reply::Drop, Reply::Status(500, ""), Reply::Status(500, "")]);
    r.reporter.report(FP_B);
    eventually("B's lost answer", || !statuses.lock().unwrap().is_empty());
    r.reporter.report(FP_A);
    eventually("A sent again", || {
        api.requests().last().is_some_and(|q| q.body.contains(FP_A)) && api.requests().len() >= 3
    });
    eventually("A acknowledged again", || {
        r.reporter.acknowledged() == FP_A && api.shared.script.lock().unwrap().is_empty()
    });
    r.stop();
    let bodies: Vec<bool> = api
        .requests()
        .iter()
        .map(|q| q.body.contains(FP_B))
        .collect();
    // After A: B once (lost), then A until accepted; never B after A was reported again.
    let first_a_again = bodies.iter().skip(2).position(|&b| !b).unwrap() + 2;
    assert!(bodies[first_a_again..].iter().all(|&b| !b), "{bodies:?}");
}

#[test]
fn backoff_bounds() {
    let pki = pki();
    let sa = ServiceAccount::new("backoff", &pki.ca_pem, "tok");
    let (mut c, _, _) = config("https://127.0.0.1:1", &sa.dir);
    c.min_backoff = Duration::from_millis(200);
    c.max_backoff = Duration::from_secs(30);
    let r = AckReporter::new(c).unwrap();
    for _ in 0..100 {
        let first = r.backoff(1);
        assert!(first >= Duration::from_millis(200) && first <= Duration::from_millis(400));
        let late = r.backoff(40);
        assert!(late >= Duration::from_secs(15) && late <= Duration::from_secs(30));
    }
}

type Change = Box<dyn Fn(&mut AckConfig)>;

#[test]
fn configuration_errors_name_what_is_wrong() {
    let pki = pki();
    let sa = ServiceAccount::new("config", &pki.ca_pem, "tok");
    let cases: Vec<(Change, &str)> = vec![
        (Box::new(|c| c.secret = String::new()), "no secret"),
        (
            Box::new(|c| c.secret = "Weather_Keyring".into()),
            "not a Secret name",
        ),
        (
            Box::new(|c| c.api_server = Some("http://127.0.0.1:6443".into())),
            "not an https:// URL",
        ),
        (
            Box::new(|c| {
                c.service_account_dir = Some(PathBuf::from("/nonexistent"));
                c.namespace = Some("mcp".into());
            }),
            "ca.crt",
        ),
        (
            Box::new(|c| c.service_account_dir = Some(PathBuf::from("/nonexistent"))),
            "no namespace",
        ),
        (
            Box::new(|c| c.min_backoff = Duration::from_secs(60)),
            "exceeds max_backoff",
        ),
        (Box::new(|c| c.timeout = Duration::ZERO), "timeout"),
    ];
    for (change, want) in cases {
        let (mut c, _, _) = config("https://127.0.0.1:6443", &sa.dir);
        change(&mut c);
        let err = AckReporter::new(c).unwrap_err().to_string();
        assert!(err.contains(want), "{err} does not say {want}");
    }
    std::fs::write(sa.dir.join("ca.crt"), "not a certificate").unwrap();
    let (c, _, _) = config("https://127.0.0.1:6443", &sa.dir);
    let err = AckReporter::new(c).unwrap_err().to_string();
    assert!(err.contains("no PEM certificate"), "{err}");
}

/// The proxy variables are for the server's outbound calls, never for this request. Setting the
/// environment of a running test is unsafe in Rust 2024 (other threads read it), so the request
/// is sent by this test binary run again, as a child with every proxy variable set to a listener
/// that must see nothing.
#[test]
fn ignores_the_proxy_environment() {
    const CHILD: &str = "MRTR_ACK_TEST_CHILD_API";
    if let Ok(api) = std::env::var(CHILD) {
        let dir = PathBuf::from(std::env::var("MRTR_ACK_TEST_CHILD_SA").unwrap());
        let (c, _, _) = config(&api, &dir);
        AckReporter::new(c).unwrap().publish(FP_A).unwrap();
        return;
    }
    let pod = Pod::new("proxy", "tok");
    let (api, sa) = (&pod.api, &pod.sa);
    let proxy = TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy_url = format!("http://{}", proxy.local_addr().unwrap());
    let mut child = std::process::Command::new(std::env::current_exe().unwrap());
    child
        .args([
            "--exact",
            "ignores_the_proxy_environment",
            "--test-threads=1",
        ])
        .env(CHILD, api.url())
        .env("MRTR_ACK_TEST_CHILD_SA", &sa.dir)
        .env_remove("NO_PROXY")
        .env_remove("no_proxy");
    for var in [
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "ALL_PROXY",
        "all_proxy",
    ] {
        child.env(var, &proxy_url);
    }
    let out = child.output().unwrap();
    assert!(
        out.status.success(),
        "the child failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(api.requests().len(), 1);
    proxy.set_nonblocking(true).unwrap();
    assert!(proxy.accept().is_err(), "a connection reached the proxy");
}
