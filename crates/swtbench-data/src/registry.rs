//! A container registry as a cache of swtbench's own images: the registry reference
//! (`127.0.0.1:5000/team`), credentials as Docker keeps them (`~/.docker/config.json`: `auths`,
//! `credHelpers`, `credsStore`), the registry's HTTP API v2 manifest look-up (HEAD, no pull) with
//! basic and token auth (a 401 with `WWW-Authenticate: Bearer realm=…,service=…,scope=…` → GET
//! the token → retry), and 429/5xx retried with backoff that honours `Retry-After`.
//!
//! The parsing (`parse_*`, [`backoff`]) is pure and tested on its own; [`RegistryClient`] is the
//! blocking HTTP edge. Secrets never reach an error message or a `Debug` output: [`Credentials`]
//! prints its user name only.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

/// Manifest media types a look-up accepts (OCI and Docker, single images and lists).
pub const MANIFEST_TYPES: [&str; 4] = [
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
];

/// What went wrong talking to a registry. Never holds a password or a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    #[error("invalid registry reference {reference:?}: {why} (expected HOST[:PORT][/NAMESPACE], e.g. 127.0.0.1:5000/team)")]
    Reference { reference: String, why: String },
    #[error("reading {}: {message}", path.display())]
    Config { path: PathBuf, message: String },
    #[error("credential helper docker-credential-{helper} for {host}: {message}")]
    Helper {
        helper: String,
        host: String,
        message: String,
    },
    #[error("registry {host} asks for credentials for {what} and none are configured (run `docker login {host}`)")]
    NoCredentials { host: String, what: String },
    #[error("registry {host} rejected the credentials of user {user:?} for {what} (HTTP 401): check the password (`docker login {host}`)")]
    Rejected {
        host: String,
        user: String,
        what: String,
    },
    #[error("registry {host} refused {what} (HTTP 403): the credentials lack access")]
    Forbidden { host: String, what: String },
    #[error("registry {host}: {what} answered HTTP {status} after {attempts} attempt(s)")]
    Status {
        host: String,
        what: String,
        status: u16,
        attempts: u32,
    },
    #[error("registry {host} unreachable for {what}: {message}")]
    Unreachable {
        host: String,
        what: String,
        message: String,
    },
    #[error("registry {host}: the token service {realm} failed: {message}")]
    Token {
        host: String,
        realm: String,
        message: String,
    },
}

/// A registry and a namespace in it: where swtbench's images go, `<registry>/<namespace>/<key>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryRef {
    /// `host[:port]`.
    pub host: String,
    /// Repository path prefix (may be empty), without slashes at either end.
    pub namespace: String,
}

/// Parses `HOST[:PORT][/NAMESPACE]` (a scheme is not allowed: the engine decides it).
pub fn parse_registry_ref(s: &str) -> Result<RegistryRef, RegistryError> {
    let err = |why: &str| RegistryError::Reference {
        reference: s.to_string(),
        why: why.to_string(),
    };
    if s.contains("://") {
        return Err(err("leave out the scheme"));
    }
    let s2 = s.trim_end_matches('/');
    let (host, ns) = s2.split_once('/').unwrap_or((s2, ""));
    if host.is_empty() {
        return Err(err("no registry host"));
    }
    // Docker's rule: the first part names a registry when it has a dot, a port, or is localhost.
    if !(host.contains('.') || host.contains(':') || host == "localhost") {
        return Err(err(
            "the first part must be a registry host (with a dot or a port)",
        ));
    }
    if ns
        .chars()
        .any(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || "._-/".contains(c)))
    {
        return Err(err(
            "the namespace may hold only a-z, 0-9, '.', '_', '-' and '/'",
        ));
    }
    Ok(RegistryRef {
        host: host.to_string(),
        namespace: ns.to_string(),
    })
}

impl RegistryRef {
    /// The full reference of an image key in the registry (`host/ns/exec.env.…:latest`).
    pub fn image_ref(&self, key: &str) -> String {
        let key = key.strip_prefix("localhost/").unwrap_or(key);
        if self.namespace.is_empty() {
            format!("{}/{key}", self.host)
        } else {
            format!("{}/{}/{key}", self.host, self.namespace)
        }
    }

    /// Repository path and tag of a key inside the registry.
    pub fn repo_and_tag(&self, key: &str) -> (String, String) {
        let full = self.image_ref(key);
        let path = full[self.host.len() + 1..].to_string();
        match path.rsplit_once(':') {
            Some((repo, tag)) if !tag.contains('/') => (repo.to_string(), tag.to_string()),
            _ => (path, "latest".to_string()),
        }
    }

    /// Plain HTTP for loopback registries (as Docker allows them), HTTPS otherwise.
    pub fn base_url(&self) -> String {
        let name = self
            .host
            .rsplit_once(':')
            .map_or(self.host.as_str(), |h| h.0);
        let loopback = name == "localhost" || name.starts_with("127.") || name == "[::1]";
        format!(
            "{}://{}",
            if loopback { "http" } else { "https" },
            self.host
        )
    }
}

/// A user name and a password or token. `Debug` never shows the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub username: String,
    pub secret: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// What `~/.docker/config.json` says about credentials.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DockerConfig {
    /// Host → inline credentials (`auths.<host>.auth`, base64 `user:pass`).
    pub auths: BTreeMap<String, Credentials>,
    /// Host → helper name (`credHelpers`).
    pub cred_helpers: BTreeMap<String, String>,
    /// The default helper (`credsStore`).
    pub creds_store: Option<String>,
}

/// Where a host's credentials come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialSource {
    Inline(Credentials),
    Helper(String),
    None,
}

/// What is wrong with a Docker `config.json`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DockerConfigError {
    /// Not JSON (the reader's account, with line and column).
    #[error("{0}")]
    Json(String),
    /// An `auths.<host>.auth` entry that is not base64 of `user:password` in UTF-8.
    #[error("auths.{host}.auth is not {expected}")]
    Auth {
        host: String,
        expected: &'static str,
    },
}

/// Parses the text of a Docker `config.json`.
pub fn parse_docker_config(text: &str) -> Result<DockerConfig, DockerConfigError> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| DockerConfigError::Json(e.to_string()))?;
    let auth_err = |host: &str, expected: &'static str| DockerConfigError::Auth {
        host: host.to_string(),
        expected,
    };
    let mut out = DockerConfig::default();
    if let Some(auths) = v.get("auths").and_then(|a| a.as_object()) {
        for (host, entry) in auths {
            let Some(auth) = entry.get("auth").and_then(|a| a.as_str()) else {
                continue;
            };
            if auth.is_empty() {
                continue;
            }
            let raw = base64_decode(auth).ok_or_else(|| auth_err(host, "base64"))?;
            let text = String::from_utf8(raw).map_err(|_| auth_err(host, "UTF-8 once decoded"))?;
            let (user, pass) = text
                .split_once(':')
                .ok_or_else(|| auth_err(host, "user:password"))?;
            out.auths.insert(
                normalise_host(host),
                Credentials {
                    username: user.to_string(),
                    secret: pass.to_string(),
                },
            );
        }
    }
    if let Some(h) = v.get("credHelpers").and_then(|a| a.as_object()) {
        for (host, helper) in h {
            if let Some(name) = helper.as_str() {
                out.cred_helpers
                    .insert(normalise_host(host), name.to_string());
            }
        }
    }
    out.creds_store = v
        .get("credsStore")
        .and_then(|s| s.as_str())
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    Ok(out)
}

/// `https://host/v1/` → `host` (config.json keys may be URLs).
fn normalise_host(key: &str) -> String {
    let k = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    k.split('/').next().unwrap_or(k).to_string()
}

impl DockerConfig {
    /// Where `host`'s credentials come from: a helper for the host, inline credentials, the
    /// default store, or nothing.
    pub fn source_for(&self, host: &str) -> CredentialSource {
        if let Some(h) = self.cred_helpers.get(host) {
            return CredentialSource::Helper(h.clone());
        }
        if let Some(c) = self.auths.get(host) {
            return CredentialSource::Inline(c.clone());
        }
        match &self.creds_store {
            Some(s) => CredentialSource::Helper(s.clone()),
            None => CredentialSource::None,
        }
    }
}

/// Where Docker's config is: `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`.
pub fn docker_config_path(docker_config: Option<&Path>, home: Option<&Path>) -> Option<PathBuf> {
    match (docker_config, home) {
        (Some(d), _) => Some(d.join("config.json")),
        (None, Some(h)) => Some(h.join(".docker/config.json")),
        _ => None,
    }
}

/// The credentials for `host`: from the config file at `path` (absent file: none), asking the
/// credential helper it names when it names one.
pub fn credentials_for(
    path: Option<&Path>,
    host: &str,
) -> Result<Option<Credentials>, RegistryError> {
    let Some(path) = path else { return Ok(None) };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(RegistryError::Config {
                path: path.to_path_buf(),
                message: e.to_string(),
            })
        }
    };
    let config = parse_docker_config(&text).map_err(|e| RegistryError::Config {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    match config.source_for(host) {
        CredentialSource::Inline(c) => Ok(Some(c)),
        CredentialSource::None => Ok(None),
        CredentialSource::Helper(helper) => helper_get(&helper, host),
    }
}

/// Runs `docker-credential-<helper> get` with the host on stdin.
pub fn helper_get(helper: &str, host: &str) -> Result<Option<Credentials>, RegistryError> {
    let err = |message: String| RegistryError::Helper {
        helper: helper.to_string(),
        host: host.to_string(),
        message,
    };
    let mut child = Command::new(format!("docker-credential-{helper}"))
        .arg("get")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| err(format!("could not start it: {e}")))?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(host.as_bytes());
    }
    let out = child.wait_with_output().map_err(|e| err(e.to_string()))?;
    parse_helper_output(out.status.success(), &out.stdout).map_err(|e| err(e.to_string()))
}

/// Why a credential helper's answer is unusable. Neither says what it printed: the output may
/// hold a secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HelperAnswerError {
    #[error("it exited with an error")]
    Failed,
    #[error("its answer is not JSON")]
    NotJson,
}

/// A credential helper's answer: `{"Username":…,"Secret":…}`, or "not found" (no credentials).
pub fn parse_helper_output(
    success: bool,
    stdout: &[u8],
) -> Result<Option<Credentials>, HelperAnswerError> {
    let text = String::from_utf8_lossy(stdout);
    if !success {
        if text.to_lowercase().contains("credentials not found") {
            return Ok(None);
        }
        return Err(HelperAnswerError::Failed);
    }
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|_| HelperAnswerError::NotJson)?;
    let user = v.get("Username").and_then(|s| s.as_str()).unwrap_or("");
    let secret = v.get("Secret").and_then(|s| s.as_str()).unwrap_or("");
    if secret.is_empty() {
        return Ok(None);
    }
    Ok(Some(Credentials {
        username: user.to_string(),
        secret: secret.to_string(),
    }))
}

/// An authentication challenge of a 401 answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Challenge {
    Basic {
        realm: Option<String>,
    },
    Bearer {
        realm: String,
        service: Option<String>,
        scope: Option<String>,
    },
}

/// Parses a `WWW-Authenticate` header (`Bearer realm="…",service="…",scope="…"` or `Basic …`).
pub fn parse_www_authenticate(header: &str) -> Option<Challenge> {
    let h = header.trim();
    let (scheme, rest) = h.split_once(char::is_whitespace).unwrap_or((h, ""));
    let params = parse_params(rest);
    match scheme.to_ascii_lowercase().as_str() {
        "basic" => Some(Challenge::Basic {
            realm: params.get("realm").cloned(),
        }),
        "bearer" => Some(Challenge::Bearer {
            realm: params.get("realm")?.clone(),
            service: params.get("service").cloned(),
            scope: params.get("scope").cloned(),
        }),
        _ => None,
    }
}

/// `k="v", k2=v2` with commas allowed inside quotes (scopes hold them).
fn parse_params(s: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
        if key.is_empty() {
            break;
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '"' => break,
                    c => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.peek().copied() {
                if c == ',' {
                    break;
                }
                value.push(c);
                chars.next();
            }
        }
        out.insert(key.trim().to_ascii_lowercase(), value.trim().to_string());
    }
    out
}

/// `Retry-After` as a pause: delta-seconds (an HTTP date is not honoured; the backoff applies).
pub fn parse_retry_after(header: Option<&str>) -> Option<Duration> {
    header?.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// The pause before attempt `attempt + 1` (attempt counts from 1): the server's `Retry-After`
/// when it gave one (capped at `cap`), else `base · 2^(attempt-1)` capped at `cap`.
pub fn backoff(
    attempt: u32,
    retry_after: Option<Duration>,
    base: Duration,
    cap: Duration,
) -> Duration {
    match retry_after {
        Some(d) => d.min(cap),
        None => base
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16))
            .min(cap),
    }
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding.
pub fn base64_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Standard (or URL-safe) base64, padding optional; `None` when it is not base64.
pub fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.trim().bytes().filter(|c| *c != b'=') {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

/// Whether an image is in the registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lookup {
    /// `Docker-Content-Digest` of the manifest when present.
    pub digest: Option<String>,
    pub present: bool,
    /// Answers 429/5xx that were retried.
    pub retries: u32,
}

/// A retried answer, for progress and events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryNote {
    pub what: String,
    pub status: u16,
    pub attempt: u32,
    pub pause: Duration,
}

/// Blocking registry HTTP API v2 client for manifest look-ups.
#[derive(Debug)]
pub struct RegistryClient {
    agent: ureq::Agent,
    registry: RegistryRef,
    credentials: Option<Credentials>,
    /// Bearer tokens by scope.
    tokens: Mutex<BTreeMap<String, String>>,
    /// Attempts per request (429/5xx/connection failures retried).
    pub attempts: u32,
    pub base_pause: Duration,
    pub max_pause: Duration,
}

impl RegistryClient {
    pub fn new(registry: RegistryRef, credentials: Option<Credentials>) -> RegistryClient {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(10)))
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .new_agent();
        RegistryClient {
            agent,
            registry,
            credentials,
            tokens: Mutex::new(BTreeMap::new()),
            attempts: 5,
            base_pause: Duration::from_millis(500),
            max_pause: Duration::from_secs(30),
        }
    }

    pub fn registry(&self) -> &RegistryRef {
        &self.registry
    }

    /// Whether `key`'s manifest is in the registry (HEAD, no pull). `on_retry` hears each retry.
    pub fn manifest_exists(
        &self,
        key: &str,
        on_retry: &dyn Fn(&RetryNote),
    ) -> Result<Lookup, RegistryError> {
        let (repo, tag) = self.registry.repo_and_tag(key);
        let url = format!("{}/v2/{repo}/manifests/{tag}", self.registry.base_url());
        let what = format!("the manifest of {repo}:{tag}");
        let scope = format!("repository:{repo}:pull");
        let host = self.registry.host.clone();
        let mut retries = 0;
        let mut authed_once = false;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let auth = self.authorization(&scope);
            let mut req = self
                .agent
                .head(&url)
                .header("Accept", MANIFEST_TYPES.join(", "));
            if let Some(a) = &auth {
                req = req.header("Authorization", a.as_str());
            }
            let resp = match req.call() {
                Ok(r) => r,
                Err(e) => {
                    if attempt < self.attempts {
                        let pause = backoff(attempt, None, self.base_pause, self.max_pause);
                        on_retry(&RetryNote {
                            what: what.clone(),
                            status: 0,
                            attempt,
                            pause,
                        });
                        retries += 1;
                        std::thread::sleep(pause);
                        continue;
                    }
                    return Err(RegistryError::Unreachable {
                        host,
                        what,
                        message: e.to_string(),
                    });
                }
            };
            let status = resp.status().as_u16();
            let header = |n: &str| {
                resp.headers()
                    .get(n)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string)
            };
            match status {
                200..=299 => {
                    return Ok(Lookup {
                        digest: header("docker-content-digest"),
                        present: true,
                        retries,
                    })
                }
                404 => {
                    return Ok(Lookup {
                        digest: None,
                        present: false,
                        retries,
                    })
                }
                401 if !authed_once => {
                    authed_once = true;
                    attempt -= 1;
                    let challenge = header("www-authenticate")
                        .as_deref()
                        .and_then(parse_www_authenticate);
                    let Some(creds_or_token) = self.answer_challenge(challenge, &scope, &what)?
                    else {
                        continue;
                    };
                    self.tokens
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(scope.clone(), creds_or_token);
                }
                401 => {
                    return Err(match &self.credentials {
                        Some(c) => RegistryError::Rejected {
                            host,
                            user: c.username.clone(),
                            what,
                        },
                        None => RegistryError::NoCredentials { host, what },
                    })
                }
                403 => return Err(RegistryError::Forbidden { host, what }),
                429 | 500..=599 if attempt < self.attempts => {
                    let pause = backoff(
                        attempt,
                        parse_retry_after(header("retry-after").as_deref()),
                        self.base_pause,
                        self.max_pause,
                    );
                    on_retry(&RetryNote {
                        what: what.clone(),
                        status,
                        attempt,
                        pause,
                    });
                    retries += 1;
                    std::thread::sleep(pause);
                }
                _ => {
                    return Err(RegistryError::Status {
                        host,
                        what,
                        status,
                        attempts: attempt,
                    })
                }
            }
        }
    }

    /// The `Authorization` header kept for `scope`.
    fn authorization(&self, scope: &str) -> Option<String> {
        self.tokens
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(scope)
            .cloned()
    }

    fn basic(&self) -> Option<String> {
        self.credentials.as_ref().map(|c| {
            format!(
                "Basic {}",
                base64_encode(format!("{}:{}", c.username, c.secret).as_bytes())
            )
        })
    }

    /// The `Authorization` header answering a challenge.
    fn answer_challenge(
        &self,
        challenge: Option<Challenge>,
        scope: &str,
        what: &str,
    ) -> Result<Option<String>, RegistryError> {
        let host = self.registry.host.clone();
        match challenge {
            Some(Challenge::Bearer {
                realm,
                service,
                scope: asked,
            }) => {
                let mut url = format!("{realm}?");
                if let Some(s) = &service {
                    url.push_str(&format!("service={}&", encode(s)));
                }
                url.push_str(&format!(
                    "scope={}",
                    encode(asked.as_deref().unwrap_or(scope))
                ));
                let mut req = self.agent.get(&url);
                if let Some(b) = self.basic() {
                    req = req.header("Authorization", b.as_str());
                }
                let terr = |message: String| RegistryError::Token {
                    host: host.clone(),
                    realm: realm.clone(),
                    message,
                };
                let mut resp = req.call().map_err(|e| terr(e.to_string()))?;
                match resp.status().as_u16() {
                    200 => {}
                    401 => {
                        return Err(match &self.credentials {
                            Some(c) => RegistryError::Rejected {
                                host,
                                user: c.username.clone(),
                                what: what.to_string(),
                            },
                            None => RegistryError::NoCredentials {
                                host,
                                what: what.to_string(),
                            },
                        })
                    }
                    s => return Err(terr(format!("HTTP {s}"))),
                }
                let body = resp
                    .body_mut()
                    .read_to_string()
                    .map_err(|e| terr(e.to_string()))?;
                let token = parse_token_response(&body)
                    .ok_or_else(|| terr("its answer holds no token".into()))?;
                Ok(Some(format!("Bearer {token}")))
            }
            Some(Challenge::Basic { .. }) | None => match self.basic() {
                Some(b) => Ok(Some(b)),
                None => Err(RegistryError::NoCredentials {
                    host,
                    what: what.to_string(),
                }),
            },
        }
    }
}

/// The token of a token service's JSON answer (`token`, or `access_token`).
pub fn parse_token_response(body: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    v.get("token")
        .or_else(|| v.get("access_token"))
        .and_then(|t| t.as_str())
        .filter(|t| !t.is_empty())
        .map(str::to_string)
}

/// Percent-encodes a query value.
fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_name_a_host_and_a_namespace() {
        let r = parse_registry_ref("127.0.0.1:5000/swt").expect("ref");
        assert_eq!(r.host, "127.0.0.1:5000");
        assert_eq!(r.namespace, "swt");
        assert_eq!(
            r.image_ref("exec.env.x86_64.abc:latest"),
            "127.0.0.1:5000/swt/exec.env.x86_64.abc:latest"
        );
        assert_eq!(
            r.repo_and_tag("exec.env.x86_64.abc:latest"),
            ("swt/exec.env.x86_64.abc".to_string(), "latest".to_string())
        );
        assert_eq!(r.base_url(), "http://127.0.0.1:5000");
        let g = parse_registry_ref("ghcr.io/team/swt").expect("ref");
        assert_eq!(g.base_url(), "https://ghcr.io");
        assert_eq!(g.image_ref("a:b"), "ghcr.io/team/swt/a:b");
        for bad in ["http://x.io/a", "team/swt", "", "x.io/Upper"] {
            assert!(parse_registry_ref(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bearer_and_basic_challenges_parse() {
        let h = r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/ubuntu:pull,push""#;
        assert_eq!(
            parse_www_authenticate(h),
            Some(Challenge::Bearer {
                realm: "https://auth.docker.io/token".into(),
                service: Some("registry.docker.io".into()),
                scope: Some("repository:library/ubuntu:pull,push".into()),
            })
        );
        assert_eq!(
            parse_www_authenticate(r#"Basic realm="Registry Realm""#),
            Some(Challenge::Basic {
                realm: Some("Registry Realm".into())
            })
        );
        assert_eq!(parse_www_authenticate("Bearer service=x"), None, "no realm");
        assert_eq!(parse_www_authenticate("Negotiate"), None);
        assert_eq!(parse_token_response(r#"{"token":"t1"}"#), Some("t1".into()));
        assert_eq!(
            parse_token_response(r#"{"access_token":"t2"}"#),
            Some("t2".into())
        );
        assert_eq!(parse_token_response(r#"{}"#), None);
    }

    #[test]
    fn docker_config_auths_helpers_and_store() {
        let auth = base64_encode(b"alice:s3cr:et");
        let text = format!(
            r#"{{"auths":{{"https://index.docker.io/v1/":{{"auth":"{auth}"}},"127.0.0.1:5000":{{"auth":"{auth}"}},"empty.io":{{}}}},
               "credHelpers":{{"ghcr.io":"gh"}},"credsStore":"desktop"}}"#
        );
        let c = parse_docker_config(&text).expect("config");
        let alice = Credentials {
            username: "alice".into(),
            secret: "s3cr:et".into(),
        };
        assert_eq!(
            c.source_for("127.0.0.1:5000"),
            CredentialSource::Inline(alice.clone())
        );
        assert_eq!(
            c.source_for("index.docker.io"),
            CredentialSource::Inline(alice.clone())
        );
        assert_eq!(
            c.source_for("ghcr.io"),
            CredentialSource::Helper("gh".into())
        );
        assert_eq!(
            c.source_for("other.io"),
            CredentialSource::Helper("desktop".into())
        );
        let debug = format!("{alice:?}");
        assert!(!debug.contains("s3cr"), "{debug}");
        assert!(parse_docker_config(r#"{"auths":{"x":{"auth":"!!"}}}"#).is_err());
        assert_eq!(
            parse_docker_config("{}").expect("empty").source_for("x.io"),
            CredentialSource::None
        );
    }

    #[test]
    fn helper_answers_parse_without_leaking() {
        let ok = parse_helper_output(true, br#"{"ServerURL":"x","Username":"u","Secret":"p"}"#);
        assert_eq!(
            ok,
            Ok(Some(Credentials {
                username: "u".into(),
                secret: "p".into()
            }))
        );
        assert_eq!(
            parse_helper_output(false, b"credentials not found in native keychain"),
            Ok(None)
        );
        let err = parse_helper_output(false, b"secret-ish output")
            .expect_err("fails")
            .to_string();
        assert!(!err.contains("secret-ish"), "{err}");
    }

    #[test]
    fn retry_after_wins_over_the_backoff_and_both_are_capped() {
        let (base, cap) = (Duration::from_millis(500), Duration::from_secs(30));
        assert_eq!(parse_retry_after(Some(" 7 ")), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after(Some("Wed, 21 Oct 2015 07:28:00 GMT")),
            None
        );
        assert_eq!(backoff(1, None, base, cap), Duration::from_millis(500));
        assert_eq!(backoff(3, None, base, cap), Duration::from_secs(2));
        assert_eq!(backoff(30, None, base, cap), cap);
        assert_eq!(
            backoff(1, Some(Duration::from_secs(3)), base, cap),
            Duration::from_secs(3)
        );
        assert_eq!(backoff(1, Some(Duration::from_secs(3600)), base, cap), cap);
    }

    #[test]
    fn base64_round_trips() {
        for s in ["", "a", "ab", "abc", "user:pass", "ü:🙂"] {
            assert_eq!(
                base64_decode(&base64_encode(s.as_bytes())).as_deref(),
                Some(s.as_bytes())
            );
        }
        assert_eq!(base64_encode(b"user:pass"), "dXNlcjpwYXNz");
    }
}
