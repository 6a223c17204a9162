//! An in-process stand-in for algod's REST API on 127.0.0.1, serving given blocks the way algod
//! serves them, for the tests of `txgate ... --algod`.
//!
//! Endpoints and answers (go-algorand `daemon/algod/api/algod.oas2.json` and
//! `daemon/algod/api/server/v2/handlers.go`):
//! - every request without the right `X-Algo-API-Token` header: 401
//!   `{"message":"Invalid API Token"}` (go-algorand `middlewares.InvalidTokenMessage`);
//! - `GET /v2/status`: a `NodeStatusResponse` JSON with its required fields, `last-round` being
//!   the latest round released so far;
//! - `GET /v2/status/wait-for-block-after/{round}`: the same once a round after `round` is
//!   released, or after the server's wait timeout (algod's is one minute);
//! - `GET /v2/blocks/{round}?format=msgpack`: the block's bytes as given (`application/msgpack`)
//!   when the round is released, else 404 `{"message":"failed to retrieve information from the
//!   ledger"}` (go-algorand `errFailedLookingUpLedger`).
//!
//! The server is a minimal HTTP/1.1 one on `std::net` (GET, keep-alive, `Content-Length`), one
//! thread per connection, `TCP_NODELAY` and one write per answer, as Go's `net/http` under algod
//! does: a server that writes headers and body in two segments without it makes every answer
//! wait out the client's delayed ACK (Linux's `TCP_DELACK_MIN`, 40 ms).
//!
//! Rounds are released by [`FakeAlgod::release_to`] or one at a time by
//! [`FakeAlgod::release_every`] (from the first wait-for-block-after request on); [`FakeAlgod::fail_next`] makes the next requests of a path
//! answer an error status (a 503, say) before it is served normally again. Every request is
//! logged with its answer's status ([`FakeAlgod::requests`]).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The header algod reads its API token from.
pub const TOKEN_HEADER: &str = "X-Algo-API-Token";

/// How often a connection's thread, idle between requests, looks at the stop flag.
const IDLE: Duration = Duration::from_millis(500);
/// Largest request head read (request line and headers).
const MAX_HEAD_BYTES: usize = 16 << 10;

struct State {
    latest: u64,
    /// (path prefix, status, answers left).
    failures: Vec<(String, u16, u32)>,
    log: Vec<(String, u16)>,
    /// A wait-for-block-after request has come.
    waited: bool,
    stopped: bool,
}

struct Shared {
    blocks: BTreeMap<u64, Vec<u8>>,
    token: String,
    wait_timeout: Duration,
    state: Mutex<State>,
    released: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A running stand-in; dropping it stops the server and joins its threads.
pub struct FakeAlgod {
    addr: SocketAddr,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl FakeAlgod {
    /// Serves `blocks` (round -> msgpack bytes) on an ephemeral port of 127.0.0.1 to clients
    /// with `token`, rounds up to `latest` released; wait-for-block-after gives up after
    /// `wait_timeout`.
    ///
    /// # Panics
    /// Panics when no port can be bound.
    pub fn start(
        blocks: BTreeMap<u64, Vec<u8>>,
        token: &str,
        latest: u64,
        wait_timeout: Duration,
    ) -> FakeAlgod {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let addr = listener
            .local_addr()
            .expect("a bound listener has an address");
        let shared = Arc::new(Shared {
            blocks,
            token: token.to_owned(),
            wait_timeout,
            state: Mutex::new(State {
                latest,
                failures: Vec::new(),
                log: Vec::new(),
                waited: false,
                stopped: false,
            }),
            released: Condvar::new(),
        });
        let accept = {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if shared.lock().stopped {
                        return;
                    }
                    let Ok(stream) = stream else { continue };
                    let shared = Arc::clone(&shared);
                    // Connection threads end when the client closes, on an idle timeout, or
                    // at the stop; they are not joined.
                    std::thread::spawn(move || serve(&shared, stream));
                }
            })
        };
        FakeAlgod {
            addr,
            shared,
            threads: vec![accept],
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The latest round released.
    pub fn latest(&self) -> u64 {
        self.shared.lock().latest
    }

    /// Releases every round up to `round`, waking waiting requests.
    pub fn release_to(&self, round: u64) {
        let mut state = self.shared.lock();
        state.latest = state.latest.max(round);
        self.shared.released.notify_all();
    }

    /// Releases one round every `interval` until `last`, on a thread of its own (joined at
    /// drop), from the first wait-for-block-after request on: a client that catches up first
    /// and then follows sees the rounds after its catch-up come one at a time.
    pub fn release_every(&mut self, interval: Duration, last: u64) {
        let shared = Arc::clone(&self.shared);
        self.threads.push(std::thread::spawn(move || {
            {
                let mut state = shared.lock();
                while !state.waited && !state.stopped {
                    state = shared
                        .released
                        .wait(state)
                        .unwrap_or_else(|e| e.into_inner());
                }
            }
            loop {
                std::thread::sleep(interval);
                let mut state = shared.lock();
                if state.stopped || state.latest >= last {
                    return;
                }
                state.latest += 1;
                shared.released.notify_all();
            }
        }));
    }

    /// The next `count` requests whose path starts with `path` answer `status` with an error
    /// body, instead of being served.
    pub fn fail_next(&self, path: &str, status: u16, count: u32) {
        self.shared
            .lock()
            .failures
            .push((path.to_owned(), status, count));
    }

    /// Every request so far: (path with query, answer status), in arrival order.
    pub fn requests(&self) -> Vec<(String, u16)> {
        self.shared.lock().log.clone()
    }
}

impl Drop for FakeAlgod {
    fn drop(&mut self) {
        self.shared.lock().stopped = true;
        self.shared.released.notify_all();
        // Wakes the accept loop, which then sees the flag.
        let _ = TcpStream::connect(self.addr);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn status_json(latest: u64) -> String {
    // The required fields of `NodeStatusResponse` (algod.oas2.json), times in nanoseconds.
    format!(
        r#"{{"catchup-time":0,"last-round":{latest},"last-version":"https://github.com/algorandfoundation/specs/tree/abd3d4823c6f77349fc04c3af7b1e99fe4df699f","next-version":"https://github.com/algorandfoundation/specs/tree/abd3d4823c6f77349fc04c3af7b1e99fe4df699f","next-version-round":{},"next-version-supported":true,"stopped-at-unsupported-round":false,"time-since-last-round":1000000}}"#,
        latest + 1
    )
}

/// One request head: the method, the target (path and query), the headers.
struct Request {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    close: bool,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Reads one request head; `None` when the client closed, went idle, or sent no HTTP.
fn read_request(reader: &mut BufReader<TcpStream>, shared: &Shared) -> Option<Request> {
    let mut head = Vec::new();
    loop {
        let mut line = Vec::new();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => return None,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) && head.is_empty()
                    && line.is_empty()
                    && !shared.lock().stopped =>
            {
                continue;
            }
            Err(_) => return None,
        }
        if line == b"\r\n" || line == b"\n" {
            break;
        }
        head.extend_from_slice(&line);
        if head.len() > MAX_HEAD_BYTES {
            return None;
        }
    }
    let head = String::from_utf8(head).ok()?;
    let mut lines = head.lines();
    let mut first = lines.next()?.split_whitespace();
    let (method, target, version) = (first.next()?, first.next()?, first.next()?);
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let close = version == "HTTP/1.0"
        || headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("connection") && v.eq_ignore_ascii_case("close"));
    Some(Request {
        method: method.to_owned(),
        target: target.to_owned(),
        headers,
        close,
    })
}

/// Serves one connection's requests in turn (keep-alive).
fn serve(shared: &Shared, stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(IDLE));
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    while let Some(request) = read_request(&mut reader, shared) {
        let (status, body, msgpack) = route(shared, &request);
        shared.lock().log.push((request.target.clone(), status));
        let reason = match status {
            200 => "OK",
            400 => "Bad Request",
            401 => "Unauthorized",
            404 => "Not Found",
            405 => "Method Not Allowed",
            503 => "Service Unavailable",
            _ => "Error",
        };
        let content_type = if msgpack {
            "application/msgpack"
        } else {
            "application/json"
        };
        let mut answer = format!(
            "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{}\r\n",
            body.len(),
            if request.close { "Connection: close\r\n" } else { "" }
        )
        .into_bytes();
        answer.extend_from_slice(&body);
        // One write: headers and body leave in the same segments.
        if writer.write_all(&answer).is_err() || request.close {
            return;
        }
    }
}

fn message(text: &str) -> Vec<u8> {
    format!(r#"{{"message":"{text}"}}"#).into_bytes()
}

fn route(shared: &Shared, request: &Request) -> (u16, Vec<u8>, bool) {
    let url = request.target.as_str();
    if request.header(TOKEN_HEADER) != Some(shared.token.as_str()) {
        return (401, message("Invalid API Token"), false);
    }
    {
        let mut state = shared.lock();
        if let Some(f) = state
            .failures
            .iter_mut()
            .find(|(path, _, left)| *left > 0 && url.starts_with(path.as_str()))
        {
            f.2 -= 1;
            return (f.1, message("injected failure"), false);
        }
    }
    if request.method != "GET" {
        return (405, message("only GET is served"), false);
    }
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    if path == "/v2/status" {
        return (200, status_json(shared.lock().latest).into_bytes(), false);
    }
    if let Some(round) = path.strip_prefix("/v2/status/wait-for-block-after/") {
        let Ok(round) = round.trim_end_matches('/').parse::<u64>() else {
            return (400, message("bad round"), false);
        };
        let deadline = Instant::now() + shared.wait_timeout;
        let mut state = shared.lock();
        if !state.waited {
            state.waited = true;
            shared.released.notify_all();
        }
        while state.latest <= round && !state.stopped {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            state = shared
                .released
                .wait_timeout(state, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        return (200, status_json(state.latest).into_bytes(), false);
    }
    if let Some(round) = path.strip_prefix("/v2/blocks/") {
        let Ok(round) = round.parse::<u64>() else {
            return (400, message("bad round"), false);
        };
        if !query.split('&').any(|kv| kv == "format=msgpack") {
            return (
                400,
                message("this stand-in serves format=msgpack only"),
                false,
            );
        }
        let latest = shared.lock().latest;
        return match shared.blocks.get(&round) {
            Some(bytes) if round <= latest => (200, bytes.clone(), true),
            _ => (
                404,
                message("failed to retrieve information from the ledger"),
                false,
            ),
        };
    }
    (404, message("no such endpoint"), false)
}
