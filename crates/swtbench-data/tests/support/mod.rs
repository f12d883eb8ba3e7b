//! A tiny HTTP/1.1 server for tests: one thread, one request per connection, answers from a
//! closure, and a log of every request (path and headers) so tests can count and inspect them.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;

#[derive(Debug, Clone)]
pub struct Request {
    pub path: String,
    /// Lower-case header names.
    pub headers: BTreeMap<String, String>,
}

#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn ok(body: impl Into<Vec<u8>>) -> Response {
        Response {
            status: 200,
            headers: Vec::new(),
            body: body.into(),
        }
    }
    pub fn status(status: u16) -> Response {
        Response {
            status,
            headers: Vec::new(),
            body: format!("status {status}").into_bytes(),
        }
    }
    /// Close the connection without answering (looks like a network failure to the client).
    pub fn hang_up() -> Response {
        Response {
            status: 0,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }
    pub fn with_empty_body(mut self) -> Response {
        self.body.clear();
        self
    }
    pub fn with_status(mut self, status: u16, body: &str) -> Response {
        self.status = status;
        self.body = body.as_bytes().to_vec();
        self
    }
    pub fn header(mut self, k: &str, v: &str) -> Response {
        self.headers.push((k.to_string(), v.to_string()));
        self
    }
}

pub struct Server {
    pub base: String,
    log: Arc<Mutex<Vec<Request>>>,
}

impl Server {
    /// Serves until the test process ends. `handler` sees each request and the number of earlier
    /// requests for the same path.
    pub fn start<F>(handler: F) -> Server
    where
        F: Fn(&Request, usize) -> Response + Send + Sync + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let log: Arc<Mutex<Vec<Request>>> = Arc::default();
        let log2 = log.clone();
        let handler = Arc::new(handler);
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let log = log2.clone();
                let handler = handler.clone();
                thread::spawn(move || serve(stream, &log, &*handler));
            }
        });
        Server { base, log }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub fn requests(&self) -> Vec<Request> {
        self.log.lock().expect("log").clone()
    }

    pub fn count(&self, path: &str) -> usize {
        self.requests().iter().filter(|r| r.path == path).count()
    }
}

fn serve(
    stream: TcpStream,
    log: &Mutex<Vec<Request>>,
    handler: &dyn Fn(&Request, usize) -> Response,
) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let mut headers = BTreeMap::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 {
            break;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    let req = Request { path, headers };
    let seen = {
        let mut log = log.lock().expect("log");
        let seen = log.iter().filter(|r| r.path == req.path).count();
        log.push(req.clone());
        seen
    };
    let resp = handler(&req, seen);
    if resp.status == 0 {
        return;
    }
    let mut out = stream;
    let mut head = format!(
        "HTTP/1.1 {} X\r\nContent-Length: {}\r\nConnection: close\r\n",
        resp.status,
        resp.body.len()
    );
    for (k, v) in &resp.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = out.write_all(head.as_bytes());
    if resp.status != 304 {
        let _ = out.write_all(&resp.body);
    }
    let _ = out.flush();
}
