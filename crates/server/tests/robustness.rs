//! Many connections, and clients that hang up at every stage: the server must keep answering,
//! see every request to its end, and hold nothing once the clients are gone.
mod common;

use std::time::Duration;

use common::{builtin, start, Client, MS};
use sojourn_scenario::truth::Outcome;
use tokio::net::TcpStream;

const CONNECTIONS: usize = 2_000;
/// Requests whose clients hang up while they are in service.
const HANG_UPS: usize = 600;
/// Connects in batches: the listen backlog is finite, and a SYN dropped by a full backlog
/// costs a one-second retransmit, which would only slow the test.
const BATCH: usize = 200;
const SERVICE: Duration = Duration::from_millis(300);

/// A connection that says nothing, or half a request head, and stays open.
async fn idle(addr: std::net::SocketAddr, half_head: bool) -> Client {
    let mut c = Client::connect(addr).await.unwrap();
    if half_head {
        c.write_raw(b"GET /api HTTP/1.1\r\nhost: te").await.unwrap();
    }
    c
}

/// A whole request, then a hang-up while it is in service.
async fn hang_up(addr: std::net::SocketAddr) {
    let mut c = Client::connect(addr).await.unwrap();
    c.write_raw(b"GET /api HTTP/1.1\r\nhost: test\r\n\r\n")
        .await
        .unwrap();
    tokio::time::sleep(20 * MS).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_connections_and_hang_ups_leave_nothing_behind() {
    // Client and server share this process: two descriptors per connection.
    let limit = rlimit::increase_nofile_limit(4 * (CONNECTIONS + HANG_UPS) as u64 + 1024).unwrap();
    assert!(
        limit >= 2 * (CONNECTIONS + HANG_UPS) as u64 + 512,
        "this test needs a descriptor limit of {}, the hard limit here is {limit}",
        2 * (CONNECTIONS + HANG_UPS) + 512
    );
    let server = start(builtin("healthy", &["healthy.baseline=300ms"])).await;
    let addr = server.addr;

    let mut held = Vec::with_capacity(CONNECTIONS);
    for batch in 0..CONNECTIONS / BATCH {
        let opening: Vec<_> = (0..BATCH)
            .map(|i| tokio::spawn(idle(addr, i % 2 == 1)))
            .collect();
        for o in opening {
            held.push(o.await.unwrap());
        }
        assert_eq!(held.len(), (batch + 1) * BATCH);
    }
    // With all of them open, clients hang up mid-request, and a newcomer is still served.
    for _ in 0..HANG_UPS / BATCH {
        let leaving: Vec<_> = (0..BATCH).map(|_| tokio::spawn(hang_up(addr))).collect();
        for l in leaving {
            l.await.unwrap();
        }
    }
    let mut probe = server.client().await;
    assert_eq!(probe.get("/healthy").await.unwrap().status, 200);
    drop(held);
    tokio::time::sleep(SERVICE + 100 * MS).await;

    // Still answering, on a new connection and on the old one.
    assert_eq!(server.client().await.get("/api").await.unwrap().status, 200);
    assert_eq!(probe.get("/api").await.unwrap().status, 200);
    // A connection that is reset rather than closed is no worse.
    let rst = TcpStream::connect(addr).await.unwrap();
    rst.set_zero_linger().unwrap();
    drop(rst);

    let (summary, truth) = server.stop().await;
    assert_eq!(
        summary.cut_off, 0,
        "no connection or request was left hanging: {summary:?}"
    );
    assert!(summary.peak_connections > CONNECTIONS as u64, "{summary:?}");
    assert_eq!(summary.api.abandoned, HANG_UPS as u64, "{summary:?}");
    assert_eq!(summary.api.ok, 2);
    let abandoned = truth
        .iter()
        .filter(|r| r.outcome == Outcome::Abandoned)
        .count();
    assert_eq!(
        abandoned, HANG_UPS,
        "every hung-up request is in the truth log"
    );
    // The server finished the work it had started: departures on schedule, not cut short.
    assert!(truth
        .iter()
        .all(|r| r.departure >= r.due && r.due - r.start == SERVICE));
}
