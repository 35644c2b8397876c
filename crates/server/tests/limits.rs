//! What one connection may hold: its request head's time to arrive, and its body. Limits that
//! close a connection say why (counted by kind); ordinary keep-alive housekeeping is not abuse.
mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{builtin, start_with, MS};
use sojourn_server::{AbuseKind, AbuseNote, MAX_BODY};

const HEADER_TIMEOUT: Duration = Duration::from_millis(200);

/// A server with a short header timeout whose first-of-a-kind abuse notes the test can read.
async fn start() -> (common::Server, Arc<Mutex<Vec<AbuseNote>>>) {
    let notes = Arc::new(Mutex::new(Vec::new()));
    let sink = notes.clone();
    let server = start_with(builtin("healthy", &["healthy.baseline=1ms"]), |o| {
        o.header_timeout = HEADER_TIMEOUT;
        o.on_first_abuse = Some(Box::new(move |n| sink.lock().unwrap().push(n)));
    })
    .await;
    (server, notes)
}

#[tokio::test]
async fn a_keep_alive_connection_idle_past_the_header_timeout_is_closed_but_not_abuse() {
    let (server, notes) = start().await;
    let mut c = server.client().await;
    assert_eq!(c.get("/api").await.unwrap().status, 200);
    tokio::time::sleep(2 * HEADER_TIMEOUT).await;
    assert!(c.get("/api").await.is_err(), "closed while idle");

    let (summary, _) = server.stop().await;
    assert_eq!(summary.idle_keep_alive_closed, 1, "{summary:?}");
    assert_eq!(summary.abuse.total(), 0, "{summary:?}");
    assert!(notes.lock().unwrap().is_empty());
}

#[tokio::test]
async fn the_header_timeout_does_not_run_while_a_request_is_in_service() {
    let service = 3 * HEADER_TIMEOUT;
    let baseline = format!("healthy.baseline={}ms", service.as_millis());
    let server = start_with(builtin("healthy", &[&baseline]), |o| {
        o.header_timeout = HEADER_TIMEOUT;
    })
    .await;
    let mut c = server.client().await;
    assert_eq!(c.get("/api").await.unwrap().status, 200);
    assert_eq!(c.get("/api").await.unwrap().status, 200, "kept alive");

    let (summary, _) = server.stop().await;
    assert_eq!(summary.idle_keep_alive_closed, 0, "{summary:?}");
    assert_eq!(summary.abuse.total(), 0, "{summary:?}");
}

#[tokio::test]
async fn a_body_within_the_cap_is_read_and_the_connection_kept() {
    let (server, _) = start().await;
    let mut c = server.client().await;
    let body = vec![b'x'; MAX_BODY as usize];
    let head = format!(
        "POST /api HTTP/1.1\r\nhost: t\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    c.write_raw(head.as_bytes()).await.unwrap();
    c.write_raw(&body).await.unwrap();
    assert_eq!(c.read_reply().await.unwrap().status, 200);
    assert_eq!(c.get("/api").await.unwrap().status, 200, "kept alive");

    let (summary, _) = server.stop().await;
    assert_eq!(summary.abuse.total(), 0, "{summary:?}");
}

#[tokio::test]
async fn a_chunked_body_past_the_cap_is_answered_then_its_connection_closed() {
    let (server, notes) = start().await;
    let mut c = server.client().await;
    c.write_raw(b"POST /api HTTP/1.1\r\nhost: t\r\ntransfer-encoding: chunked\r\n\r\n")
        .await
        .unwrap();
    let chunk = [b"10000\r\n".as_slice(), &[b'x'; 1 << 16], b"\r\n"].concat();
    // Twice the cap, and no last chunk: the server must stop reading on its own (and may
    // close before the last of it is written).
    for _ in 0..2 * MAX_BODY / (1 << 16) {
        if c.write_raw(&chunk).await.is_err() {
            break;
        }
    }
    let reply = c.read_reply().await.unwrap();
    assert_eq!(
        (reply.status, reply.index),
        (200, Some(0)),
        "answered as /api"
    );
    tokio::time::sleep(10 * MS).await;
    assert!(c.get("/api").await.is_err(), "then closed");

    let (summary, truth) = server.stop().await;
    assert_eq!(summary.abuse.oversized_body, 1, "{summary:?}");
    assert_eq!(truth.len(), 1, "the request is in the truth log");
    let kinds: Vec<_> = notes.lock().unwrap().iter().map(|n| n.kind).collect();
    assert_eq!(kinds, [AbuseKind::OversizedBody]);
}

#[tokio::test]
async fn a_declared_body_past_the_cap_is_refused_unread_and_unnumbered() {
    let (server, _) = start().await;
    let mut c = server.client().await;
    let head = format!(
        "POST /api HTTP/1.1\r\nhost: t\r\ncontent-length: {}\r\n\r\n",
        MAX_BODY + 1
    );
    c.write_raw(head.as_bytes()).await.unwrap();
    assert_eq!(c.read_reply().await.unwrap().status, 413);

    let (summary, truth) = server.stop().await;
    assert_eq!(summary.abuse.oversized_body, 1, "{summary:?}");
    assert!(truth.is_empty(), "not a request to the system under test");
}
