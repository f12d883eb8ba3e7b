//! Token auth as Docker Hub and GHCR do it, against a real Distribution registry: a gate in front
//! of it answers requests without the right bearer token with `401` and
//! `WWW-Authenticate: Bearer realm=…,service=…,scope=…`, and its token endpoint hands out the
//! token for the right basic credentials only. The look-up fetches the token, retries, and gets
//! the registry's answer; wrong credentials are an error naming the user, not the password.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use swtbench_data::registry::{
    base64_encode, parse_registry_ref, Credentials, RegistryClient, RegistryError,
};

use crate::support::layer;
use crate::support::registry::{registry_missing, Registry};

const TOKEN: &str = "tok-123";

/// The gate; counts the tokens it handed out.
fn gate(upstream: u16, user: &'static str, pass: &'static str) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let issued = Arc::new(AtomicUsize::new(0));
    let count = issued.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut client) = conn else { continue };
            let count = count.clone();
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if client.read(&mut byte).unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let text = String::from_utf8_lossy(&head).to_string();
                let auth = text
                    .lines()
                    .find_map(|l| {
                        l.strip_prefix("Authorization: ")
                            .or(l.strip_prefix("authorization: "))
                    })
                    .unwrap_or("")
                    .trim()
                    .to_string();
                let reply = |client: &mut TcpStream, status: &str, extra: &str, body: &str| {
                    let _ = client.write_all(
                        format!(
                            "HTTP/1.1 {status}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                            body.len()
                        )
                        .as_bytes(),
                    );
                };
                if text.starts_with("GET /token?") {
                    let want = format!(
                        "Basic {}",
                        base64_encode(format!("{user}:{pass}").as_bytes())
                    );
                    if auth == want && text.contains("scope=repository%3Aswt%2F") {
                        count.fetch_add(1, Ordering::SeqCst);
                        reply(
                            &mut client,
                            "200 OK",
                            "",
                            &format!(r#"{{"token":"{TOKEN}"}}"#),
                        );
                    } else {
                        reply(&mut client, "401 Unauthorized", "", "");
                    }
                    return;
                }
                if auth != format!("Bearer {TOKEN}") {
                    let challenge = format!(
                        "WWW-Authenticate: Bearer realm=\"http://127.0.0.1:{port}/token\",service=\"gate\",scope=\"repository:swt/x:pull\"\r\n"
                    );
                    reply(&mut client, "401 Unauthorized", &challenge, "");
                    return;
                }
                let mut forwarded = text.trim_end().to_string();
                forwarded.push_str("\r\nConnection: close\r\n\r\n");
                let Ok(mut up) = TcpStream::connect(("127.0.0.1", upstream)) else {
                    return;
                };
                let _ = up.write_all(forwarded.as_bytes());
                let mut answer = Vec::new();
                let _ = up.read_to_end(&mut answer);
                let _ = client.write_all(&answer);
            });
        }
    });
    (port, issued)
}

#[test]
fn bearer_token_auth_is_fetched_and_retried_and_wrong_credentials_are_named() {
    if let Some(why) = registry_missing() {
        layer::skip(&why);
        return;
    }
    let reg = Registry::start(None);
    let (port, issued) = gate(reg.port, "alice", "good");
    let r = parse_registry_ref(&format!("127.0.0.1:{port}/swt")).unwrap();
    let creds = |p: &str| {
        Some(Credentials {
            username: "alice".into(),
            secret: p.into(),
        })
    };

    let client = RegistryClient::new(r.clone(), creds("good"));
    let got = client
        .manifest_exists("exec.env.x86_64.abc:latest", &|_| {})
        .unwrap();
    assert!(!got.present, "the registry answered 404 behind the gate");
    assert_eq!(issued.load(Ordering::SeqCst), 1, "one token was fetched");
    // The token is kept for the scope: no second token for the same repository.
    client
        .manifest_exists("exec.env.x86_64.abc:latest", &|_| {})
        .unwrap();
    assert_eq!(issued.load(Ordering::SeqCst), 1);

    let wrong = RegistryClient::new(r.clone(), creds("bad-secret"));
    let err = wrong
        .manifest_exists("exec.env.x86_64.abc:latest", &|_| {})
        .unwrap_err();
    assert!(matches!(err, RegistryError::Rejected { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("\"alice\""), "{text}");
    assert!(!text.contains("bad-secret"), "{text}");

    let anonymous = RegistryClient::new(r, None);
    let err = anonymous
        .manifest_exists("exec.env.x86_64.abc:latest", &|_| {})
        .unwrap_err();
    assert!(
        matches!(err, RegistryError::NoCredentials { .. }),
        "{err:?}"
    );
}
