//! A Unix-socket proxy in front of the engine's socket that can stop forwarding, as a hung daemon
//! does: switched to holding, it keeps every connection open and forwards nothing in either
//! direction (a chunk read meanwhile waits for the resume); switched to holding creations, it
//! forwards every request but keeps back the engine's answers on a connection that asked to
//! create a container (the container is made, the client does not hear of it); switched to holding
//! removals, it keeps back every request to remove a container (the container stays). Shared by
//! the backend's and the binary's hung-engine tests (the binary's includes this file by path).
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
    hold_creations: Arc<AtomicBool>,
    hold_removals: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
}

impl Proxy {
    /// Listens at `path` and forwards to [`ENGINE_SOCKET`].
    pub fn start(path: PathBuf) -> Proxy {
        let listener = UnixListener::bind(&path).unwrap();
        let hold = Arc::new(AtomicBool::new(false));
        let hold_creations = Arc::new(AtomicBool::new(false));
        let hold_removals = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let (h, hc, s) = (hold.clone(), hold_creations.clone(), stop.clone());
        let hr = hold_removals.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(client) = client else { continue };
                let holds = Holds {
                    all: h.clone(),
                    creations: hc.clone(),
                    creating: Arc::new(AtomicBool::new(false)),
                    removals: hr.clone(),
                };
                std::thread::spawn(move || connect(client, holds));
            }
        });
        Proxy {
            path,
            hold,
            hold_creations,
            hold_removals,
            stop,
        }
    }

    /// `unix://<path>`, for `DOCKER_HOST`.
    pub fn host(&self) -> String {
        format!("unix://{}", self.path.display())
    }

    /// From now on nothing is forwarded, and connections are held open.
    pub fn hang(&self) {
        self.hold.store(true, Ordering::SeqCst);
    }

    /// From now on the answers on a connection that asked to create a container are held.
    pub fn hold_creations(&self) {
        self.hold_creations.store(true, Ordering::SeqCst);
    }

    /// From now on requests to remove a container are held (not forwarded).
    pub fn hold_removals(&self) {
        self.hold_removals.store(true, Ordering::SeqCst);
    }

    pub fn resume(&self) {
        self.hold.store(false, Ordering::SeqCst);
        self.hold_creations.store(false, Ordering::SeqCst);
        self.hold_removals.store(false, Ordering::SeqCst);
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

/// What one connection waits for.
#[derive(Clone)]
struct Holds {
    all: Arc<AtomicBool>,
    creations: Arc<AtomicBool>,
    /// This connection asked to create a container.
    creating: Arc<AtomicBool>,
    removals: Arc<AtomicBool>,
}

impl Holds {
    fn held(&self, answer: bool) -> bool {
        self.all.load(Ordering::SeqCst)
            || (answer
                && self.creations.load(Ordering::SeqCst)
                && self.creating.load(Ordering::SeqCst))
    }

    fn wait(&self, answer: bool) {
        while self.held(answer) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// One client connection: the engine's side is opened once forwarding is on, then bytes are
/// copied both ways.
fn connect(client: UnixStream, holds: Holds) {
    holds.wait(false);
    let Ok(engine) = UnixStream::connect(ENGINE_SOCKET) else {
        return;
    };
    let (c2, e2) = (client.try_clone().unwrap(), engine.try_clone().unwrap());
    let h2 = holds.clone();
    std::thread::spawn(move || pump(c2, e2, &h2, false));
    pump(engine, client, &holds, true);
}

fn pump(mut from: UnixStream, mut to: UnixStream, holds: &Holds, answers: bool) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if !answers {
            let text = String::from_utf8_lossy(&buf[..n]);
            if text.starts_with("POST ") && text.contains("/containers/create") {
                holds.creating.store(true, Ordering::SeqCst);
            }
            if text.starts_with("DELETE ") && text.contains("/containers/") {
                while holds.removals.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
        holds.wait(answers);
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Write);
}
