//! Headless Chromium driven over the DevTools protocol, for tests of live pages: a page is
//! opened, scripts evaluated in it, and console errors and uncaught exceptions collected.
//! The protocol runs over a WebSocket; the little of it a test needs (a handshake, masked text
//! frames out, text frames in) is written here rather than bringing in a client crate.
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// A browser with one page, killed when dropped.
pub struct Browser {
    child: Child,
    socket: TcpStream,
    next_id: u64,
    /// Console errors and uncaught exceptions seen so far, as text.
    pub errors: Vec<String>,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct KillOnDrop(Option<Child>);

impl KillOnDrop {
    fn take(mut self) -> Child {
        self.0.take().unwrap()
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Browser {
    /// Starts `chromium` headless with a `width`×`height` window, its profile in `profile`,
    /// and attaches to its first page.
    pub fn start(chromium: &Path, profile: &Path, (width, height): (u32, u32)) -> Browser {
        let mut child = Command::new(chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
            ])
            .args([
                "--disable-background-networking",
                "--disable-component-update",
            ])
            .args([
                "--disable-sync",
                "--hide-scrollbars",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--window-size={width},{height}"))
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start chromium");
        let stderr = child.stderr.take().unwrap();
        // Killed on any panic before the browser is whole, as after.
        let killer = KillOnDrop(Some(child));
        let port = devtools_port(stderr);
        let page = page_socket_path(port);
        let socket = handshake(port, &page);
        let mut browser = Browser {
            child: killer.take(),
            socket,
            next_id: 0,
            errors: Vec::new(),
        };
        for domain in ["Page.enable", "Runtime.enable", "Log.enable"] {
            browser.call(domain, json!({}));
        }
        browser
    }

    /// Sends a command and returns its result, noting the events that came before it.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let message = json!({"id": id, "method": method, "params": params}).to_string();
        send_text(&mut self.socket, message.as_bytes());
        if std::env::var_os("SOJOURN_CDP_TRACE").is_some() {
            eprintln!("cdp> {message}");
        }
        loop {
            let reply: Value = serde_json::from_slice(&read_message(&mut self.socket)).unwrap();
            if reply["id"] == id {
                assert!(reply["error"].is_null(), "{method}: {reply}");
                return reply["result"].clone();
            }
            self.note(&reply);
        }
    }

    /// Opens `url` in the page and waits (up to 10 s) until it has loaded.
    pub fn open(&mut self, url: &str) {
        self.call("Page.navigate", json!({"url": url}));
        let loaded = format!(
            "document.readyState === 'complete' && location.href === {}",
            json!(url)
        );
        assert!(
            self.wait_for(&loaded, Duration::from_secs(10)),
            "{url} did not load"
        );
    }

    /// The value of `expression` evaluated in the page (awaited if it is a promise).
    pub fn eval(&mut self, expression: &str) -> Value {
        let params = json!({"expression": expression, "returnByValue": true, "awaitPromise": true});
        let result = self.call("Runtime.evaluate", params);
        assert!(
            result["exceptionDetails"].is_null(),
            "{expression}: {result}"
        );
        result["result"]["value"].clone()
    }

    /// Evaluates `expression` every 50 ms until it is `true`, for at most `limit`.
    pub fn wait_for(&mut self, expression: &str, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if self.eval(expression) == Value::Bool(true) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// A PNG of the page as it is now.
    pub fn screenshot(&mut self) -> Vec<u8> {
        use base64::Engine as _;
        let shot = self.call("Page.captureScreenshot", json!({"format": "png"}));
        base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap())
            .unwrap()
    }

    fn note(&mut self, event: &Value) {
        let p = &event["params"];
        match event["method"].as_str() {
            Some("Runtime.exceptionThrown") => self.errors.push(p["exceptionDetails"].to_string()),
            Some("Runtime.consoleAPICalled") if p["type"] == "error" => {
                self.errors.push(p["args"].to_string())
            }
            Some("Log.entryAdded") if p["entry"]["level"] == "error" => {
                self.errors.push(p["entry"].to_string())
            }
            _ => {}
        }
    }
}

/// Reads Chromium's stderr up to `DevTools listening on ws://127.0.0.1:PORT/…`; the rest is
/// drained on a thread.
fn devtools_port(stderr: std::process::ChildStderr) -> u16 {
    let mut stderr = BufReader::new(stderr);
    let mut line = String::new();
    while stderr.read_line(&mut line).unwrap() > 0 {
        if let Some(rest) = line
            .trim()
            .strip_prefix("DevTools listening on ws://127.0.0.1:")
        {
            let port = rest.split('/').next().unwrap().parse().unwrap();
            std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
            return port;
        }
        line.clear();
    }
    panic!("chromium ended without opening its DevTools port");
}

/// The WebSocket path of the browser's first page, from its `/json/list`.
fn page_socket_path(port: u16) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(s, "GET /json/list HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    // The DevTools server keeps the connection open: read the head, then Content-Length.
    let mut reader = BufReader::new(s);
    let mut length = 0;
    let mut line = String::new();
    while reader.read_line(&mut line).unwrap() > 0 && line != "\r\n" {
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap();
            }
        }
        line.clear();
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).unwrap();
    let targets: Value = serde_json::from_slice(&body).unwrap();
    let page = targets
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == "page")
        .expect("a page target");
    let url = page["webSocketDebuggerUrl"].as_str().unwrap();
    let at = url.find("/devtools/").unwrap_or_else(|| panic!("{url}"));
    url[at..].to_string()
}

fn handshake(port: u16, path: &str) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n\
         Connection: Upgrade\r\nSec-WebSocket-Key: c29qb3VybmRhc2hib2FyZA==\r\n\
         Sec-WebSocket-Version: 13\r\n\r\n"
    )
    .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    s
}

/// One masked text frame (a client must mask what it sends).
fn send_text(s: &mut TcpStream, payload: &[u8]) {
    let mut frame = vec![0x81u8];
    match payload.len() {
        n if n < 126 => frame.push(0x80 | n as u8),
        n if n <= 0xffff => {
            frame.push(0x80 | 126);
            frame.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            frame.push(0x80 | 127);
            frame.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    let mask = [0x5a, 0x17, 0xc3, 0x9e];
    frame.extend_from_slice(&mask);
    frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    s.write_all(&frame).unwrap();
}

/// One whole message: its frames' payloads joined (control frames skipped).
fn read_message(s: &mut TcpStream) -> Vec<u8> {
    let mut message = Vec::new();
    loop {
        let mut head = [0u8; 2];
        s.read_exact(&mut head).unwrap();
        let len = match head[1] & 0x7f {
            126 => {
                let mut l = [0u8; 2];
                s.read_exact(&mut l).unwrap();
                u16::from_be_bytes(l) as usize
            }
            127 => {
                let mut l = [0u8; 8];
                s.read_exact(&mut l).unwrap();
                u64::from_be_bytes(l) as usize
            }
            n => n as usize,
        };
        let mut payload = vec![0u8; len];
        s.read_exact(&mut payload).unwrap();
        let opcode = head[0] & 0x0f;
        if opcode >= 0x8 {
            assert_ne!(opcode, 0x8, "the browser closed the DevTools socket");
            continue;
        }
        message.extend_from_slice(&payload);
        if head[0] & 0x80 != 0 {
            return message;
        }
    }
}
