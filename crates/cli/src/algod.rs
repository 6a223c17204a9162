//! A blocking client for the three endpoints of algod's REST API (v2) that a block source
//! needs, with timeouts and retries.
//!
//! Endpoints (go-algorand `daemon/algod/api/algod.oas2.json`; handlers in
//! `daemon/algod/api/server/v2/handlers.go`):
//! - `GET /v2/status`: the node's status, a JSON `NodeStatusResponse` whose required
//!   `last-round` is the latest round the node has;
//! - `GET /v2/status/wait-for-block-after/{round}`: the same status once the node has a round
//!   after `round`, or after algod's one-minute `WaitForBlockTimeout` whatever the round;
//! - `GET /v2/blocks/{round}?format=msgpack`: the block as msgpack `{block, cert}`, the bytes
//!   algod stores (`rpcs.RawBlockBytes`); 404 when the ledger has no such round
//!   (`ledgercore.ErrNoEntry`).
//!
//! Every request carries the API token in the `X-Algo-API-Token` header (the spec's `api_key`
//! security definition); algod answers 401 `{"message": "Invalid API Token"}` to a missing or
//! wrong one. Error bodies are JSON `{"message": ...}` (go-algorand `model.ErrorResponse`).
//!
//! **Timeouts and retries**: each try of a request has a deadline, from connecting to the last
//! byte of the answer (`--algod-timeout`, default [`DEFAULT_TIMEOUT`]; a wait-for-block-after
//! request gets algod's one-minute wait on top). Connection errors, timeouts and 5xx answers are
//! retried [`Algod::retries`] times, waiting [`FIRST_BACKOFF`] before the first retry and twice
//! as long before each next one, at most [`MAX_BACKOFF`], with a warning line on stderr for each
//! retry; a request gives up early when the next try would start after its total budget
//! (`--algod-max-wait`, default [`DEFAULT_MAX_WAIT`]) has run out. So a node that accepts
//! connections and never answers (or answers a byte a second) fails a command within about
//! that budget, never silently. 401/403, 404 and other 4xx answers are final.
//!
//! **The token** is kept in a [`Token`], whose `Debug` and `Display` print `<redacted>`; it is
//! sent only in the request header, and no error or message holds it. The URL is shown without
//! any `user:password@` part.

use std::fmt;
use std::time::{Duration, Instant};

use serde::Deserialize;
use txgate_algorand::Round;

/// The header algod reads the API token from.
pub(crate) const TOKEN_HEADER: &str = "X-Algo-API-Token";
/// Wait before the first retry.
pub(crate) const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// Longest wait between two tries.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(8);
/// Default retries after the first try (with the backoff above, 7.75 s of waiting in all).
pub(crate) const DEFAULT_RETRIES: u32 = 5;
/// Default deadline of one try of a request, from connecting to the answer's last byte: algod's
/// largest blocks are a few MB, which a working link carries in well under this.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(15);
/// Default total budget of one request with its retries: a node that does not answer ends the
/// command after about a minute.
pub(crate) const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(60);
/// How long algod holds a wait-for-block-after request at most (go-algorand
/// `WaitForBlockTimeout`, one minute): such a request's deadline is this plus the try's.
pub(crate) const WAIT_FOR_BLOCK: Duration = Duration::from_secs(60);
/// Largest response body read (a block far above any algod block; the cap only bounds memory).
pub(crate) const MAX_BODY_BYTES: u64 = 256 << 20;

/// An algod API token. `Debug` and `Display` never show it; parsing never fails (so that no
/// parse error can echo it), [`Algod::new`] checks it.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Token(String);

impl std::str::FromStr for Token {
    type Err = std::convert::Infallible;

    /// The token, trimmed of surrounding white space (a token file ends in a newline).
    fn from_str(s: &str) -> Result<Token, Self::Err> {
        Ok(Token(s.trim().to_owned()))
    }
}

impl Token {
    /// Whether the token can travel in an HTTP header (visible ASCII, no spaces).
    fn check(&self) -> Result<(), &'static str> {
        if self.0.bytes().all(|b| b.is_ascii_graphic()) {
            Ok(())
        } else {
            Err(
                "the API token holds characters an HTTP header cannot carry (only visible ASCII, no spaces)",
            )
        }
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// The part of algod's `NodeStatusResponse` txgate reads.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct NodeStatus {
    /// `last-round`: the latest round the node has.
    #[serde(rename = "last-round")]
    pub(crate) last_round: Round,
}

/// Why an algod request failed. Every message names the node (its URL without credentials).
#[derive(Debug, thiserror::Error)]
pub(crate) enum AlgodError {
    /// The `--algod` value is not a usable URL.
    #[error("--algod {url}: {message}")]
    Url {
        /// The value as given (credentials removed).
        url: String,
        /// What is wrong.
        message: String,
    },
    /// 401 or 403: the token is missing or wrong.
    #[error(
        "algod {url}: the API token was refused ({status} {message}); give the node's token (its data directory's algod.token) with --algod-token or $ALGOD_TOKEN"
    )]
    Unauthorized {
        /// The node.
        url: String,
        /// 401 or 403.
        status: u16,
        /// algod's message.
        message: String,
    },
    /// 404 for a block: the node does not have the round.
    #[error("algod {url}: round {round} is not available ({message}): {}", why_missing(*.round, *.latest))]
    RoundNotAvailable {
        /// The node.
        url: String,
        /// The round asked for.
        round: Round,
        /// The node's latest round, when a status request could tell.
        latest: Option<Round>,
        /// algod's message.
        message: String,
    },
    /// Another 4xx answer (or a 404 for something other than a block).
    #[error("algod {url}: GET {path}: {status} {message}")]
    Refused {
        /// The node.
        url: String,
        /// The request path.
        path: String,
        /// The HTTP status.
        status: u16,
        /// algod's message.
        message: String,
    },
    /// Connection errors, timeouts or 5xx answers on every try (the retries or the total
    /// budget ran out).
    #[error(
        "algod {url}: GET {path} failed {tries} times in {secs:.1} s, the last time with: {cause}"
    )]
    Unreachable {
        /// The node.
        url: String,
        /// The request path.
        path: String,
        /// Tries made.
        tries: u32,
        /// Seconds from the first try to the giving up.
        secs: f64,
        /// The last failure.
        cause: String,
    },
    /// A 200 answer that is not what algod sends.
    #[error("algod {url}: GET {path}: unexpected answer: {message}")]
    BadResponse {
        /// The node.
        url: String,
        /// The request path.
        path: String,
        /// What is wrong.
        message: String,
    },
}

fn why_missing(round: Round, latest: Option<Round>) -> String {
    match latest {
        Some(latest) if round > latest => {
            format!("it is after the node's latest round, {latest}")
        }
        Some(latest) => format!(
            "the node's latest round is {latest}; a non-archival node keeps only its recent rounds (ask for later ones with --rounds)"
        ),
        None => "the node does not have it".into(),
    }
}

impl AlgodError {
    /// Whether the user can fix it with other arguments (a bad URL or token, a round the node
    /// does not have, a request the node refuses), as opposed to a failure of the node or the
    /// network.
    pub(crate) fn is_usage(&self) -> bool {
        matches!(
            self,
            AlgodError::Url { .. }
                | AlgodError::Unauthorized { .. }
                | AlgodError::RoundNotAvailable { .. }
                | AlgodError::Refused { .. }
        )
    }
}

/// A blocking algod client: one connection pool (ureq, rustls for `https://`), no async runtime.
#[derive(Debug)]
pub(crate) struct Algod {
    agent: ureq::Agent,
    wait_agent: ureq::Agent,
    /// `scheme://host[:port][/prefix]` without a trailing slash.
    base: String,
    /// `base` without credentials, for messages.
    shown: String,
    token: Option<Token>,
    /// Retries after the first try of each request.
    pub(crate) retries: u32,
    /// Deadline of one try.
    timeout: Duration,
    /// Total budget of a request with its retries.
    max_wait: Duration,
}

/// How long an algod request may take: each try, and all tries together (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Patience {
    /// Retries after the first try.
    pub(crate) retries: u32,
    /// Deadline of one try.
    pub(crate) timeout: Duration,
    /// Total budget of a request with its retries.
    pub(crate) max_wait: Duration,
}

impl Default for Patience {
    fn default() -> Self {
        Self {
            retries: DEFAULT_RETRIES,
            timeout: DEFAULT_TIMEOUT,
            max_wait: DEFAULT_MAX_WAIT,
        }
    }
}

/// One successful answer and how long it took, retries and backoff included.
#[derive(Debug)]
pub(crate) struct Answer<T> {
    /// The answer.
    pub(crate) value: T,
    /// Wall time of the request.
    pub(crate) took: Duration,
}

enum Try {
    Final(AlgodError),
    Again(String),
}

impl Algod {
    /// A client for the node at `url` (`http://` or `https://`; a bare `host:port`, as in a data
    /// directory's `algod.net`, means `http://`), sending `token` when given.
    ///
    /// # Errors
    ///
    /// [`AlgodError::Url`] for anything but an http(s) URL with a host.
    pub(crate) fn new(
        url: &str,
        token: Option<Token>,
        patience: Patience,
    ) -> Result<Algod, AlgodError> {
        let url = url.trim();
        let base = match url.split_once("://") {
            Some((scheme, rest)) => format!("{scheme}://{}", rest.trim_end_matches('/')),
            None => format!("http://{}", url.trim_end_matches('/')),
        };
        let shown = without_credentials(&base);
        let bad = |message: &str| AlgodError::Url {
            url: crate::error::excerpt(&shown),
            message: message.into(),
        };
        let (scheme, rest) = base.split_once("://").unwrap_or(("", ""));
        if !matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https") {
            return Err(bad("only http:// and https:// URLs are supported"));
        }
        let host = rest.split(['/', '?', '#']).next().unwrap_or("");
        if host.rsplit('@').next().unwrap_or("").is_empty() {
            return Err(bad("the URL has no host"));
        }
        if rest.contains(['?', '#']) {
            return Err(bad("the URL must not hold a query or a fragment"));
        }
        if let Some(token) = &token {
            token.check().map_err(bad)?;
        }
        // Redirects are not followed: the token header must go to the node named, and only there.
        let agent = |timeout: Duration| -> ureq::Agent {
            ureq::Agent::config_builder()
                .http_status_as_error(false)
                .max_redirects(0)
                .timeout_global(Some(timeout))
                .user_agent(concat!("txgate/", env!("CARGO_PKG_VERSION")))
                .build()
                .into()
        };
        Ok(Algod {
            agent: agent(patience.timeout),
            wait_agent: agent(patience.timeout.saturating_add(WAIT_FOR_BLOCK)),
            base,
            shown,
            token,
            retries: patience.retries,
            timeout: patience.timeout,
            max_wait: patience.max_wait,
        })
    }

    /// The node's URL without credentials.
    pub(crate) fn url(&self) -> &str {
        &self.shown
    }

    /// `GET /v2/status`.
    ///
    /// # Errors
    ///
    /// See [`AlgodError`].
    pub(crate) fn status(&self) -> Result<Answer<NodeStatus>, AlgodError> {
        self.status_at("/v2/status", &self.agent)
    }

    /// `GET /v2/status/wait-for-block-after/{round}`: the status once the node has a round after
    /// `round`, or after algod's one-minute timeout (then `last_round` may still be `round`).
    ///
    /// # Errors
    ///
    /// See [`AlgodError`].
    pub(crate) fn wait_for_block_after(
        &self,
        round: Round,
    ) -> Result<Answer<NodeStatus>, AlgodError> {
        self.status_at(
            &format!("/v2/status/wait-for-block-after/{round}"),
            &self.wait_agent,
        )
    }

    fn status_at(&self, path: &str, agent: &ureq::Agent) -> Result<Answer<NodeStatus>, AlgodError> {
        let answer = self.get(path, agent)?;
        let value = serde_json::from_slice::<NodeStatus>(&answer.value).map_err(|e| {
            AlgodError::BadResponse {
                url: self.shown.clone(),
                path: path.to_owned(),
                message: format!("not a node status with a `last-round`: {e}"),
            }
        })?;
        Ok(Answer {
            value,
            took: answer.took,
        })
    }

    /// `GET /v2/blocks/{round}?format=msgpack`: the block's msgpack `{block, cert}` bytes.
    ///
    /// # Errors
    ///
    /// [`AlgodError::RoundNotAvailable`] for a 404 (with the node's latest round when a status
    /// request can tell it); otherwise see [`AlgodError`].
    pub(crate) fn block(&self, round: Round) -> Result<Answer<Vec<u8>>, AlgodError> {
        let path = format!("/v2/blocks/{round}?format=msgpack");
        match self.get(&path, &self.agent) {
            Err(AlgodError::Refused {
                status: 404,
                message,
                ..
            }) => Err(AlgodError::RoundNotAvailable {
                url: self.shown.clone(),
                round,
                latest: self.status().ok().map(|s| s.value.last_round),
                message,
            }),
            other => other,
        }
    }

    /// One GET with retries (see the module docs); the body of a 200 answer.
    fn get(&self, path: &str, agent: &ureq::Agent) -> Result<Answer<Vec<u8>>, AlgodError> {
        let started = Instant::now();
        let url = format!("{}{path}", self.base);
        let mut backoff = FIRST_BACKOFF;
        let mut tries = 0;
        loop {
            tries += 1;
            match self.try_get(&url, path, agent) {
                Ok(value) => {
                    return Ok(Answer {
                        value,
                        took: started.elapsed(),
                    });
                }
                Err(Try::Final(e)) => return Err(e),
                Err(Try::Again(cause))
                    if tries > self.retries || started.elapsed() + backoff >= self.max_wait =>
                {
                    return Err(AlgodError::Unreachable {
                        url: self.shown.clone(),
                        path: path.to_owned(),
                        tries,
                        secs: started.elapsed().as_secs_f64(),
                        cause,
                    });
                }
                Err(Try::Again(cause)) => {
                    eprintln!(
                        "txgate: warning: algod {}: GET {path}: {cause}; retry {tries} of {} in {:.2} s",
                        self.shown,
                        self.retries,
                        backoff.as_secs_f64()
                    );
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        }
    }

    fn try_get(&self, url: &str, path: &str, agent: &ureq::Agent) -> Result<Vec<u8>, Try> {
        let mut request = agent.get(url);
        if let Some(token) = &self.token {
            request = request.header(TOKEN_HEADER, token.0.as_str());
        }
        let mut response = match request.call() {
            Ok(r) => r,
            Err(e) => return Err(self.classify(e, path)),
        };
        let status = response.status().as_u16();
        let body = response
            .body_mut()
            .with_config()
            .limit(MAX_BODY_BYTES)
            .read_to_vec();
        if status == 200 {
            return body.map_err(|e| self.classify(e, path));
        }
        let message = body.map(|b| error_message(&b)).unwrap_or_default();
        let (url, path) = (self.shown.clone(), path.to_owned());
        Err(match status {
            401 | 403 => Try::Final(AlgodError::Unauthorized {
                url,
                status,
                message,
            }),
            500.. => Try::Again(format!("{status} {message}")),
            _ => Try::Final(AlgodError::Refused {
                url,
                path,
                status,
                message,
            }),
        })
    }
}

impl Algod {
    /// Connection errors and timeouts are worth another try; the rest (a TLS failure, a server
    /// that does not speak HTTP, a body over the cap) is not.
    fn classify(&self, e: ureq::Error, path: &str) -> Try {
        match e {
            ureq::Error::Timeout(_) => Try::Again(format!(
                "no whole answer within {:.1} s (--algod-timeout)",
                self.timeout.as_secs_f64()
            )),
            ureq::Error::Io(_) | ureq::Error::ConnectionFailed | ureq::Error::HostNotFound => {
                Try::Again(e.to_string())
            }
            e => Try::Final(AlgodError::BadResponse {
                url: self.shown.clone(),
                path: path.to_owned(),
                message: e.to_string(),
            }),
        }
    }
}

/// algod's `{"message": ...}`, else the body's first 200 characters, on one line.
fn error_message(body: &[u8]) -> String {
    #[derive(Deserialize)]
    struct ErrorResponse {
        message: String,
    }
    let text = match serde_json::from_slice::<ErrorResponse>(body) {
        Ok(e) => e.message,
        Err(_) => String::from_utf8_lossy(body).chars().take(200).collect(),
    };
    text.replace(['\n', '\r'], " ").trim().to_owned()
}

/// `url` without a `user:password@` part.
fn without_credentials(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            let (authority, tail) = rest.split_at(end);
            let host = authority.rsplit('@').next().unwrap_or(authority);
            format!("{scheme}://{host}{tail}")
        }
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_and_shown_without_credentials() {
        let a = Algod::new(
            "http://user:secret@127.0.0.1:8080/",
            None,
            Patience::default(),
        )
        .unwrap();
        assert_eq!(a.url(), "http://127.0.0.1:8080");
        assert_eq!(a.base, "http://user:secret@127.0.0.1:8080");
        let a = Algod::new("127.0.0.1:4001", None, Patience::default()).unwrap();
        assert_eq!(a.url(), "http://127.0.0.1:4001");
        let a = Algod::new("https://node.example/algod", None, Patience::default()).unwrap();
        assert_eq!(a.url(), "https://node.example/algod");
        for bad in ["ftp://x", "http://", "http://u:p@/v2", "http://h/?a=1"] {
            let e = Algod::new(bad, None, Patience::default()).unwrap_err();
            assert!(matches!(e, AlgodError::Url { .. }), "{bad}: {e}");
            assert!(!e.to_string().contains(":p@"), "{e}");
        }
    }

    #[test]
    fn tokens_never_print() {
        let t: Token = " aaaabbbbcccc\n".parse().unwrap();
        assert_eq!(t.0, "aaaabbbbcccc");
        assert_eq!(format!("{t} {t:?}"), "<redacted> <redacted>");
        let bad: Token = "two words".parse().unwrap();
        let e = Algod::new("http://127.0.0.1:1", Some(bad), Patience::default()).unwrap_err();
        assert!(!e.to_string().contains("two words"), "{e}");
    }

    #[test]
    fn error_bodies_and_reasons() {
        assert_eq!(
            error_message(br#"{"message":"Invalid API Token"}"#),
            "Invalid API Token"
        );
        assert_eq!(error_message(b"plain\ntext"), "plain text");
        assert_eq!(
            why_missing(400, Some(377)),
            "it is after the node's latest round, 377"
        );
        assert!(why_missing(3, Some(377)).contains("non-archival"));
    }
}
