//! Clients that misbehave on purpose or by accident: what each kind is, what the server did
//! about it, and a count per kind. The first of each kind is reported as it happens (naming
//! the peer); the rest are only counted, so 10,000 idle connections make one line, not 10,000.
use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use crate::{AbuseCounts, MAX_BODY, MAX_HEAD};

/// A kind of abuse the server defends itself against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AbuseKind {
    /// Part of a request head arrived, but not all of it within the header timeout
    /// (slowloris). The connection was closed.
    SlowHeaders,
    /// A connection sent nothing at all within the header timeout. It was closed.
    Idle,
    /// A request head that is not HTTP/1.1 (garbage request line, bad `Content-Length`, …).
    /// Answered 400 where an answer makes sense, and closed.
    Malformed,
    /// A request head longer than [`MAX_HEAD`] bytes, or a URI too long to parse. Answered
    /// 431 (or 414) and closed.
    OversizedHead,
    /// A request body longer than [`MAX_BODY`]. A declared length is refused with 413 before a
    /// byte of it is read; a chunked body is read no further than the cap and its connection
    /// closed after the answer.
    OversizedBody,
}

impl AbuseKind {
    pub const ALL: [AbuseKind; 5] = [
        AbuseKind::SlowHeaders,
        AbuseKind::Idle,
        AbuseKind::Malformed,
        AbuseKind::OversizedHead,
        AbuseKind::OversizedBody,
    ];

    fn slot(self) -> usize {
        self as usize
    }

    /// What the summary calls them, plural.
    pub fn plural(self) -> &'static str {
        match self {
            AbuseKind::SlowHeaders => "slow request heads",
            AbuseKind::Idle => "idle connections",
            AbuseKind::Malformed => "malformed requests",
            AbuseKind::OversizedHead => "oversized heads",
            AbuseKind::OversizedBody => "oversized bodies",
        }
    }
}

/// The first abuse of its kind, for the operator. Displays as one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AbuseNote {
    pub kind: AbuseKind,
    pub peer: SocketAddr,
    /// The header timeout in force, which slow and idle connections ran into.
    pub header_timeout: Duration,
}

impl fmt::Display for AbuseNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let timeout = humantime::format_duration(self.header_timeout);
        write!(f, "abuse: {}: ", self.peer)?;
        match self.kind {
            AbuseKind::SlowHeaders => write!(
                f,
                "request head still incomplete after the {timeout} header timeout: closed"
            )?,
            AbuseKind::Idle => write!(
                f,
                "sent nothing within the {timeout} header timeout: closed"
            )?,
            AbuseKind::Malformed => write!(f, "malformed request: answered 400, closed")?,
            AbuseKind::OversizedHead => write!(
                f,
                "request head over {} KiB: answered 431, closed",
                MAX_HEAD / 1024
            )?,
            AbuseKind::OversizedBody => write!(
                f,
                "request body over {} MiB: read no further (413 if its length was declared), closed",
                MAX_BODY >> 20
            )?,
        }
        write!(
            f,
            "; further {} are counted, not logged",
            self.kind.plural()
        )
    }
}

/// Where the first note of each kind goes (see [`crate::ServeOptions::on_first_abuse`]).
pub type AbuseSink = Box<dyn Fn(AbuseNote) + Send + Sync>;

/// Counts abuse by kind, and hands the first of each kind to the sink.
pub(crate) struct AbuseLog {
    counts: [AtomicU64; AbuseKind::ALL.len()],
    sink: Option<AbuseSink>,
    header_timeout: Duration,
}

impl AbuseLog {
    pub(crate) fn new(sink: Option<AbuseSink>, header_timeout: Duration) -> AbuseLog {
        AbuseLog {
            counts: Default::default(),
            sink,
            header_timeout,
        }
    }

    pub(crate) fn note(&self, kind: AbuseKind, peer: SocketAddr) {
        let before = self.counts[kind.slot()].fetch_add(1, Relaxed);
        if let (0, Some(sink)) = (before, &self.sink) {
            sink(AbuseNote {
                kind,
                peer,
                header_timeout: self.header_timeout,
            });
        }
    }

    pub(crate) fn counts(&self) -> AbuseCounts {
        let get = |k: AbuseKind| self.counts[k.slot()].load(Relaxed);
        AbuseCounts {
            slow_headers: get(AbuseKind::SlowHeaders),
            idle: get(AbuseKind::Idle),
            malformed: get(AbuseKind::Malformed),
            oversized_head: get(AbuseKind::OversizedHead),
            oversized_body: get(AbuseKind::OversizedBody),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    #[test]
    fn only_the_first_of_each_kind_reaches_the_sink_but_all_are_counted() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let log = AbuseLog::new(
            Some(Box::new(move |n: AbuseNote| sink.lock().unwrap().push(n))),
            Duration::from_secs(1),
        );
        let peer: SocketAddr = "127.0.0.1:4000".parse().unwrap();
        for _ in 0..3 {
            log.note(AbuseKind::Idle, peer);
        }
        log.note(AbuseKind::Malformed, peer);
        let kinds: Vec<_> = seen.lock().unwrap().iter().map(|n| n.kind).collect();
        assert_eq!(kinds, [AbuseKind::Idle, AbuseKind::Malformed]);
        let c = log.counts();
        assert_eq!((c.idle, c.malformed, c.total()), (3, 1, 4));
    }

    #[test]
    fn a_note_names_the_peer_what_was_done_and_that_more_are_only_counted() {
        let note = AbuseNote {
            kind: AbuseKind::Idle,
            peer: "127.0.0.1:4000".parse().unwrap(),
            header_timeout: Duration::from_secs(60),
        };
        assert_eq!(
            note.to_string(),
            "abuse: 127.0.0.1:4000: sent nothing within the 1m header timeout: closed; \
             further idle connections are counted, not logged"
        );
    }
}
