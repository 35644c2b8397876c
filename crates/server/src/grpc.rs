//! The scenario as gRPC: any unary call is the system under test, answered with an empty
//! message (a 5-byte frame of length 0) and `grpc-status` in the trailers, at the instant the
//! scenario releases it, exactly as `/api` is answered over HTTP.
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame};
use hyper::header::{HeaderMap, HeaderValue, CONTENT_TYPE};
use hyper::{Request, Response};

use crate::INDEX_HEADER;

/// An empty protobuf message, framed: not compressed, length 0.
const EMPTY_MESSAGE: &[u8] = &[0, 0, 0, 0, 0];

/// Whether a request is a gRPC call: its content type is `application/grpc` or one of its
/// `+proto`/`+json` forms.
pub(crate) fn is_call<B>(req: &Request<B>) -> bool {
    req.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == "application/grpc" || v.starts_with("application/grpc+"))
}

/// The gRPC code a scenario's HTTP status becomes: the table of gRPC's own
/// `doc/http-grpc-status-mapping.md`, which is what a gRPC client makes of a proxy's HTTP
/// status, so a scenario's 503 means UNAVAILABLE whichever protocol carries it.
pub fn grpc_code(status: u16) -> u8 {
    match status {
        200 => 0,                    // OK
        400 => 13,                   // INTERNAL
        401 => 16,                   // UNAUTHENTICATED
        403 => 7,                    // PERMISSION_DENIED
        404 => 12,                   // UNIMPLEMENTED
        429 | 502 | 503 | 504 => 14, // UNAVAILABLE
        _ => 2,                      // UNKNOWN
    }
}

/// A call's answer for the scenario's `status`: HTTP 200 always (gRPC says how it went in the
/// trailers), the empty message only when the call succeeded.
pub(crate) fn answer(status: u16, index: u64) -> Response<GrpcBody> {
    let code = grpc_code(status);
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from(u16::from(code)));
    if code != 0 {
        let message = format!("the scenario answered HTTP {status}");
        trailers.insert(
            "grpc-message",
            HeaderValue::from_str(&message).expect("ASCII"),
        );
    }
    let body = GrpcBody {
        message: (code == 0).then(|| Bytes::from_static(EMPTY_MESSAGE)),
        trailers: Some(trailers),
    };
    let mut r = Response::new(body);
    let headers = r.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    headers.insert(INDEX_HEADER, HeaderValue::from(index));
    r
}

/// A gRPC response body: at most one message, then the trailers.
pub(crate) struct GrpcBody {
    message: Option<Bytes>,
    trailers: Option<HeaderMap>,
}

impl Body for GrpcBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        if let Some(message) = this.message.take() {
            return Poll::Ready(Some(Ok(Frame::data(message))));
        }
        Poll::Ready(this.trailers.take().map(|t| Ok(Frame::trailers(t))))
    }

    fn is_end_stream(&self) -> bool {
        self.message.is_none() && self.trailers.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[test]
    fn statuses_map_to_the_grpc_codes_of_the_published_table() {
        assert_eq!(grpc_code(200), 0);
        assert_eq!(grpc_code(503), 14);
        assert_eq!(grpc_code(429), 14);
        assert_eq!(grpc_code(404), 12);
        assert_eq!(grpc_code(500), 2);
    }

    #[tokio::test]
    async fn an_ok_answer_is_one_empty_message_then_status_0() {
        let r = answer(200, 7);
        assert_eq!(r.headers()[CONTENT_TYPE], "application/grpc");
        assert_eq!(r.headers()[INDEX_HEADER], "7");
        let collected = r.into_body().collect().await.unwrap();
        assert_eq!(collected.trailers().unwrap()["grpc-status"], "0");
        assert_eq!(collected.to_bytes().as_ref(), EMPTY_MESSAGE);
    }

    #[tokio::test]
    async fn a_failed_answer_has_no_message_and_says_why() {
        let collected = answer(503, 1).into_body().collect().await.unwrap();
        let trailers = collected.trailers().unwrap().clone();
        assert_eq!(trailers["grpc-status"], "14");
        assert_eq!(trailers["grpc-message"], "the scenario answered HTTP 503");
        assert!(collected.to_bytes().is_empty());
    }
}
