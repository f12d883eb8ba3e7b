//! A Unix-socket proxy in front of the engine's socket that can stop forwarding, as a hung daemon
//! does: switched to holding, it keeps every connection open and forwards nothing in either
//! direction (a chunk read meanwhile waits for the resume); switched to holding creations, it
//! forwards every request but keeps back the engine's answers on a connection that asked to
//! create a container (the container is made, the client does not hear of it); switched to holding
//! removals, it keeps back every request to remove a container (the container stays); switched to
//! answering removals as under way, it answers a request to remove a container itself with the
//! engine's 409 "removal … is already in progress" and forwards the request only a moment later,
//! on a connection of its own (the container goes after the client heard the answer); switched to
//! holding pushes, it keeps back the engine's answers on a connection that asked to push an image
//! (the push never ends for the client); switched to delaying creations, it forwards a request to
//! create a container only a while later (an engine slow to create). Shared by
//! the backend's and the binary's hung-engine tests (the binary's includes this file by path).
#![allow(dead_code)]

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The engine's socket the proxy forwards to.
pub const ENGINE_SOCKET: &str = "/var/run/docker.sock";

pub struct Proxy {
    pub path: PathBuf,
    hold: Arc<AtomicBool>,
    hold_creations: Arc<AtomicBool>,
    hold_removals: Arc<AtomicBool>,
    removals_under_way: Arc<AtomicBool>,
    hold_pushes: Arc<AtomicBool>,
    /// How long a request to create a container waits before it is forwarded (ms; 0: none).
    creation_delay: Arc<AtomicU64>,
    /// Requests to create a container seen so far.
    creations_seen: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

/// How long a removal answered as under way waits before the proxy forwards it.
pub const REMOVAL_UNDER_WAY_FOR: Duration = Duration::from_millis(1500);

impl Proxy {
    /// Listens at `path` and forwards to [`ENGINE_SOCKET`].
    pub fn start(path: PathBuf) -> Proxy {
        let listener = UnixListener::bind(&path).unwrap();
        let hold = Arc::new(AtomicBool::new(false));
        let hold_creations = Arc::new(AtomicBool::new(false));
        let hold_removals = Arc::new(AtomicBool::new(false));
        let removals_under_way = Arc::new(AtomicBool::new(false));
        let hold_pushes = Arc::new(AtomicBool::new(false));
        let creation_delay = Arc::new(AtomicU64::new(0));
        let creations_seen = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (h, hc, s) = (hold.clone(), hold_creations.clone(), stop.clone());
        let (hr, ru) = (hold_removals.clone(), removals_under_way.clone());
        let hp = hold_pushes.clone();
        let (cd, cs) = (creation_delay.clone(), creations_seen.clone());
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
                    under_way: ru.clone(),
                    pushes: hp.clone(),
                    pushing: Arc::new(AtomicBool::new(false)),
                    creation_delay: cd.clone(),
                    creations_seen: cs.clone(),
                };
                std::thread::spawn(move || connect(client, holds));
            }
        });
        Proxy {
            path,
            hold,
            hold_creations,
            hold_removals,
            removals_under_way,
            hold_pushes,
            creation_delay,
            creations_seen,
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

    /// From now on a request to remove a container is answered by the proxy with the engine's
    /// 409 "removal of container … is already in progress", and forwarded to the engine
    /// [`REMOVAL_UNDER_WAY_FOR`] later on a connection of its own.
    pub fn answer_removals_as_under_way(&self) {
        self.removals_under_way.store(true, Ordering::SeqCst);
    }

    /// From now on the answers on a connection that asked to push an image are held.
    pub fn hold_pushes(&self) {
        self.hold_pushes.store(true, Ordering::SeqCst);
    }

    /// From now on a request to create a container is forwarded `delay` after it arrived (as by
    /// an engine slow to create it).
    pub fn delay_creations(&self, delay: Duration) {
        self.creation_delay
            .store(delay.as_millis() as u64, Ordering::SeqCst);
    }

    /// How many requests to create a container the proxy has seen.
    pub fn creations_seen(&self) -> u64 {
        self.creations_seen.load(Ordering::SeqCst)
    }

    pub fn resume(&self) {
        self.hold.store(false, Ordering::SeqCst);
        self.hold_creations.store(false, Ordering::SeqCst);
        self.hold_removals.store(false, Ordering::SeqCst);
        self.removals_under_way.store(false, Ordering::SeqCst);
        self.hold_pushes.store(false, Ordering::SeqCst);
        self.creation_delay.store(0, Ordering::SeqCst);
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
    under_way: Arc<AtomicBool>,
    pushes: Arc<AtomicBool>,
    /// This connection asked to push an image.
    pushing: Arc<AtomicBool>,
    creation_delay: Arc<AtomicU64>,
    creations_seen: Arc<AtomicU64>,
}

impl Holds {
    fn held(&self, answer: bool) -> bool {
        self.all.load(Ordering::SeqCst)
            || (answer
                && self.creations.load(Ordering::SeqCst)
                && self.creating.load(Ordering::SeqCst))
            || (answer && self.pushes.load(Ordering::SeqCst) && self.pushing.load(Ordering::SeqCst))
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
    let reply = client.try_clone().unwrap();
    let h2 = holds.clone();
    std::thread::spawn(move || pump(c2, e2, &h2, Some(reply)));
    pump(engine, client, &holds, None);
}

/// Answers the removal request `request` as the engine does when another removal of the
/// container is under way, and sends the request to the engine a moment later.
fn answer_as_under_way(request: &[u8], reply: &mut UnixStream) {
    let text = String::from_utf8_lossy(request);
    let id = text
        .split_whitespace()
        .nth(1)
        .and_then(|path| path.split("/containers/").nth(1))
        .map(|rest| rest.split(['?', '/']).next().unwrap_or(rest).to_string())
        .unwrap_or_default();
    let body = format!("{{\"message\":\"removal of container {id} is already in progress\"}}");
    let head = format!(
        "HTTP/1.1 409 Conflict\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let _ = reply.write_all(head.as_bytes());
    let _ = reply.write_all(body.as_bytes());
    let request = request.to_vec();
    std::thread::spawn(move || {
        std::thread::sleep(REMOVAL_UNDER_WAY_FOR);
        if let Ok(mut engine) = UnixStream::connect(ENGINE_SOCKET) {
            let _ = engine.write_all(&request);
            let mut answer = [0u8; 4096];
            let _ = engine.read(&mut answer);
        }
    });
}

/// Copies `from` to `to`; `reply` (the client's side, for the request direction) is where the
/// proxy answers a request itself.
fn pump(mut from: UnixStream, mut to: UnixStream, holds: &Holds, mut reply: Option<UnixStream>) {
    let answers = reply.is_none();
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
                holds.creations_seen.fetch_add(1, Ordering::SeqCst);
                let delay = holds.creation_delay.load(Ordering::SeqCst);
                if delay > 0 {
                    std::thread::sleep(Duration::from_millis(delay));
                }
            }
            if text.starts_with("POST ") && text.contains("/push") {
                holds.pushing.store(true, Ordering::SeqCst);
            }
            if text.starts_with("DELETE ") && text.contains("/containers/") {
                while holds.removals.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(20));
                }
                if holds.under_way.load(Ordering::SeqCst) {
                    if let Some(reply) = reply.as_mut() {
                        answer_as_under_way(&buf[..n], reply);
                        continue;
                    }
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
