//! A real Distribution registry (`/usr/bin/docker-registry`, Debian package `docker-registry`)
//! for the registry tests: on a free loopback port, its storage and config in a temporary
//! directory, optionally behind htpasswd basic auth; killed (and its data removed) on drop.
//! And a small HTTP proxy in front of it that answers the first requests with 429.
#![allow(dead_code, clippy::unwrap_used, clippy::print_stderr)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const REGISTRY_BIN: &str = "/usr/bin/docker-registry";

/// Why the registry tests cannot run here, if they cannot.
pub fn registry_missing() -> Option<String> {
    if !Path::new(REGISTRY_BIN).exists() {
        return Some(format!(
            "{REGISTRY_BIN} is missing (apt-get install docker-registry)"
        ));
    }
    None
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub struct Registry {
    child: Child,
    pub dir: tempfile::TempDir,
    pub port: u16,
}

impl Registry {
    /// Starts a registry; with `user`, behind basic auth with that user and password.
    pub fn start(user: Option<(&str, &str)>) -> Registry {
        let dir = tempfile::Builder::new()
            .prefix("swtbench-registry-")
            .tempdir()
            .unwrap();
        let port = free_port();
        let mut config = format!(
            "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n",
            dir.path().join("data").display()
        );
        if let Some((u, p)) = user {
            let out = Command::new("htpasswd")
                .args(["-Bbn", u, p])
                .output()
                .expect("htpasswd (apt-get install apache2-utils)");
            assert!(out.status.success());
            let path = dir.path().join("htpasswd");
            std::fs::write(&path, &out.stdout).unwrap();
            config.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: swtbench-test\n    path: {}\n",
                path.display()
            ));
        }
        let cfg = dir.path().join("config.yml");
        std::fs::write(&cfg, config).unwrap();
        let log = std::fs::File::create(dir.path().join("registry.log")).unwrap();
        let child = Command::new(REGISTRY_BIN)
            .arg("serve")
            .arg(&cfg)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let r = Registry { child, dir, port };
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "the registry did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        r
    }

    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Bytes the registry stores.
    pub fn stored_bytes(&self) -> u64 {
        fn walk(p: &Path) -> u64 {
            let mut n = 0;
            if let Ok(rd) = std::fs::read_dir(p) {
                for e in rd.flatten() {
                    let m = e.metadata().unwrap();
                    n += if m.is_dir() { walk(&e.path()) } else { m.len() };
                }
            }
            n
        }
        walk(&self.dir.path().join("data"))
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A Docker config directory with inline credentials for `host`.
pub fn docker_config(dir: &Path, host: &str, user: &str, pass: &str) -> PathBuf {
    let auth = swtbench_data::registry::base64_encode(format!("{user}:{pass}").as_bytes());
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("config.json"),
        format!(r#"{{"auths":{{"{host}":{{"auth":"{auth}"}}}}}}"#),
    )
    .unwrap();
    dir.to_path_buf()
}

/// An HTTP/1.1 proxy to `upstream` that answers its first `refusals` requests with
/// `429 Too Many Requests` and `Retry-After: 1`. One request per connection.
pub struct Throttle {
    pub port: u16,
    pub refused: Arc<AtomicUsize>,
}

impl Throttle {
    pub fn start(upstream: u16, refusals: usize) -> Throttle {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let refused = Arc::new(AtomicUsize::new(0));
        let count = refused.clone();
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
                    if count.fetch_add(1, Ordering::SeqCst) < refusals {
                        let _ = client.write_all(
                            b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                        );
                        return;
                    }
                    // HEAD and GET requests only: no body to forward. Close after one answer.
                    let text = String::from_utf8_lossy(&head)
                        .replace("Connection: keep-alive", "Connection: close");
                    let mut text = text.trim_end().to_string();
                    if !text.to_lowercase().contains("connection: close") {
                        text.push_str("\r\nConnection: close");
                    }
                    text.push_str("\r\n\r\n");
                    let Ok(mut up) = TcpStream::connect(("127.0.0.1", upstream)) else {
                        return;
                    };
                    let _ = up.write_all(text.as_bytes());
                    let mut answer = Vec::new();
                    let _ = up.read_to_end(&mut answer);
                    let _ = client.write_all(&answer);
                });
            }
        });
        Throttle { port, refused }
    }
}
