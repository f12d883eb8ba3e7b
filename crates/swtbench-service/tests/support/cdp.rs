//! A real headless Chromium driven through the DevTools protocol over its pipe
//! (`--remote-debugging-pipe`: JSON messages ended by a NUL byte, read on the browser's fd 3 and
//! written on its fd 4). No driver, no WebSocket: the two descriptors are named pipes that a
//! shell opens for the browser. Used by the web page's tests (the service's, and the binary's
//! engine test of the full path).
#![allow(dead_code, clippy::unwrap_used, clippy::print_stderr)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Environment variable naming the browser binary (default: `chromium`, then
/// `chromium-browser`, `google-chrome` on `PATH`).
pub const CHROMIUM_ENV: &str = "SWTBENCH_CHROMIUM";

/// The browser binary, if there is one.
pub fn find() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(CHROMIUM_ENV) {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|d| ["chromium", "chromium-browser", "google-chrome"].map(|n| d.join(n)))
        .find(|p| p.is_file())
}

/// A running browser (closed and waited for when dropped).
pub struct Browser {
    child: Child,
    to_browser: std::fs::File,
    from_browser: mpsc::Receiver<Value>,
    next_id: u64,
    /// Every event received so far (`method`, `params`, `sessionId`).
    pub events: Vec<Value>,
    _dir: tempfile::TempDir,
}

/// How long one protocol call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

impl Browser {
    /// Starts `bin` headless, without network access beyond loopback, with a fresh profile.
    pub fn start(bin: &Path) -> Browser {
        let dir = tempfile::tempdir().unwrap();
        let (fifo_in, fifo_out) = (dir.path().join("in"), dir.path().join("out"));
        for f in [&fifo_in, &fifo_out] {
            let made = Command::new("mkfifo").arg(f).status().unwrap();
            assert!(made.success(), "mkfifo {}", f.display());
        }
        let profile = dir.path().join("profile");
        let child = Command::new("sh")
            .arg("-c")
            .arg(r#"exec "$0" "$@" 3<"$CDP_IN" 4>"$CDP_OUT""#)
            .arg(bin)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-default-apps",
                "--disable-extensions",
                "--disable-sync",
                "--no-first-run",
                "--disable-popup-blocking",
                // Any name other than loopback fails to resolve; no proxy.
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                "--no-proxy-server",
                "--remote-debugging-pipe",
                "--window-size=1280,900",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .env("CDP_IN", &fifo_in)
            .env("CDP_OUT", &fifo_out)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Opening a named pipe waits for its other end: in a thread, so that a browser that
        // never starts fails the test instead of hanging it.
        let (opened_tx, opened_rx) = mpsc::channel();
        std::thread::spawn(move || {
            let w = std::fs::OpenOptions::new().write(true).open(&fifo_in);
            let r = std::fs::File::open(&fifo_out);
            let _ = opened_tx.send((w, r));
        });
        let mut child = child;
        let (w, r) = match opened_rx.recv_timeout(Duration::from_secs(60)) {
            Ok((Ok(w), Ok(r))) => (w, r),
            other => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the browser did not open its DevTools pipe: {other:?}");
            }
        };
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut r = r;
            let mut buf: Vec<u8> = Vec::new();
            let mut chunk = [0u8; 65536];
            loop {
                let n = match r.read(&mut chunk) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                buf.extend_from_slice(&chunk[..n]);
                while let Some(end) = buf.iter().position(|b| *b == 0) {
                    let msg: Vec<u8> = buf.drain(..=end).collect();
                    if let Ok(v) = serde_json::from_slice::<Value>(&msg[..msg.len() - 1]) {
                        if tx.send(v).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Browser {
            child,
            to_browser: w,
            from_browser: rx,
            next_id: 0,
            events: Vec::new(),
            _dir: dir,
        }
    }

    /// Sends `method` (to the page of `session`, or to the browser) and waits for its result.
    pub fn call(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&msg).unwrap();
        bytes.push(0);
        self.to_browser
            .write_all(&bytes)
            .map_err(|e| format!("{method}: writing to the browser: {e}"))?;
        let deadline = Instant::now() + CALL_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self
                .from_browser
                .recv_timeout(left)
                .map_err(|e| format!("{method}: no answer from the browser: {e}"))?;
            if v["id"].as_u64() == Some(id) {
                if let Some(e) = v.get("error") {
                    return Err(format!("{method}: {e}"));
                }
                return Ok(v["result"].clone());
            }
            if v.get("method").is_some() {
                self.events.push(v);
            }
        }
    }

    /// Opens `url` in a new page and attaches to it; returns the page's session, with its
    /// runtime, log and page events on.
    pub fn open(&mut self, url: &str) -> String {
        let target = self
            .call(None, "Target.createTarget", json!({"url": "about:blank"}))
            .unwrap();
        let session = self.attach(target["targetId"].as_str().unwrap());
        // Chromium aborts a navigation with ERR_NETWORK_CHANGED when the machine's interfaces
        // change meanwhile (the container engine makes and removes its veths as tests run): the
        // page is asked for again, a few times.
        for attempt in 1.. {
            let r = self
                .call(Some(&session), "Page.navigate", json!({"url": url}))
                .unwrap();
            match r["errorText"].as_str() {
                Some(e) if e.contains("ERR_NETWORK_CHANGED") && attempt < 5 => {
                    std::thread::sleep(Duration::from_millis(300));
                }
                // Any other outcome is the test's to judge, as before.
                _ => break,
            }
        }
        session
    }

    /// Attaches to target `id` (flat session) and turns its events on.
    pub fn attach(&mut self, id: &str) -> String {
        let attached = self
            .call(
                None,
                "Target.attachToTarget",
                json!({"targetId": id, "flatten": true}),
            )
            .unwrap();
        let session = attached["sessionId"].as_str().unwrap().to_string();
        for domain in ["Runtime.enable", "Log.enable", "Page.enable"] {
            self.call(Some(&session), domain, json!({})).unwrap();
        }
        session
    }

    /// The pages open now: (target id, url).
    pub fn pages(&mut self) -> Vec<(String, String)> {
        let t = self.call(None, "Target.getTargets", json!({})).unwrap();
        t["targetInfos"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["type"] == "page")
            .map(|i| {
                (
                    i["targetId"].as_str().unwrap().to_string(),
                    i["url"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }

    /// The value of `expression` in the page (promises awaited); an exception is an error.
    pub fn eval(&mut self, session: &str, expression: &str) -> Result<Value, String> {
        let r = self.call(
            Some(session),
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        )?;
        if let Some(e) = r.get("exceptionDetails") {
            return Err(format!("{expression}: {e}"));
        }
        Ok(r["result"]["value"].clone())
    }

    /// Waits until `expression` is truthy in the page (polled every 100 ms), at most `limit`;
    /// then its value.
    pub fn wait_for(&mut self, session: &str, expression: &str, limit: Duration) -> Value {
        let deadline = Instant::now() + limit;
        loop {
            let last = match self.eval(session, expression) {
                Ok(v)
                    if !matches!(v, Value::Null | Value::Bool(false))
                        && v != json!(0)
                        && v != json!("") =>
                {
                    return v
                }
                Ok(v) => v,
                Err(e) => json!(e),
            };
            assert!(
                Instant::now() < deadline,
                "waited {limit:?} for `{expression}` (last: {last}); the page's errors: {:?}",
                self.page_errors()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Sets the files of the file input `selector` (a user's choice in the file dialog).
    pub fn set_files(&mut self, session: &str, selector: &str, files: &[&Path]) {
        let doc = self
            .call(Some(session), "DOM.getDocument", json!({}))
            .unwrap();
        let node = self
            .call(
                Some(session),
                "DOM.querySelector",
                json!({"nodeId": doc["root"]["nodeId"], "selector": selector}),
            )
            .unwrap();
        let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        self.call(
            Some(session),
            "DOM.setFileInputFiles",
            json!({"nodeId": node["nodeId"], "files": files}),
        )
        .unwrap();
    }

    /// Types `text` into the focused element, as a keyboard does.
    pub fn type_text(&mut self, session: &str, text: &str) {
        self.call(Some(session), "Input.insertText", json!({"text": text}))
            .unwrap();
    }

    /// Presses a key (`Enter`, `Tab`, …) on the focused element.
    pub fn press(&mut self, session: &str, key: &str, code: u32) {
        let text = if key == "Enter" { "\r" } else { "" };
        for kind in ["keyDown", "keyUp"] {
            let mut p = json!({"type": kind, "key": key, "code": key, "windowsVirtualKeyCode": code, "nativeVirtualKeyCode": code});
            if kind == "keyDown" && !text.is_empty() {
                p["text"] = json!(text);
            }
            self.call(Some(session), "Input.dispatchKeyEvent", p)
                .unwrap();
        }
    }

    /// What went wrong in pages so far: uncaught exceptions, console errors, and the browser's
    /// own error entries (a Content-Security-Policy violation, a failed load; not a request aborted
    /// by a change of the machine's network interfaces).
    pub fn page_errors(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match e["method"].as_str()? {
                "Runtime.exceptionThrown" => {
                    Some(format!("exception: {}", e["params"]["exceptionDetails"]))
                }
                "Runtime.consoleAPICalled" if e["params"]["type"] == "error" => {
                    Some(format!("console.error: {}", e["params"]["args"]))
                }
                // A request Chromium aborted because the machine's interfaces changed (the
                // engine adds one per container) is the machine's, not the page's: the page
                // retries its polls, and a test that waits for their result fails if it does not.
                "Log.entryAdded"
                    if e["params"]["entry"]["text"]
                        .as_str()
                        .is_some_and(|t| t.contains("net::ERR_NETWORK_CHANGED")) =>
                {
                    None
                }
                "Log.entryAdded" if e["params"]["entry"]["level"] == "error" => Some(format!(
                    "log: {} {}",
                    e["params"]["entry"]["text"], e["params"]["entry"]["url"]
                )),
                _ => None,
            })
            .collect()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let mut bytes = serde_json::to_vec(&json!({"id": 0, "method": "Browser.close"})).unwrap();
        bytes.push(0);
        let _ = self.to_browser.write_all(&bytes);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
