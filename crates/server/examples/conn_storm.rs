//! A blunt client for `bench/serve-capacity.sh`: many connections at once against a local
//! `sojourn serve`. Not a load generator (that is `sojourn run`); it only asks "does the server
//! hold up?".
//!
//! ```text
//! conn_storm ADDR hold N          # N connections, one /api request each in flight at once
//! conn_storm ADDR hangup N        # N connections that send /api and hang up 20 ms later
//! conn_storm ADDR loop C SECONDS  # C keep-alive connections in closed loop; prints req/s
//! ```
//! Addresses must be on 127.0.0.1: this tool refuses anything else.
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const REQUEST: &[u8] = b"GET /api HTTP/1.1\r\nhost: storm\r\n\r\n";
const BATCH: usize = 500;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: conn_storm 127.0.0.1:PORT hold N | hangup N | loop C SECONDS";
    let addr: SocketAddr = args.first().and_then(|a| a.parse().ok()).expect(usage);
    assert!(
        addr.ip().is_loopback(),
        "conn_storm only targets loopback addresses"
    );
    let n: usize = args.get(2).and_then(|a| a.parse().ok()).expect(usage);
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    let started = Instant::now();
    match args[1].as_str() {
        "hold" => hold(addr, n).await,
        "hangup" => hangup(addr, n).await,
        "loop" => {
            let secs: u64 = args.get(3).and_then(|a| a.parse().ok()).expect(usage);
            closed_loop(addr, n, Duration::from_secs(secs)).await
        }
        _ => panic!("{usage}"),
    }
    eprintln!("done in {:.2?}", started.elapsed());
}

/// Reads one response: the head, then `content-length` bytes. Returns the status.
async fn read_response(s: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<u16> {
    buf.clear();
    let mut chunk = [0u8; 1024];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let status = head.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while buf.len() < end + 4 + length {
                let n = s.read(&mut chunk).await?;
                if n == 0 {
                    return Err(std::io::ErrorKind::UnexpectedEof.into());
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            return Ok(status);
        }
        let n = s.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Opens `n` connections in batches, each sending one request, then reads every response.
async fn hold(addr: SocketAddr, n: usize) {
    let mut open = Vec::with_capacity(n);
    let mut failed = 0;
    for start in (0..n).step_by(BATCH) {
        let batch: Vec<_> = (start..n.min(start + BATCH))
            .map(|_| {
                tokio::spawn(async move {
                    let mut s = TcpStream::connect(addr).await?;
                    s.write_all(REQUEST).await?;
                    Ok::<_, std::io::Error>(s)
                })
            })
            .collect();
        for b in batch {
            match b.await.unwrap() {
                Ok(s) => open.push(s),
                Err(_) => failed += 1,
            }
        }
    }
    println!(
        "open {} connections ({failed} failed to connect)",
        open.len()
    );
    let readers: Vec<_> = open
        .into_iter()
        .map(|mut s| tokio::spawn(async move { read_response(&mut s, &mut Vec::new()).await }))
        .collect();
    let mut ok = 0;
    for r in readers {
        if matches!(r.await.unwrap(), Ok(200)) {
            ok += 1;
        }
    }
    println!("answered 200: {ok} of {n}");
}

/// `n` clients that send a request and hang up before the answer.
async fn hangup(addr: SocketAddr, n: usize) {
    let mut sent = 0;
    for start in (0..n).step_by(BATCH) {
        let batch: Vec<_> = (start..n.min(start + BATCH))
            .map(|_| {
                tokio::spawn(async move {
                    let mut s = TcpStream::connect(addr).await?;
                    s.write_all(REQUEST).await?;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    Ok::<_, std::io::Error>(())
                })
            })
            .collect();
        for b in batch {
            sent += usize::from(b.await.unwrap().is_ok());
        }
    }
    println!("hung up on {sent} requests");
}

/// `c` connections sending back to back for `run`; prints the rate achieved.
async fn closed_loop(addr: SocketAddr, c: usize, run: Duration) {
    let until = Instant::now() + run;
    let loops: Vec<_> = (0..c)
        .map(|_| {
            tokio::spawn(async move {
                let mut s = TcpStream::connect(addr).await.unwrap();
                s.set_nodelay(true).unwrap();
                let (mut buf, mut n) = (Vec::new(), 0u64);
                while Instant::now() < until {
                    s.write_all(REQUEST).await.unwrap();
                    read_response(&mut s, &mut buf).await.unwrap();
                    n += 1;
                }
                n
            })
        })
        .collect();
    let mut total = 0;
    for l in loops {
        total += l.await.unwrap();
    }
    println!(
        "{total} requests in {run:?}: {:.0} req/s",
        total as f64 / run.as_secs_f64()
    );
}
