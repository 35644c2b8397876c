//! Headless Chromium driven over the DevTools protocol, for tests of live pages: a page is
//! opened, scripts evaluated in it, and console errors and uncaught exceptions collected.
//! The protocol's JSON messages go over a WebSocket (the `tungstenite` crate) to the browser's
//! own endpoint, and to the first page through a flattened session attached to it.
use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// A browser with one page, killed when dropped.
pub struct Browser {
    child: Child,
    socket: tungstenite::WebSocket<TcpStream>,
    /// The page's session on the browser's socket.
    session: Option<String>,
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
        let socket = connect(&devtools_url(stderr));
        let mut browser = Browser {
            child: killer.take(),
            socket,
            session: None,
            next_id: 0,
            errors: Vec::new(),
        };
        let targets = browser.call("Target.getTargets", json!({}));
        let page = targets["targetInfos"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["type"] == "page")
            .unwrap_or_else(|| panic!("no page target: {targets}"))["targetId"]
            .clone();
        let attached = browser.call(
            "Target.attachToTarget",
            json!({"targetId": page, "flatten": true}),
        );
        browser.session = Some(attached["sessionId"].as_str().unwrap().to_string());
        for domain in ["Page.enable", "Runtime.enable", "Log.enable"] {
            browser.call(domain, json!({}));
        }
        browser
    }

    /// Sends a command (to the page, once attached) and returns its result, noting the events
    /// that came before it.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = &self.session {
            message["sessionId"] = json!(session);
        }
        let message = message.to_string();
        if std::env::var_os("SOJOURN_CDP_TRACE").is_some() {
            eprintln!("cdp> {message}");
        }
        self.socket
            .send(tungstenite::Message::text(message))
            .expect("writing to the DevTools socket");
        loop {
            let reply = self.read();
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

    /// The next JSON message from the browser (pings are answered by the socket itself).
    fn read(&mut self) -> Value {
        loop {
            match self.socket.read().expect("reading the DevTools socket") {
                tungstenite::Message::Text(text) => return serde_json::from_str(&text).unwrap(),
                tungstenite::Message::Close(frame) => {
                    panic!("the browser closed the DevTools socket: {frame:?}")
                }
                _ => continue,
            }
        }
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

/// Reads Chromium's stderr up to `DevTools listening on ws://127.0.0.1:PORT/devtools/browser/…`
/// and returns that URL; the rest is drained on a thread.
fn devtools_url(stderr: std::process::ChildStderr) -> String {
    let mut stderr = BufReader::new(stderr);
    let mut line = String::new();
    while stderr.read_line(&mut line).unwrap() > 0 {
        if let Some(url) = line.trim().strip_prefix("DevTools listening on ") {
            let url = url.to_string();
            std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
            return url;
        }
        line.clear();
    }
    panic!("chromium ended without opening its DevTools port");
}

/// The browser's DevTools WebSocket at `url`, over a loopback connection that gives up on a
/// browser silent for 30 s rather than hang the test.
fn connect(url: &str) -> tungstenite::WebSocket<TcpStream> {
    let authority = url
        .strip_prefix("ws://")
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("not a ws:// URL: {url}"));
    let stream = TcpStream::connect(authority).expect("connecting to the DevTools port");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let (socket, _) = tungstenite::client(url, stream).expect("the DevTools handshake");
    socket
}
