//! Property tests of the response reader: whatever bytes a server sends, in whatever pieces,
//! the reader never panics, always ends, keeps its buffer bounded, and reads every valid
//! answer exactly. `PROPTEST_CASES=1000000` runs a long campaign (docs/reliability.md).
use bytes::BytesMut;
use proptest::prelude::*;
use tokio::io::{duplex, AsyncReadExt, AsyncWriteExt};

use super::{round_trip, Broken, MAX_HEAD_BYTES};

/// The most a buffer may hold whatever the server sends: the head limit plus a few reads.
const BUFFER_BOUND: usize = 2 * MAX_HEAD_BYTES + 16 * 1024;

type Answer = Result<u16, &'static str>;

/// Plays `answers` to the reader, each after its request arrives, in pieces cut at `cuts`,
/// then closes. Returns what each exchange read and the buffer's final capacity.
fn play(answers: Vec<Vec<u8>>, cuts: Vec<usize>) -> (Vec<Answer>, usize) {
    let n = answers.len().max(1);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let (mut client, mut server) = duplex(16 * 1024);
        tokio::spawn(async move {
            for script in answers {
                let mut request = [0u8; 64];
                if !matches!(server.read(&mut request).await, Ok(n) if n > 0) {
                    return;
                }
                if write_in_pieces(&mut server, &script, &cuts).await.is_err() {
                    return;
                }
            }
            let _ = server.shutdown().await;
        });
        let mut buf = BytesMut::new();
        let mut answers = Vec::new();
        for _ in 0..n {
            let answer = match round_trip(
                &mut client,
                b"GET / HTTP/1.1\r\n\r\n",
                &mut buf,
                false,
                None,
            )
            .await
            {
                Ok(head) => Ok(head.status),
                Err(Broken::BeforeAnswer) => Err("before"),
                Err(Broken::Io) => Err("io"),
                Err(Broken::Protocol) => Err("protocol"),
            };
            let failed = answer.is_err();
            answers.push(answer);
            if failed {
                break;
            }
        }
        (answers, buf.capacity())
    })
}

async fn write_in_pieces(
    server: &mut tokio::io::DuplexStream,
    script: &[u8],
    cuts: &[usize],
) -> std::io::Result<()> {
    let mut ends: Vec<usize> = cuts.iter().map(|c| c % (script.len() + 1)).collect();
    ends.sort_unstable();
    ends.push(script.len());
    let mut at = 0;
    for end in ends {
        if end > at {
            server.write_all(&script[at..end]).await?;
            at = end;
        }
    }
    Ok(())
}

/// How a generated answer frames its body.
#[derive(Debug, Clone, Copy)]
enum Framing {
    Length,
    /// Chunks of these sizes (cycled), with or without trailers.
    Chunked(usize, bool),
    /// HTTP/1.0, body to EOF: only ever the last answer.
    UntilClose,
}

#[derive(Debug, Clone)]
struct Answered {
    status: u16,
    interim: bool,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    framing: Framing,
}

impl Answered {
    fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if self.interim {
            out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
        }
        let version = match self.framing {
            Framing::UntilClose => "1.0",
            _ => "1.1",
        };
        out.extend_from_slice(format!("HTTP/{version} {} Whatever\r\n", self.status).as_bytes());
        for (name, value) in &self.headers {
            out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
        }
        if matches!(self.status, 204 | 304) {
            // No body, whatever the framing headers would say.
            out.extend_from_slice(b"\r\n");
            return out;
        }
        let body = &self.body[..];
        match self.framing {
            Framing::Length => {
                out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
                out.extend_from_slice(body);
            }
            Framing::Chunked(size, trailers) => {
                out.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
                for chunk in body.chunks(size.max(1)) {
                    out.extend_from_slice(format!("{:x};ext=1\r\n", chunk.len()).as_bytes());
                    out.extend_from_slice(chunk);
                    out.extend_from_slice(b"\r\n");
                }
                out.extend_from_slice(b"0\r\n");
                if trailers {
                    out.extend_from_slice(b"X-Trailer: yes\r\n");
                }
                out.extend_from_slice(b"\r\n");
            }
            Framing::UntilClose => {
                out.extend_from_slice(b"\r\n");
                out.extend_from_slice(body);
            }
        }
        out
    }
}

fn token() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop::sample::select(b"abcdefghijklmnopqrstuvwxyz-0123456789".to_vec()),
        1..12,
    )
    .prop_map(|v| String::from_utf8(v).unwrap())
}

fn answered(keep_alive: bool) -> impl Strategy<Value = Answered> {
    let framing = if keep_alive {
        prop_oneof![
            Just(Framing::Length),
            (1usize..64, any::<bool>()).prop_map(|(s, t)| Framing::Chunked(s, t)),
        ]
        .boxed()
    } else {
        Just(Framing::UntilClose).boxed()
    };
    (
        prop_oneof![200u16..=599, Just(204), Just(304)],
        any::<bool>(),
        proptest::collection::vec((token(), token()), 0..16),
        proptest::collection::vec(any::<u8>(), 0..2048),
        framing,
    )
        .prop_map(|(status, interim, headers, body, framing)| Answered {
            status,
            interim,
            // Framing and connection headers are the generator's to set.
            headers: headers
                .into_iter()
                .filter(|(n, _)| {
                    !["content-length", "transfer-encoding", "connection"].contains(&n.as_str())
                })
                .collect(),
            body,
            framing,
        })
}

fn cuts() -> impl Strategy<Value = Vec<usize>> {
    proptest::collection::vec(any::<usize>(), 0..24)
}

proptest! {
    /// Any bytes at all: no panic, an end, a bounded buffer.
    #[test]
    fn arbitrary_bytes_never_panic_and_stay_bounded(
        script in proptest::collection::vec(any::<u8>(), 0..8192),
        cuts in cuts(),
    ) {
        let (_, capacity) = play(vec![script], cuts);
        prop_assert!(capacity <= BUFFER_BOUND, "buffer grew to {capacity}");
    }

    /// Valid keep-alive answers, back to back and cut anywhere, are each read exactly.
    #[test]
    fn valid_answers_are_read_exactly_however_they_are_cut(
        first in answered(true),
        second in answered(true),
        last in answered(false),
        cuts in cuts(),
    ) {
        let script = vec![first.bytes(), second.bytes(), last.bytes()];
        let (answers, _) = play(script, cuts);
        prop_assert_eq!(answers, vec![Ok(first.status), Ok(second.status), Ok(last.status)]);
    }

    /// A framed answer cut short is never taken for a whole one.
    #[test]
    fn a_framed_answer_cut_short_is_a_failure(
        answer in answered(true),
        keep in any::<prop::sample::Index>(),
        cuts in cuts(),
    ) {
        let whole = answer.bytes();
        let short = whole[..keep.index(whole.len())].to_vec();
        let (answers, _) = play(vec![short], cuts);
        prop_assert_eq!(answers.len(), 1);
        prop_assert!(answers[0].is_err(), "{:?} from a cut answer", answers[0]);
    }

    /// A valid answer with bytes flipped, inserted or removed: no panic, an end, bounded.
    #[test]
    fn mutated_answers_never_panic(
        answer in answered(true),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..8),
        cuts in cuts(),
    ) {
        let mut script = answer.bytes();
        for (at, byte, how) in edits {
            let i = at.index(script.len() + 1);
            match how {
                0 if i < script.len() => script[i] = byte,
                1 => script.insert(i, byte),
                _ if i < script.len() => { script.remove(i); }
                _ => {}
            }
        }
        let (_, capacity) = play(vec![script], cuts);
        prop_assert!(capacity <= BUFFER_BOUND, "buffer grew to {capacity}");
    }
}
