//! The HTTP client against a local server: caching, revalidation, retries, 404s, tokens, progress.

use std::time::Duration;

use crate::support::{Response, Server};
use swtbench_data::http::{
    CacheMode, Fetched, HttpClient, HttpConfig, HttpError, Origin, ProxySetting,
};

fn client(cache: &std::path::Path, token: Option<&str>) -> HttpClient {
    HttpClient::new(HttpConfig {
        retries: 3,
        backoff: Duration::from_millis(5),
        connect_timeout: Duration::from_secs(5),
        read_timeout: Duration::from_secs(5),
        bearer_token: token.map(str::to_string),
        cache_dir: Some(cache.to_path_buf()),
        proxy: ProxySetting::Direct,
        ..HttpConfig::default()
    })
    .expect("client")
}

const FOREVER: CacheMode = CacheMode::Fresh {
    max_age: Duration::MAX,
};

#[test]
fn download_is_cached_and_reused_without_requests() {
    let body: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let served = body.clone();
    let server = Server::start(move |_, _| Response::ok(served.clone()));
    let dir = tempfile::tempdir().unwrap();
    let c = client(dir.path(), None);
    let url = server.url("/big.bin");

    let mut calls = Vec::new();
    let mut progress = |done: u64, total: Option<u64>| calls.push((done, total));
    let d = c
        .download(&url, FOREVER, Some(&mut progress))
        .unwrap()
        .found()
        .unwrap();
    assert_eq!(d.origin, Origin::Network);
    assert_eq!(std::fs::read(&d.path).unwrap(), body);
    assert_eq!(calls.first(), Some(&(0, Some(200_000))));
    assert_eq!(calls.last(), Some(&(200_000, Some(200_000))));
    assert!(calls.windows(2).all(|w| w[0].0 <= w[1].0));
    // The cache file name is the SHA-256 of the URL; no partial files are left behind.
    assert_eq!(d.path, c.cache_path(&url).unwrap());
    let leftovers: Vec<_> = std::fs::read_dir(d.path.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    let again = c.download(&url, FOREVER, None).unwrap().found().unwrap();
    assert_eq!(again.origin, Origin::Cache);
    assert_eq!(server.count("/big.bin"), 1);

    // Offline: the cache answers, an unknown URL is an error that says so.
    let off = c
        .download(&url, CacheMode::Offline, None)
        .unwrap()
        .found()
        .unwrap();
    assert_eq!(off.origin, Origin::Cache);
    let e = c
        .download(&server.url("/other"), CacheMode::Offline, None)
        .unwrap_err();
    assert!(matches!(e, HttpError::NotCached { .. }), "{e}");
    assert!(e.is_unavailable());
    assert_eq!(server.count("/other"), 0);
}

#[test]
fn stale_entries_are_revalidated_with_etag() {
    let server = Server::start(|req, _| {
        if req.headers.get("if-none-match").map(String::as_str) == Some("\"v1\"") {
            Response::status(304)
                .header("ETag", "\"v1\"")
                .with_empty_body()
        } else {
            Response::ok("version one").header("ETag", "\"v1\"")
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let c = client(dir.path(), None);
    let url = server.url("/f");
    let stale = CacheMode::Fresh {
        max_age: Duration::ZERO,
    };
    let first = c.download_bytes(&url, stale).unwrap().found().unwrap();
    assert_eq!(first, (b"version one".to_vec(), Origin::Network));
    let second = c.download_bytes(&url, stale).unwrap().found().unwrap();
    assert_eq!(second, (b"version one".to_vec(), Origin::Cache));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].headers.get("if-none-match"), None);
    assert_eq!(reqs[1].headers.get("if-none-match").unwrap(), "\"v1\"");
}

#[test]
fn retries_after_503_and_429_then_succeeds() {
    let server = Server::start(|req, seen| match (req.path.as_str(), seen) {
        ("/flaky", 0) => Response::status(503),
        ("/flaky", 1) => Response::status(429).header("Retry-After", "0"),
        ("/flaky", _) => Response::ok("finally"),
        _ => Response::status(503),
    });
    let dir = tempfile::tempdir().unwrap();
    let c = client(dir.path(), None);
    let got = c.get_bytes(&server.url("/flaky")).unwrap();
    assert_eq!(got, Fetched::Found(b"finally".to_vec()));
    assert_eq!(server.count("/flaky"), 3);

    // Always 503: gives up after 1 + retries attempts with the status in the error.
    let e = c.get_bytes(&server.url("/down")).unwrap_err();
    assert_eq!(e.status(), Some(503), "{e}");
    assert!(e.is_unavailable());
    assert_eq!(server.count("/down"), 4);
}

#[test]
fn not_found_is_an_answer_and_is_remembered() {
    let server = Server::start(|_, _| Response::status(404));
    let dir = tempfile::tempdir().unwrap();
    let c = client(dir.path(), None);
    assert_eq!(c.get_bytes(&server.url("/x")).unwrap(), Fetched::NotFound);
    let url = server.url("/y");
    assert_eq!(c.download(&url, FOREVER, None).unwrap(), Fetched::NotFound);
    assert_eq!(c.download(&url, FOREVER, None).unwrap(), Fetched::NotFound);
    assert_eq!(server.count("/y"), 1);
    // Other client errors are errors, with the body's explanation.
    let server = Server::start(|_, _| Response::ok("").with_status(403, "token lacks access"));
    let e = c.get_bytes(&server.url("/z")).unwrap_err();
    assert_eq!(e.status(), Some(403));
    assert!(e.to_string().contains("token lacks access"), "{e}");
    assert!(!e.is_unavailable());
    assert_eq!(server.count("/z"), 1, "403 must not be retried");
}

#[test]
fn bearer_token_is_sent() {
    let server = Server::start(|req, _| {
        if req.path == "/redirect" {
            return Response::status(302).header("Location", "/p");
        }
        match req.headers.get("authorization") {
            Some(v) if v == "Bearer hf_secret" => Response::ok("private"),
            _ => Response::status(401),
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let with = client(dir.path(), Some("hf_secret"));
    assert_eq!(
        with.get_bytes(&server.url("/p")).unwrap(),
        Fetched::Found(b"private".to_vec())
    );
    // A redirect on the same host keeps the token (the hub redirects API URLs to files).
    assert_eq!(
        with.get_bytes(&server.url("/redirect")).unwrap(),
        Fetched::Found(b"private".to_vec())
    );
    let without = client(dir.path(), None);
    assert_eq!(
        without.get_bytes(&server.url("/p")).unwrap_err().status(),
        Some(401)
    );
}

#[test]
fn unreachable_server_is_reported_and_stale_cache_used() {
    // A port that was just free: connecting is refused.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/data");
    let dir = tempfile::tempdir().unwrap();
    let c = client(dir.path(), None);
    let e = c.get_bytes(&url).unwrap_err();
    assert!(
        matches!(e, HttpError::Unreachable { attempts: 4, .. }),
        "{e}"
    );
    assert!(e.is_unavailable());
    assert!(e.to_string().contains(&url), "{e}");

    // A server that answers once, then drops every connection: the stale copy is used.
    let server = Server::start(|_, seen| {
        if seen == 0 {
            Response::ok("cached copy")
        } else {
            Response::hang_up()
        }
    });
    let live = server.url("/data");
    c.download(&live, FOREVER, None).unwrap();
    let stale = CacheMode::Fresh {
        max_age: Duration::ZERO,
    };
    let d = c.download(&live, stale, None).unwrap().found().unwrap();
    assert_eq!(d.origin, Origin::StaleCache);
    assert_eq!(std::fs::read_to_string(&d.path).unwrap(), "cached copy");
    assert_eq!(server.count("/data"), 5);
    // Refresh mode insists on the network, so the failure surfaces.
    let e = c.download(&live, CacheMode::Refresh, None).unwrap_err();
    assert!(e.is_unavailable(), "{e}");
}

#[test]
fn token_is_not_forwarded_to_another_host_on_redirect() {
    // The hub redirects file downloads to a CDN on another host, which must not see the token.
    let cdn =
        Server::start(|req, _| Response::ok(format!("{:?}", req.headers.get("authorization"))));
    let cdn_url = cdn.url("/file").replace("127.0.0.1", "localhost");
    let hub = Server::start(move |_, _| Response::status(302).header("Location", &cdn_url));
    let dir = tempfile::tempdir().unwrap();
    let c = client(dir.path(), Some("hf_secret"));
    let got = c.get_bytes(&hub.url("/resolve/main/x")).unwrap();
    assert_eq!(got, Fetched::Found(b"None".to_vec()));
    assert_eq!(cdn.requests().len(), 1);
}

#[test]
fn a_server_that_never_completes_the_connection_is_given_up_on_after_one_retry() {
    // Accepts TCP but never answers the TLS handshake: a connect timeout, as behind a firewall
    // that drops packets. Retrying it four times would make the offline fallback take minutes.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut open = Vec::new();
        for s in l.incoming() {
            open.push(s);
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let c = HttpClient::new(HttpConfig {
        retries: 3,
        backoff: Duration::from_millis(5),
        connect_timeout: Duration::from_millis(300),
        read_timeout: Duration::from_secs(5),
        cache_dir: Some(dir.path().to_path_buf()),
        proxy: ProxySetting::Direct,
        ..HttpConfig::default()
    })
    .unwrap();
    let e = c
        .get_bytes(&format!("https://127.0.0.1:{port}/x"))
        .unwrap_err();
    assert!(
        matches!(e, HttpError::Unreachable { attempts: 2, .. }),
        "{e}"
    );
    assert!(e.is_unavailable());
}

#[test]
fn a_stalled_transfer_times_out_and_the_retry_gets_the_file() {
    // First connection: headers and half the body, then silence. Second: the whole file.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", l.local_addr().unwrap());
    std::thread::spawn(move || {
        use std::io::{BufRead, BufReader, Write};
        let mut stalled = Vec::new();
        for (n, s) in l.incoming().enumerate() {
            let Ok(mut s) = s else { continue };
            let mut r = BufReader::new(s.try_clone().unwrap());
            loop {
                let mut h = String::new();
                if r.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                    break;
                }
            }
            let body = "0123456789".repeat(100);
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            if n == 0 {
                let _ = s.write_all(&body.as_bytes()[..500]);
                let _ = s.flush();
                stalled.push(s); // keep the connection open, send nothing more
            } else {
                let _ = s.write_all(body.as_bytes());
            }
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let c = HttpClient::new(HttpConfig {
        retries: 1,
        backoff: Duration::from_millis(5),
        read_timeout: Duration::from_millis(500),
        cache_dir: Some(dir.path().to_path_buf()),
        proxy: ProxySetting::Direct,
        ..HttpConfig::default()
    })
    .unwrap();
    let start = std::time::Instant::now();
    let d = c
        .download(&format!("{base}/f"), CacheMode::Refresh, None)
        .unwrap()
        .found()
        .unwrap();
    assert_eq!(d.size, 1000);
    assert_eq!(std::fs::read(&d.path).unwrap().len(), 1000);
    // The first attempt really stalled and was given up after the read timeout.
    assert!(
        start.elapsed() >= Duration::from_millis(400),
        "{:?}",
        start.elapsed()
    );
}

/// A proxy stand-in (it records what it is asked and is no real proxy) and an origin: with the
/// proxy set, the client asks the stand-in for the origin (ureq tunnels with `CONNECT host:port`)
/// and never reaches the origin itself; with the origin's host among the exceptions, it reaches
/// the origin directly and the stand-in hears nothing more. A malformed proxy URL is named.
#[test]
fn downloads_go_through_the_proxy_given_except_for_its_exceptions() {
    let proxy = Server::start(|_, _| Response::ok("not a proxy"));
    let origin = Server::start(|_, _| Response::ok("direct"));
    let url = origin.url("/file.txt");
    let host_port = url
        .trim_start_matches("http://")
        .trim_end_matches("/file.txt")
        .to_string();
    let client_with = |no_proxy: Vec<String>, cache: &std::path::Path| {
        HttpClient::new(HttpConfig {
            retries: 0,
            connect_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(5),
            cache_dir: Some(cache.to_path_buf()),
            proxy: ProxySetting::Url {
                url: proxy.url(""),
                no_proxy,
            },
            ..HttpConfig::default()
        })
        .expect("client")
    };
    let dir = tempfile::tempdir().unwrap();
    let through = client_with(vec![], &dir.path().join("a")).download(&url, FOREVER, None);
    assert!(through.is_err(), "the stand-in is no proxy: {through:?}");
    let asked: Vec<String> = proxy.requests().into_iter().map(|r| r.path).collect();
    assert!(
        !asked.is_empty() && asked.iter().all(|p| p.contains(&host_port)),
        "the proxy was asked for {host_port}: {asked:?}"
    );
    assert_eq!(origin.count("/file.txt"), 0, "nothing reached the origin");

    let direct = client_with(
        vec!["localhost".into(), "127.0.0.1".into()],
        &dir.path().join("b"),
    )
    .download(&url, FOREVER, None)
    .unwrap()
    .found()
    .unwrap();
    assert_eq!(std::fs::read_to_string(direct.path).unwrap(), "direct");
    assert_eq!(origin.count("/file.txt"), 1);
    assert_eq!(
        proxy.requests().len(),
        asked.len(),
        "the exception bypassed the proxy"
    );

    let err = HttpClient::new(HttpConfig {
        proxy: ProxySetting::Url {
            url: "ftp://proxy:21".into(),
            no_proxy: vec![],
        },
        ..HttpConfig::default()
    })
    .expect_err("a malformed proxy URL is refused");
    assert!(
        matches!(&err, HttpError::Proxy { url, .. } if url == "ftp://proxy:21"),
        "{err}"
    );
}
