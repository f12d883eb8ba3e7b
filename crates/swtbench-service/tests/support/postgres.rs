//! A real PostgreSQL server for a test (Debian's package `postgresql`): a cluster made with
//! `initdb` in a temporary directory, `postgres` listening on a free loopback port and on a Unix
//! socket in that directory, stopped (fast shutdown) and removed when dropped. PostgreSQL refuses
//! to run as root: as root, the directory is given to the `postgres` system user and the server
//! runs as that user (`setpriv`).
//!
//! [`Postgres::start_or_skip`] follows the engine layer's rule: when the server cannot be started
//! the test skips (`SKIPPED: <why>`), or fails when `SWTBENCH_REQUIRE_ENGINE=1`.
//!
//! Included by path by the tests of `swtbench-service` and of the binary (`tests/it`), each of
//! which has the engine layer's rule (`crates/swtbench/tests/support/layer.rs`) as a sibling
//! module `layer`.
#![allow(dead_code, clippy::unwrap_used, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::layer;

/// The superuser the cluster is made with (trust authentication on loopback).
pub const USER: &str = "swtbench";

/// A running server; stopped and removed on drop.
pub struct Postgres {
    child: Option<Child>,
    dir: tempfile::TempDir,
    bin: PathBuf,
    /// Whether it runs as the `postgres` user (this process is root).
    as_postgres: bool,
    pub port: u16,
    /// `postgres://swtbench@127.0.0.1:PORT/postgres`
    pub url: String,
}

/// The directory of the newest installed PostgreSQL's programs (`/usr/lib/postgresql/<v>/bin`).
pub fn bin_dir() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").is_file().then_some((v, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, b)| b)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Postgres {
    /// A new server, or `None` when it cannot be started here (the test then returns; it fails
    /// instead when the engine layer is required).
    pub fn start_or_skip() -> Option<Postgres> {
        match Postgres::start() {
            Ok(pg) => Some(pg),
            Err(why) => {
                layer::skip(&format!("PostgreSQL cannot be started here: {why}"));
                None
            }
        }
    }

    /// Makes a cluster and starts its server; the error says why it could not.
    pub fn start() -> Result<Postgres, String> {
        let bin = bin_dir()
            .ok_or("no /usr/lib/postgresql/<version>/bin/postgres (Debian package postgresql)")?;
        let as_postgres = is_root();
        let dir = tempfile::Builder::new()
            .prefix("swtbench-pg-")
            .tempdir()
            .map_err(|e| format!("a temporary directory: {e}"))?;
        if as_postgres {
            let chown = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(dir.path())
                .output()
                .map_err(|e| format!("chown: {e}"))?;
            if !chown.status.success() {
                return Err(format!(
                    "chown of {} to the postgres user failed (is there a postgres user?): {}",
                    dir.path().display(),
                    String::from_utf8_lossy(&chown.stderr).trim()
                ));
            }
        }
        let mut pg = Postgres {
            child: None,
            port: free_port(),
            url: String::new(),
            bin,
            as_postgres,
            dir,
        };
        pg.url = format!("postgres://{USER}@127.0.0.1:{}/postgres", pg.port);
        let init = pg
            .command("initdb")
            .arg("-D")
            .arg(pg.data())
            .args([
                "-A",
                "trust",
                "-U",
                USER,
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ])
            .output()
            .map_err(|e| format!("initdb: {e}"))?;
        if !init.status.success() {
            return Err(format!(
                "initdb failed: {}",
                String::from_utf8_lossy(&init.stderr).trim()
            ));
        }
        pg.launch()?;
        Ok(pg)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    /// The directory of the server's Unix socket.
    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    /// PostgreSQL's program `name`, as the user that owns the cluster, in its directory.
    fn command(&self, name: &str) -> Command {
        let program = self.bin.join(name);
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("setpriv");
            c.args([
                "--reuid=postgres",
                "--regid=postgres",
                "--clear-groups",
                "--",
            ])
            .arg(program);
            c
        } else {
            Command::new(program)
        };
        cmd.current_dir(self.dir.path())
            .env_remove("PGDATA")
            .stdin(Stdio::null());
        cmd
    }

    /// Starts the server on the cluster and waits until it answers (30 s at most).
    fn launch(&mut self) -> Result<(), String> {
        let log = std::fs::File::create(self.log()).map_err(|e| format!("server log: {e}"))?;
        if self.as_postgres {
            let _ = Command::new("chown")
                .arg("postgres:postgres")
                .arg(self.log())
                .status();
        }
        let child = self
            .command("postgres")
            .arg("-D")
            .arg(self.data())
            .arg("-k")
            .arg(self.dir.path())
            .args(["-p", &self.port.to_string()])
            .args(["-c", "listen_addresses=127.0.0.1"])
            .args(["-c", "fsync=off", "-c", "full_page_writes=off"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("postgres: {e}"))?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                self.child = None;
                return Err(format!(
                    "the server exited ({status}): {}",
                    std::fs::read_to_string(self.log())
                        .unwrap_or_default()
                        .trim()
                ));
            }
            let ready = Command::new(self.bin.join("pg_isready"))
                .args(["-q", "-h", "127.0.0.1", "-p", &self.port.to_string()])
                .args(["-U", USER, "-d", "postgres"])
                .status()
                .is_ok_and(|s| s.success());
            if ready {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "the server did not answer within 30 s: {}",
                    std::fs::read_to_string(self.log())
                        .unwrap_or_default()
                        .trim()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Runs `sql` with psql; its rows, one per line, columns separated by `|`.
    pub fn psql(&self, sql: &str) -> String {
        let out = Command::new(self.bin.join("psql"))
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(["-U", USER, "-d", "postgres", "-c", sql])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "psql {sql:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .trim_end()
            .to_string()
    }

    /// Stops the server (fast shutdown: connections are closed), keeping the cluster.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // SIGINT: fast shutdown. A SIGKILL would leave the server's children behind.
        let _ = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while child.try_wait().ok().flatten().is_none() {
            if Instant::now() > deadline {
                let _ = Command::new("kill")
                    .args(["-QUIT", &child.id().to_string()])
                    .status();
                let _ = child.wait();
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Starts the stopped server again on the same port.
    pub fn restart(&mut self) {
        self.stop();
        self.launch().unwrap();
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
    }
}
