//! Blocking HTTP GET with timeouts, retries, an on-disk cache and download progress.
//!
//! Every network read of swtbench goes through [`HttpClient`]: Hugging Face datasets, requirement
//! files from GitHub raw, anything else fetched by URL. It trusts the CA bundle it is given (the
//! application passes `$SSL_CERT_FILE`; by default the usual Debian/RedHat paths), because
//! TLS-intercepting proxies are common on build machines, and it honours
//! `HTTPS_PROXY`/`HTTP_PROXY`/`ALL_PROXY`/`NO_PROXY` (through the HTTP library).
//!
//! A missing resource (HTTP 404/410) is a normal answer ([`Fetched::NotFound`]), not an error,
//! because callers probe several candidate URLs. Connect errors, timeouts, 5xx, 408 and 429 are
//! retried with exponential backoff (honouring a short `Retry-After`).
//!
//! The cache keys files by the SHA-256 of the URL. A body is written to a temporary file in the
//! cache directory and renamed into place once complete, so readers never see half a file and an
//! interrupted download leaves nothing behind. Entries remember their `ETag`/`Last-Modified` for
//! cheap revalidation; a stale entry is still used when the server cannot be reached.
//!
//! This module must not know about any particular service (no Hugging Face or GitHub specifics).

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use swtbench_core::hash::sha256_hex;

/// Well-known CA bundle locations ([`CaBundle::System`]).
const SYSTEM_CA_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

/// Which root certificates to trust.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CaBundle {
    /// The first existing system bundle (`SYSTEM_CA_BUNDLES`), else the built-in Mozilla roots.
    /// (The application turns `$SSL_CERT_FILE` into [`CaBundle::File`]: this crate reads no
    /// environment.)
    #[default]
    System,
    /// This PEM file.
    File(PathBuf),
    /// The built-in Mozilla roots only.
    BuiltIn,
}

/// How to reach the network. The caller decides (the application reads the proxy variables);
/// this crate reads no environment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ProxySetting {
    /// Connect directly.
    #[default]
    Direct,
    /// Through the proxy at `url` (`http://`, `https://`, `socks4://`, `socks5://`; credentials in
    /// the URL), except for the hosts `no_proxy` names (`NO_PROXY`'s syntax: a host name, a
    /// `.suffix` or `*.suffix`, an address, or `*` for every host).
    Url { url: String, no_proxy: Vec<String> },
}

/// Client settings. `Default` suits interactive use; tests shorten the backoff.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Limit for establishing a connection (DNS, TCP, TLS, proxy).
    pub connect_timeout: Duration,
    /// Limit for each read from the socket; a stalled transfer fails after this long.
    pub read_timeout: Duration,
    /// Extra attempts after the first one, for retryable failures.
    pub retries: u32,
    /// Wait before the first retry; doubles for each further one (capped at 30 s).
    pub backoff: Duration,
    /// Sent as `Authorization: Bearer …` (never forwarded to another host on redirects).
    pub bearer_token: Option<String>,
    /// Where [`HttpClient::download`] keeps files. `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
    pub ca_bundle: CaBundle,
    pub proxy: ProxySetting,
    pub user_agent: String,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            connect_timeout: Duration::from_secs(15),
            read_timeout: Duration::from_secs(60),
            retries: 3,
            backoff: Duration::from_millis(250),
            bearer_token: None,
            cache_dir: None,
            ca_bundle: CaBundle::System,
            proxy: ProxySetting::Direct,
            user_agent: concat!("swtbench/", env!("CARGO_PKG_VERSION")).to_string(),
        }
    }
}

/// When the cache may answer instead of the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheMode {
    /// A cached copy younger than `max_age` is used without asking the server; an older one is
    /// revalidated (`If-None-Match`/`If-Modified-Since`) and still used if the server is
    /// unreachable. Use `Duration::MAX` for immutable URLs (e.g. a file at a commit).
    Fresh { max_age: Duration },
    /// Never touch the network: the cached copy or [`HttpError::NotCached`].
    Offline,
    /// Always download, replacing the cached copy; a network failure is an error.
    Refresh,
}

/// The answer for a URL that may legitimately not exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fetched<T> {
    Found(T),
    /// HTTP 404 or 410 (possibly remembered from an earlier request).
    NotFound,
}

impl<T> Fetched<T> {
    pub fn found(self) -> Option<T> {
        match self {
            Fetched::Found(t) => Some(t),
            Fetched::NotFound => None,
        }
    }
}

/// Where a downloaded file's content came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Transferred from the server now.
    Network,
    /// The cached copy, fresh or confirmed unchanged by the server (304).
    Cache,
    /// The cached copy, used because the server could not be reached.
    StaleCache,
}

/// A file in the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Download {
    pub path: PathBuf,
    pub size: u64,
    pub origin: Origin,
}

/// Progress of one transfer: called with the bytes received so far and the announced total.
pub type ProgressFn<'a> = &'a mut dyn FnMut(u64, Option<u64>);

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("GET {url}: cannot reach the server after {attempts} attempt(s): {detail}")]
    Unreachable {
        url: String,
        attempts: u32,
        detail: String,
    },
    #[error("GET {url}: HTTP {status}{}", if body.is_empty() { String::new() } else { format!(": {body}") })]
    Status {
        url: String,
        status: u16,
        /// The start of the response body (servers explain errors there).
        body: String,
    },
    #[error("GET {url}: transfer failed after {attempts} attempt(s): {detail}")]
    Transfer {
        url: String,
        attempts: u32,
        detail: String,
    },
    #[error("{url} is not in the download cache and the network may not be used (offline)")]
    NotCached { url: String },
    #[error("download cache {}: {source}", path.display())]
    Cache {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("no download cache directory is configured for {url}")]
    NoCacheDir { url: String },
    #[error("CA bundle {}: {detail}", path.display())]
    CaBundle { path: PathBuf, detail: String },
    #[error("proxy {url:?}: {detail}")]
    Proxy { url: String, detail: String },
}

impl HttpError {
    /// True when the failure says nothing about the resource itself: the network or server was
    /// unavailable, or the network may not be used. Callers fall back to offline copies then.
    pub fn is_unavailable(&self) -> bool {
        match self {
            HttpError::Unreachable { .. }
            | HttpError::Transfer { .. }
            | HttpError::NotCached { .. } => true,
            HttpError::Status { status, .. } => *status >= 500 || *status == 429,
            _ => false,
        }
    }

    /// The HTTP status, when the server answered with an error status.
    pub fn status(&self) -> Option<u16> {
        match self {
            HttpError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// What the cache remembers about an entry, stored beside it as JSON.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct CacheMeta {
    url: String,
    /// `false` for a remembered 404.
    found: bool,
    size: u64,
    /// Seconds since the Unix epoch of the last download or successful revalidation.
    checked_at: u64,
    etag: Option<String>,
    last_modified: Option<String>,
}

/// A blocking HTTP client. Cheap to share by reference across threads.
#[derive(Debug, Clone)]
pub struct HttpClient {
    agent: ureq::Agent,
    config: Arc<HttpConfig>,
}

/// The few response headers we use.
#[derive(Debug, Default, Clone)]
struct Headers {
    etag: Option<String>,
    last_modified: Option<String>,
    retry_after: Option<u64>,
}

/// The proxy at `url`, bypassed for the hosts of `no_proxy`.
fn proxy_of(url: &str, no_proxy: &[String]) -> Result<ureq::Proxy, HttpError> {
    let bad = |e: ureq::Error| HttpError::Proxy {
        url: url.to_string(),
        detail: e.to_string(),
    };
    let parsed = ureq::Proxy::new(url).map_err(bad)?;
    if no_proxy.is_empty() {
        return Ok(parsed);
    }
    let mut builder = ureq::Proxy::builder(parsed.protocol())
        .host(parsed.host())
        .port(parsed.port());
    if let Some(user) = parsed.username() {
        builder = builder.username(user);
    }
    if let Some(password) = parsed.password() {
        builder = builder.password(password);
    }
    for host in no_proxy {
        builder = builder.no_proxy(host);
    }
    builder.build().map_err(bad)
}

impl HttpClient {
    /// Builds a client; fails only on an unreadable CA bundle or a malformed proxy URL.
    pub fn new(config: HttpConfig) -> Result<HttpClient, HttpError> {
        let roots = root_certs(&config.ca_bundle)?;
        let proxy = match &config.proxy {
            ProxySetting::Direct => None,
            ProxySetting::Url { url, no_proxy } => Some(proxy_of(url, no_proxy)?),
        };
        let tls = ureq::tls::TlsConfig::builder().root_certs(roots).build();
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            // The hub redirects API URLs to file URLs on the same host, which need the token
            // too; a CDN on another host must never see it.
            .redirect_auth_headers(ureq::config::RedirectAuthHeaders::SameHost)
            .timeout_connect(Some(config.connect_timeout))
            .timeout_per_read(Some(config.read_timeout))
            .timeout_recv_response(Some(config.read_timeout))
            .proxy(proxy)
            .tls_config(tls)
            .user_agent(config.user_agent.as_str())
            .build()
            .new_agent();
        Ok(HttpClient {
            agent,
            config: Arc::new(config),
        })
    }

    pub fn config(&self) -> &HttpConfig {
        &self.config
    }

    /// GET `url` into memory, bypassing the cache (for small answers such as API listings).
    pub fn get_bytes(&self, url: &str) -> Result<Fetched<Vec<u8>>, HttpError> {
        let mut out = Vec::new();
        match self.transfer(url, None, &mut out, &mut |_, _| {})? {
            TransferResult::Done { .. } => Ok(Fetched::Found(out)),
            TransferResult::NotFound => Ok(Fetched::NotFound),
            TransferResult::NotModified => unreachable_not_modified(url),
        }
    }

    /// The cache file a URL is (or would be) stored at, if a cache is configured.
    pub fn cache_path(&self, url: &str) -> Option<PathBuf> {
        let dir = self.config.cache_dir.as_ref()?;
        let key = sha256_hex(url.as_bytes());
        Some(dir.join(&key[..2]).join(&key))
    }

    /// Removes `url`'s cache entry (for content that turned out to be unusable, so that the next
    /// request downloads it again instead of failing on the same bytes). Missing entries are fine.
    pub fn forget(&self, url: &str) {
        if let Some(path) = self.cache_path(url) {
            let _ = fs::remove_file(meta_path_of(&path));
            let _ = fs::remove_file(&path);
        }
    }

    /// GET `url` into the cache and return the cached file.
    ///
    /// `progress` is called as bytes arrive (not for cache hits).
    pub fn download(
        &self,
        url: &str,
        mode: CacheMode,
        progress: Option<ProgressFn<'_>>,
    ) -> Result<Fetched<Download>, HttpError> {
        let mut no_progress = |_: u64, _: Option<u64>| {};
        let progress: &mut dyn FnMut(u64, Option<u64>) = match progress {
            Some(p) => p,
            None => &mut no_progress,
        };
        let path = self.cache_path(url).ok_or_else(|| HttpError::NoCacheDir {
            url: url.to_string(),
        })?;
        let meta_path = meta_path_of(&path);
        let cached = read_meta(&meta_path, &path, url);
        let now = unix_now();

        if let Some(meta) = &cached {
            let fresh = match mode {
                CacheMode::Fresh { max_age } => {
                    Duration::from_secs(now.saturating_sub(meta.checked_at)) < max_age
                }
                CacheMode::Offline => true,
                CacheMode::Refresh => false,
            };
            if fresh {
                return Ok(cached_answer(meta, path, Origin::Cache));
            }
        } else if mode == CacheMode::Offline {
            return Err(HttpError::NotCached {
                url: url.to_string(),
            });
        }

        let dir = path.parent().unwrap_or(Path::new("."));
        fs::create_dir_all(dir).map_err(|source| HttpError::Cache {
            path: dir.to_path_buf(),
            source,
        })?;
        let cache_err = |source| HttpError::Cache {
            path: dir.to_path_buf(),
            source,
        };
        let mut tmp = tempfile::Builder::new()
            .prefix(".partial-")
            .tempfile_in(dir)
            .map_err(cache_err)?;
        let validators = match (&cached, mode) {
            (Some(meta), CacheMode::Fresh { .. }) if meta.found => Some(meta),
            _ => None,
        };
        let result = self.transfer(url, validators, tmp.as_file_mut(), progress);
        match result {
            Ok(TransferResult::Done { size, headers }) => {
                tmp.as_file_mut().flush().map_err(cache_err)?;
                tmp.persist(&path).map_err(|e| cache_err(e.error))?;
                let meta = CacheMeta {
                    url: url.to_string(),
                    found: true,
                    size,
                    checked_at: now,
                    etag: headers.etag,
                    last_modified: headers.last_modified,
                };
                write_meta(&meta_path, &meta)?;
                Ok(Fetched::Found(Download {
                    path,
                    size,
                    origin: Origin::Network,
                }))
            }
            Ok(TransferResult::NotModified) => {
                // Only sent when validators came from a found entry.
                let mut meta = cached.unwrap_or_else(|| CacheMeta {
                    url: url.to_string(),
                    found: true,
                    size: 0,
                    checked_at: now,
                    etag: None,
                    last_modified: None,
                });
                meta.checked_at = now;
                write_meta(&meta_path, &meta)?;
                Ok(cached_answer(&meta, path, Origin::Cache))
            }
            Ok(TransferResult::NotFound) => {
                let meta = CacheMeta {
                    url: url.to_string(),
                    found: false,
                    size: 0,
                    checked_at: now,
                    etag: None,
                    last_modified: None,
                };
                let _ = fs::remove_file(&path);
                write_meta(&meta_path, &meta)?;
                Ok(Fetched::NotFound)
            }
            Err(e) if e.is_unavailable() && mode != CacheMode::Refresh => match cached {
                Some(meta) => Ok(cached_answer(&meta, path, Origin::StaleCache)),
                None => Err(e),
            },
            Err(e) => Err(e),
        }
    }

    /// [`download`](Self::download) and read the file into memory.
    pub fn download_bytes(
        &self,
        url: &str,
        mode: CacheMode,
    ) -> Result<Fetched<(Vec<u8>, Origin)>, HttpError> {
        match self.download(url, mode, None)? {
            Fetched::NotFound => Ok(Fetched::NotFound),
            Fetched::Found(d) => {
                let bytes = fs::read(&d.path).map_err(|source| HttpError::Cache {
                    path: d.path.clone(),
                    source,
                })?;
                Ok(Fetched::Found((bytes, d.origin)))
            }
        }
    }

    /// One request with retries, streaming a 2xx body into `sink`.
    fn transfer(
        &self,
        url: &str,
        validators: Option<&CacheMeta>,
        sink: &mut dyn WriteSeek,
        progress: &mut dyn FnMut(u64, Option<u64>),
    ) -> Result<TransferResult, HttpError> {
        let attempts = self.config.retries + 1;
        let mut last_failure = String::new();
        let mut last_status = None;
        let mut failed_mid_body = false;
        let mut retry_after = None;
        for attempt in 0..attempts {
            if attempt > 0 {
                let wait = self
                    .backoff(attempt)
                    .max(retry_after.take().unwrap_or_default());
                std::thread::sleep(wait);
            }
            let (status, headers, body) = match self.send(url, validators) {
                Ok(a) => a,
                // A name that does not resolve, or a host that does not complete the connection
                // within the connect timeout, rarely recovers a second later; one retry covers a
                // hiccup without making offline fallbacks take minutes.
                Err(e) if is_retryable(&e) && !(is_persistent(&e) && attempt >= 1) => {
                    last_failure = e.to_string();
                    (last_status, failed_mid_body) = (None, false);
                    continue;
                }
                Err(e) if is_retryable(&e) => {
                    return Err(HttpError::Unreachable {
                        url: url.to_string(),
                        attempts: attempt + 1,
                        detail: e.to_string(),
                    })
                }
                Err(e) => {
                    return Err(HttpError::Unreachable {
                        url: url.to_string(),
                        attempts: attempt + 1,
                        detail: e.to_string(),
                    })
                }
            };
            match status {
                200..=299 => {
                    sink.rewind_and_truncate()
                        .map_err(|source| HttpError::Cache {
                            path: PathBuf::from("<download buffer>"),
                            source,
                        })?;
                    match copy_body(body, sink, &mut *progress) {
                        Ok(size) => return Ok(TransferResult::Done { size, headers }),
                        Err(CopyError::Read(e)) => {
                            last_failure = e.to_string();
                            (last_status, failed_mid_body) = (None, true);
                        }
                        Err(CopyError::Write(source)) => {
                            return Err(HttpError::Cache {
                                path: PathBuf::from("<download file>"),
                                source,
                            })
                        }
                    }
                }
                304 if validators.is_some() => return Ok(TransferResult::NotModified),
                404 | 410 => return Ok(TransferResult::NotFound),
                408 | 429 | 500..=599 => {
                    last_failure = body_snippet(body);
                    (last_status, failed_mid_body) = (Some(status), false);
                    // A server asking for a short pause gets it; a long one is not waited for.
                    retry_after = headers.retry_after.map(|s| Duration::from_secs(s.min(60)));
                }
                _ => {
                    return Err(HttpError::Status {
                        url: url.to_string(),
                        status,
                        body: body_snippet(body),
                    })
                }
            }
        }
        Err(match (last_status, failed_mid_body) {
            (Some(status), _) => HttpError::Status {
                url: url.to_string(),
                status,
                body: last_failure,
            },
            (None, true) => HttpError::Transfer {
                url: url.to_string(),
                attempts,
                detail: last_failure,
            },
            (None, false) => HttpError::Unreachable {
                url: url.to_string(),
                attempts,
                detail: last_failure,
            },
        })
    }

    fn send(
        &self,
        url: &str,
        validators: Option<&CacheMeta>,
    ) -> Result<(u16, Headers, ureq::Body), ureq::Error> {
        let mut req = self.agent.get(url);
        if let Some(token) = &self.config.bearer_token {
            req = req.header("Authorization", format!("Bearer {token}"));
        }
        if let Some(meta) = validators {
            if let Some(etag) = &meta.etag {
                req = req.header("If-None-Match", etag.as_str());
            }
            if let Some(lm) = &meta.last_modified {
                req = req.header("If-Modified-Since", lm.as_str());
            }
        }
        let resp = req.call()?;
        let status = resp.status().as_u16();
        let h = resp.headers();
        let get = |name: &str| {
            h.get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let headers = Headers {
            etag: get("etag"),
            last_modified: get("last-modified"),
            retry_after: get("retry-after").and_then(|s| s.trim().parse().ok()),
        };
        Ok((status, headers, resp.into_body()))
    }

    fn backoff(&self, attempt: u32) -> Duration {
        let factor = 1u32 << attempt.saturating_sub(1).min(16);
        self.config
            .backoff
            .saturating_mul(factor)
            .min(Duration::from_secs(30))
    }
}

enum TransferResult {
    Done { size: u64, headers: Headers },
    NotModified,
    NotFound,
}

fn unreachable_not_modified(url: &str) -> Result<Fetched<Vec<u8>>, HttpError> {
    // No validators were sent, so a 304 is a server bug; report it as such.
    Err(HttpError::Status {
        url: url.to_string(),
        status: 304,
        body: "unexpected 304 Not Modified".to_string(),
    })
}

/// A body sink that can be restarted when a retry begins.
trait WriteSeek: Write {
    fn rewind_and_truncate(&mut self) -> io::Result<()>;
}

impl WriteSeek for Vec<u8> {
    fn rewind_and_truncate(&mut self) -> io::Result<()> {
        self.clear();
        Ok(())
    }
}

impl WriteSeek for fs::File {
    fn rewind_and_truncate(&mut self) -> io::Result<()> {
        use std::io::Seek;
        self.set_len(0)?;
        self.rewind()
    }
}

enum CopyError {
    Read(io::Error),
    Write(io::Error),
}

fn copy_body(
    body: ureq::Body,
    sink: &mut dyn WriteSeek,
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<u64, CopyError> {
    let total = body.content_length();
    let mut reader = body.into_reader();
    let mut buf = vec![0u8; 64 * 1024];
    let mut done = 0u64;
    progress(0, total);
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(CopyError::Read(e)),
        };
        sink.write_all(&buf[..n]).map_err(CopyError::Write)?;
        done += n as u64;
        progress(done, total);
    }
    Ok(done)
}

fn body_snippet(body: ureq::Body) -> String {
    let mut buf = Vec::new();
    let _ = body.into_reader().take(300).read_to_end(&mut buf);
    let s = String::from_utf8_lossy(&buf);
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn is_retryable(e: &ureq::Error) -> bool {
    matches!(
        e,
        ureq::Error::Io(_)
            | ureq::Error::Timeout(_)
            | ureq::Error::HostNotFound
            | ureq::Error::ConnectionFailed
            | ureq::Error::ConnectProxyFailed(_)
            | ureq::Error::Protocol(_)
            | ureq::Error::BodyStalled
    )
}

fn is_persistent(e: &ureq::Error) -> bool {
    match e {
        ureq::Error::HostNotFound
        | ureq::Error::Timeout(ureq::Timeout::Connect | ureq::Timeout::Resolve) => true,
        // The resolver's failure arrives as an I/O error; its text is the only marker.
        ureq::Error::Io(io) => io.to_string().contains("lookup address"),
        _ => false,
    }
}

fn root_certs(bundle: &CaBundle) -> Result<ureq::tls::RootCerts, HttpError> {
    let file = match bundle {
        CaBundle::BuiltIn => return Ok(ureq::tls::RootCerts::WebPki),
        CaBundle::File(p) => Some(p.clone()),
        CaBundle::System => SYSTEM_CA_BUNDLES
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_file()),
    };
    let Some(path) = file else {
        return Ok(ureq::tls::RootCerts::WebPki);
    };
    let pem = fs::read(&path).map_err(|e| HttpError::CaBundle {
        path: path.clone(),
        detail: e.to_string(),
    })?;
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(&pem) {
        match item {
            Ok(ureq::tls::PemItem::Certificate(c)) => certs.push(c),
            Ok(_) => {}
            Err(e) => {
                return Err(HttpError::CaBundle {
                    path,
                    detail: e.to_string(),
                })
            }
        }
    }
    if certs.is_empty() {
        return Err(HttpError::CaBundle {
            path,
            detail: "contains no PEM certificates".to_string(),
        });
    }
    Ok(ureq::tls::RootCerts::from(certs))
}

fn meta_path_of(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".meta.json");
    PathBuf::from(s)
}

/// The entry's metadata if the entry is complete and belongs to `url`.
fn read_meta(meta_path: &Path, path: &Path, url: &str) -> Option<CacheMeta> {
    let text = fs::read(meta_path).ok()?;
    let meta: CacheMeta = serde_json::from_slice(&text).ok()?;
    if meta.url != url {
        return None;
    }
    if meta.found {
        let len = fs::metadata(path).ok()?.len();
        if len != meta.size {
            return None;
        }
    }
    Some(meta)
}

fn write_meta(meta_path: &Path, meta: &CacheMeta) -> Result<(), HttpError> {
    let dir = meta_path.parent().unwrap_or(Path::new("."));
    let err = |source| HttpError::Cache {
        path: meta_path.to_path_buf(),
        source,
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".meta-")
        .tempfile_in(dir)
        .map_err(err)?;
    let text = serde_json::to_vec_pretty(meta).map_err(|e| err(io::Error::other(e)))?;
    tmp.write_all(&text).map_err(err)?;
    tmp.persist(meta_path).map_err(|e| err(e.error))?;
    Ok(())
}

fn cached_answer(meta: &CacheMeta, path: PathBuf, origin: Origin) -> Fetched<Download> {
    if meta.found {
        Fetched::Found(Download {
            path,
            size: meta.size,
            origin,
        })
    } else {
        Fetched::NotFound
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
