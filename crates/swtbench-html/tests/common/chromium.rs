//! Headless Chromium driven from the command line only (`--dump-dom`, `--screenshot`): no
//! DevTools protocol, no driver. The page's own script runs before the DOM is dumped because
//! `--virtual-time-budget` lets the page settle first.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Environment variable naming the browser binary (default: `chromium`, then
/// `chromium-browser`, `google-chrome` on `PATH`).
pub const CHROMIUM_ENV: &str = "SWTBENCH_CHROMIUM";

pub fn find() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(CHROMIUM_ENV) {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

#[derive(Debug)]
pub struct Browser {
    pub bin: PathBuf,
}

impl Browser {
    fn base_args(profile: &Path) -> Vec<String> {
        vec![
            "--headless".into(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-background-networking".into(),
            "--no-first-run".into(),
            "--disable-extensions".into(),
            "--disable-sync".into(),
            "--disable-component-update".into(),
            "--disable-default-apps".into(),
            // No network at all: any lookup fails and no proxy is reachable.
            "--host-resolver-rules=MAP * ~NOTFOUND".into(),
            "--proxy-server=127.0.0.1:9".into(),
            format!("--user-data-dir={}", profile.display()),
        ]
    }

    fn run(&self, extra: &[String], url: &str) -> Result<(String, Duration), String> {
        let profile = tempfile::tempdir().map_err(|e| e.to_string())?;
        let mut args = Self::base_args(profile.path());
        args.extend(extra.iter().cloned());
        args.push(url.to_string());
        let start = Instant::now();
        let mut child = Command::new(&self.bin)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.bin.display()))?;
        let stdout = child.stdout.take();
        let reader = std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut o) = stdout {
                let _ = std::io::Read::read_to_string(&mut o, &mut s);
            }
            s
        });
        let stderr = child.stderr.take();
        let err_reader = std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut o) = stderr {
                let _ = std::io::Read::read_to_string(&mut o, &mut s);
            }
            s
        });
        let deadline = Instant::now() + Duration::from_secs(90);
        let status = loop {
            match child.try_wait() {
                Ok(Some(st)) => break st,
                Ok(None) if Instant::now() > deadline => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!("{} timed out after 90 s", self.bin.display()));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => return Err(e.to_string()),
            }
        };
        let elapsed = start.elapsed();
        let out = reader.join().unwrap_or_default();
        let err = err_reader.join().unwrap_or_default();
        if !status.success() {
            return Err(format!("chromium exited with {status}: {err}"));
        }
        Ok((out, elapsed))
    }

    /// The DOM after the page's scripts ran, and the wall time of the browser process.
    pub fn dump_dom(&self, url: &str) -> Result<(String, Duration), String> {
        self.run(
            &["--virtual-time-budget=10000".into(), "--dump-dom".into()],
            url,
        )
    }

    /// The DOM dumped right after the load event, in real time (no virtual time budget): the
    /// process's wall time minus a blank page's is the cost of loading the page.
    pub fn dump_dom_realtime(&self, url: &str) -> Result<(String, Duration), String> {
        self.run(&["--dump-dom".into()], url)
    }

    pub fn screenshot(&self, url: &str, out: &Path, size: (u32, u32)) -> Result<(), String> {
        self.run(
            &[
                "--virtual-time-budget=10000".into(),
                "--hide-scrollbars".into(),
                format!("--window-size={},{}", size.0, size.1),
                format!("--screenshot={}", out.display()),
            ],
            url,
        )
        .map(|_| ())
    }
}

/// `file://` URL of a local file, with a fragment.
pub fn file_url(path: &Path, fragment: &str) -> String {
    let abs = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mut url = format!("file://{}", abs.display());
    if !fragment.is_empty() {
        url.push('#');
        url.push_str(fragment);
    }
    url
}
