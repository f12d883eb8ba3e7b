//! A Unix-socket proxy in front of the engine's socket that can stop forwarding, as a hung daemon
//! does: switched to holding, it keeps every connection open and forwards nothing in either
//! direction (a chunk read meanwhile waits for the resume). Shared by the backend's and the
//! binary's hung-engine tests (the binary's includes this file by path).
#![allow(dead_code)]

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The engine's socket the proxy forwards to.
pub const ENGINE_SOCKET: &str = "/var/run/docker.sock";

pub struct Proxy {
    pub path: PathBuf,
    hold: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
}

impl Proxy {
    /// Listens at `path` and forwards to [`ENGINE_SOCKET`].
    pub fn start(path: PathBuf) -> Proxy {
        let listener = UnixListener::bind(&path).unwrap();
        let hold = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let (h, s) = (hold.clone(), stop.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(client) = client else { continue };
                let hold = h.clone();
                std::thread::spawn(move || connect(client, hold));
            }
        });
        Proxy { path, hold, stop }
    }

    /// `unix://<path>`, for `DOCKER_HOST`.
    pub fn host(&self) -> String {
        format!("unix://{}", self.path.display())
    }

    /// From now on nothing is forwarded, and connections are held open.
    pub fn hang(&self) {
        self.hold.store(true, Ordering::SeqCst);
    }

    pub fn resume(&self) {
        self.hold.store(false, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.resume();
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accepting thread so that it sees the stop.
        let _ = UnixStream::connect(&self.path);
    }
}

fn wait_while_held(hold: &AtomicBool) {
    while hold.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One client connection: the engine's side is opened once forwarding is on, then bytes are
/// copied both ways.
fn connect(client: UnixStream, hold: Arc<AtomicBool>) {
    wait_while_held(&hold);
    let Ok(engine) = UnixStream::connect(ENGINE_SOCKET) else {
        return;
    };
    let (c2, e2) = (client.try_clone().unwrap(), engine.try_clone().unwrap());
    let h2 = hold.clone();
    std::thread::spawn(move || pump(c2, e2, &h2));
    pump(engine, client, &hold);
}

fn pump(mut from: UnixStream, mut to: UnixStream, hold: &AtomicBool) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        wait_while_held(hold);
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Write);
}
