//! gRPC unary and server-streaming calls, carried by the HTTP/2 transport
//! ([`crate::Http2Transport::grpc`], which reads answers with what is here): its stream slots,
//! pool, send stamps and failure classes are the same. What gRPC adds is here: the request
//! (a POST to `/pkg.Service/Method`, `content-type: application/grpc`, `te: trailers`, the
//! deadline as `grpc-timeout`, the message in a length-prefixed frame) and the answer's
//! mapping (the `grpc-status` trailer, or header for a trailers-only answer, is the outcome).
//!
//! The message itself comes from [`crate::grpc_proto`], encoded once for the run.
use std::time::Duration;

use http::HeaderMap;
use sojourn_core::{FailureClass, Outcome};
use url::Url;

use crate::http::HttpRequest;
use crate::transport::Answer;

/// One unary call, as the run sends it every time.
#[derive(Debug, Clone)]
pub struct GrpcCall {
    /// The server's origin: `http://HOST:PORT` for `grpc://`, `https://` for `grpcs://`.
    pub origin: Url,
    /// The method's path, `/pkg.Service/Method`.
    pub path: String,
    /// Custom metadata, `(key, value)`, sent as header fields.
    pub metadata: Vec<(String, String)>,
    /// The encoded request message (protobuf bytes, unframed).
    pub message: Vec<u8>,
    /// The deadline the server is told (`grpc-timeout`); the engine enforces it locally too.
    pub timeout: Duration,
}

impl GrpcCall {
    /// The HTTP/2 request that carries the call.
    pub fn request(&self) -> HttpRequest {
        let mut url = self.origin.clone();
        url.set_path(&self.path);
        let mut headers = vec![
            ("content-type".to_string(), "application/grpc".to_string()),
            // Required by the gRPC spec: it tells proxies the client reads trailers.
            ("te".to_string(), "trailers".to_string()),
            ("grpc-timeout".to_string(), timeout_value(self.timeout)),
        ];
        headers.extend(self.metadata.iter().cloned());
        HttpRequest {
            url,
            method: "POST".into(),
            headers,
            body: frame(&self.message),
        }
    }
}

/// A message in gRPC's length-prefixed framing: a compressed flag (0: not compressed), the
/// length as 4 bytes big-endian, then the message.
pub fn frame(message: &[u8]) -> Vec<u8> {
    let len = u32::try_from(message.len()).expect("a gRPC message is below 4 GiB");
    let mut out = Vec::with_capacity(5 + message.len());
    out.push(0);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// Counts the length-prefixed messages of an answer's body as its DATA frames arrive, without
/// decoding them: a frame may end inside a message's prefix or body, or hold several messages.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct MessageCounter {
    /// Bytes of the current 5-byte prefix seen so far (0 between messages).
    prefix: u8,
    /// The length read so far from the current prefix.
    len: u32,
    /// Bytes of the current message's body still to come.
    body: u64,
    /// Whole messages seen.
    pub messages: u64,
}

impl MessageCounter {
    /// Reads one DATA frame's bytes; returns how many messages it completed.
    pub fn feed(&mut self, mut data: &[u8]) -> u64 {
        let before = self.messages;
        while !data.is_empty() {
            if self.body > 0 {
                let take = self.body.min(data.len() as u64);
                self.body -= take;
                data = &data[take as usize..];
                if self.body == 0 {
                    self.messages += 1;
                }
                continue;
            }
            // The flag byte is skipped; the next four are the length, big-endian.
            if self.prefix > 0 {
                self.len = self.len << 8 | u32::from(data[0]);
            }
            self.prefix += 1;
            data = &data[1..];
            if self.prefix == 5 {
                self.prefix = 0;
                self.body = u64::from(std::mem::take(&mut self.len));
                if self.body == 0 {
                    self.messages += 1;
                }
            }
        }
        self.messages - before
    }

    /// Whether the body ended between messages (not inside a prefix or a message).
    pub fn whole(&self) -> bool {
        self.prefix == 0 && self.body == 0
    }
}

/// A deadline as `grpc-timeout` writes it: at most 8 digits and a unit. Whole milliseconds
/// (the usual `--timeout`) read as such (`500m`); otherwise the finest unit that fits, rounded
/// up so the server never gets less time than the client allows.
pub fn timeout_value(d: Duration) -> String {
    const MAX: u128 = 99_999_999;
    let ns = d.as_nanos();
    // Not `is_multiple_of`: rust-version is 1.85.
    if ns - ns / 1_000_000 * 1_000_000 == 0 && ns / 1_000_000 <= MAX {
        return format!("{}m", ns / 1_000_000);
    }
    let units: [(u128, char); 6] = [
        (1, 'n'),
        (1_000, 'u'),
        (1_000_000, 'm'),
        (1_000_000_000, 'S'),
        (60_000_000_000, 'M'),
        (3_600_000_000_000, 'H'),
    ];
    for (per, unit) in units {
        let n = ns.div_ceil(per);
        if n <= MAX {
            return format!("{n}{unit}");
        }
    }
    format!("{MAX}H")
}

/// A gRPC answer in the engine's terms. The HTTP status must be 200 (else it fails with the
/// HTTP class of its status, or `protocol` for another 2xx); then `grpc-status` 0 completes,
/// 1 to 16 fail as `grpc:NAME`, and a missing or unknown one is `protocol`. The trailers hold
/// it; a trailers-only answer (an error before any message) has it in its headers. The HTTP
/// status is the code counted per code, as for HTTP.
pub fn answer(status: u16, headers: &HeaderMap, trailers: Option<&HeaderMap>) -> Answer {
    let http = crate::http::answer(status);
    let outcome = match http.outcome {
        Outcome::Failed(_) => http.outcome,
        Outcome::Ok if status != 200 => Outcome::Failed(FailureClass::Protocol),
        Outcome::Ok => {
            let field = trailers
                .and_then(|t| t.get("grpc-status"))
                .or_else(|| headers.get("grpc-status"));
            outcome_of(field.and_then(|v| v.to_str().ok()))
        }
    };
    Answer {
        outcome,
        code: status,
    }
}

/// The outcome a `grpc-status` value stands for.
fn outcome_of(status: Option<&str>) -> Outcome {
    match status.map(|s| s.trim().parse::<u32>()) {
        Some(Ok(0)) => Outcome::Ok,
        Some(Ok(n)) => FailureClass::of_grpc_status(n)
            .map_or(Outcome::Failed(FailureClass::Protocol), Outcome::Failed),
        _ => Outcome::Failed(FailureClass::Protocol),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut m = HeaderMap::new();
        for (k, v) in pairs {
            m.insert(*k, http::HeaderValue::from_static(v));
        }
        m
    }

    #[test]
    fn a_message_is_framed_with_a_zero_flag_and_its_big_endian_length() {
        assert_eq!(frame(b"\x0a\x01x"), b"\0\0\0\0\x03\x0a\x01x");
        assert_eq!(frame(b""), [0u8; 5]);
        let big = vec![7u8; 0x0001_0203];
        let framed = frame(&big);
        assert_eq!(&framed[..5], &[0, 0, 0x01, 0x02, 0x03]);
        assert_eq!(framed.len(), 5 + big.len());
    }

    #[test]
    fn deadlines_are_written_in_at_most_eight_digits_rounded_up() {
        let ms = Duration::from_millis;
        assert_eq!(timeout_value(ms(500)), "500m");
        assert_eq!(timeout_value(ms(30_000)), "30000m");
        assert_eq!(timeout_value(Duration::from_micros(1_500)), "1500000n");
        assert_eq!(
            timeout_value(Duration::from_nanos(1_500_000_001)),
            "1500001u"
        );
        assert_eq!(timeout_value(Duration::from_secs(200_000)), "200000S");
        assert_eq!(
            timeout_value(Duration::from_secs(100_000_000 * 60)),
            "1666667H"
        );
    }

    #[test]
    fn the_call_is_a_post_to_the_method_with_grpc_headers_and_a_framed_body() {
        let call = GrpcCall {
            origin: "http://127.0.0.1:50051".parse().unwrap(),
            path: "/helloworld.Greeter/SayHello".into(),
            metadata: vec![("authorization".into(), "Bearer x".into())],
            message: b"\x0a\x01x".to_vec(),
            timeout: Duration::from_millis(250),
        };
        let r = call.request();
        assert_eq!(
            r.url.as_str(),
            "http://127.0.0.1:50051/helloworld.Greeter/SayHello"
        );
        assert_eq!(r.method, "POST");
        let get = |k: &str| {
            r.headers
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("content-type"), Some("application/grpc"));
        assert_eq!(get("te"), Some("trailers"));
        assert_eq!(get("grpc-timeout"), Some("250m"));
        assert_eq!(get("authorization"), Some("Bearer x"));
        assert_eq!(r.body, frame(b"\x0a\x01x"));
    }

    #[test]
    fn the_grpc_status_is_the_outcome_and_the_http_status_comes_first() {
        let ok = |o: Answer| o.outcome;
        let none = HeaderMap::new();
        let trailers = |s| fields(&[("grpc-status", s)]);
        assert_eq!(ok(answer(200, &none, Some(&trailers("0")))), Outcome::Ok);
        assert_eq!(
            ok(answer(200, &none, Some(&trailers("14")))),
            Outcome::Failed(FailureClass::GrpcUnavailable)
        );
        // Trailers-only: the status in the headers, no trailers.
        assert_eq!(
            ok(answer(200, &trailers("5"), None)),
            Outcome::Failed(FailureClass::GrpcNotFound)
        );
        // The trailers win over a header that says otherwise.
        assert_eq!(
            ok(answer(200, &trailers("5"), Some(&trailers("0")))),
            Outcome::Ok
        );
        let protocol = Outcome::Failed(FailureClass::Protocol);
        assert_eq!(ok(answer(200, &none, None)), protocol, "no grpc-status");
        assert_eq!(ok(answer(200, &none, Some(&trailers("17")))), protocol);
        assert_eq!(ok(answer(200, &none, Some(&trailers("x")))), protocol);
        assert_eq!(
            ok(answer(503, &none, Some(&trailers("0")))),
            Outcome::Failed(FailureClass::Http5xx),
            "a non-200 status fails as HTTP, whatever grpc-status says"
        );
        assert_eq!(ok(answer(204, &none, Some(&trailers("0")))), protocol);
        assert_eq!(answer(200, &none, Some(&trailers("0"))).code, 200);
    }

    #[test]
    fn messages_are_counted_across_data_frame_boundaries() {
        let one = frame(b"abcdef");
        let two = frame(b"xy");
        // A message split over two frames (inside its prefix, then inside its body).
        let mut c = MessageCounter::default();
        assert_eq!(c.feed(&one[..3]), 0);
        assert!(!c.whole());
        assert_eq!(c.feed(&one[3..8]), 0);
        assert_eq!(c.feed(&one[8..]), 1);
        assert!(c.whole());
        // Two messages in one frame, the second empty.
        let mut both = two.clone();
        both.extend_from_slice(&frame(b""));
        assert_eq!(c.feed(&both), 2);
        assert_eq!(c.messages, 3);
        // Byte by byte.
        let mut c = MessageCounter::default();
        let n: u64 = one.iter().chain(&two).map(|b| c.feed(&[*b])).sum();
        assert_eq!((n, c.messages), (2, 2));
        // An empty stream: no DATA at all, or an empty frame.
        let mut c = MessageCounter::default();
        assert_eq!(c.feed(&[]), 0);
        assert_eq!(c.messages, 0);
        assert!(c.whole());
        // A long message's length is read from all four bytes.
        let big = frame(&vec![1u8; 0x0001_0203]);
        let mut c = MessageCounter::default();
        assert_eq!(c.feed(&big[..big.len() - 1]), 0);
        assert_eq!(c.feed(&big[big.len() - 1..]), 1);
    }
}
