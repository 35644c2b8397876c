//! What a request *is*. The dispatcher knows only this seam: open a connection, and exchange
//! one request on it. HTTP/1.1 is one transport; an in-process async function is another, so
//! code can be driven open-loop without a network (and tests can drive the engine in virtual
//! time).
//!
//! Nothing here knows a protocol. A transport turns its protocol's answer into an [`Answer`]:
//! the outcome the engine counts, and the protocol's own status code, which the result counts
//! per code. HTTP's mapping lives with the HTTP transports ([`crate::http::answer`]).
use std::cell::{Cell, Ref, RefCell, RefMut};
use std::future::Future;

use sojourn_core::{FailureClass, Outcome};
use tokio::time::Instant;

/// Why an exchange did not produce an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExchangeError {
    /// The server did not process the request, and said so or could not have: an HTTP/1.1
    /// keep-alive connection closed before any byte of the answer, on a connection that had
    /// already served requests (a stale connection), or an HTTP/2 stream refused by GOAWAY or
    /// REFUSED_STREAM. It may be sent once more on a fresh connection; if it is not, it fails
    /// with this class.
    Unprocessed(FailureClass),
    /// Any other failure, by class.
    Failed(FailureClass),
}

/// A source of connections. Cloned once per worker thread.
pub trait Transport: Clone + Send + 'static {
    type Conn: Connection;

    /// Opens one connection.
    fn connect(&self) -> impl Future<Output = Result<Self::Conn, FailureClass>>;

    /// Journeys: encodes a request built at run time (a rendered step) into `out`, which
    /// [`Exchange::own_request`] then sends in place of a fixed one. Transports of fixed
    /// requests only (in-process calls) refuse, as `error`.
    fn encode(&self, _req: &StepRequest, _out: &mut Vec<u8>) -> Result<(), FailureClass> {
        Err(FailureClass::Error)
    }
}

/// A request built at run time: a journey's step, rendered.
#[derive(Debug, Clone, Copy)]
pub struct StepRequest<'a> {
    pub method: &'a str,
    /// A path (with its query) on the run's origin, or an absolute URL of that origin.
    pub url: &'a str,
    pub headers: &'a [(String, String)],
    pub body: &'a [u8],
}

/// The most of an answer's body kept for a journey's checks and extractions; past it the body
/// is read and dropped, and [`Kept::truncated`] says so.
pub const MAX_KEPT_BODY: usize = 1024 * 1024;

/// What a journey's step needs of its answer beyond the status: the header fields and the body
/// (up to [`MAX_KEPT_BODY`], and only when the step reads it). Reused from exchange to exchange.
#[derive(Debug)]
pub struct Kept {
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
    /// The body was longer than the bytes kept: `body` holds its start.
    pub truncated: bool,
    /// The most body bytes to keep: [`MAX_KEPT_BODY`], or 0 for a step that reads no body (a
    /// thousand journeys in flight then hold no bodies).
    pub limit: usize,
}

impl Default for Kept {
    fn default() -> Kept {
        Kept {
            headers: Vec::new(),
            body: Vec::new(),
            truncated: false,
            limit: MAX_KEPT_BODY,
        }
    }
}

impl Kept {
    fn clear(&mut self, limit: usize) {
        self.headers.clear();
        self.body.clear();
        self.truncated = false;
        self.limit = limit;
    }

    /// Appends body bytes, up to the limit.
    pub fn extend_body(&mut self, bytes: &[u8]) {
        let room = self.limit.saturating_sub(self.body.len());
        self.body.extend_from_slice(&bytes[..bytes.len().min(room)]);
        self.truncated |= bytes.len() > room;
    }
}

/// A protocol's answer in the engine's terms: a success or a failure of its class, and the
/// protocol's own status code (an HTTP status), which the result counts per code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    pub outcome: Outcome,
    pub code: u16,
}

/// One request being exchanged: which of the transport's requests to send, and the stamps the
/// connection sets on it.
#[derive(Debug, Default)]
pub struct Exchange {
    target: Cell<usize>,
    sent: Cell<Option<Instant>>,
    code: Cell<Option<u16>>,
    /// Server-streaming calls: when the answer's first message arrived, and how many came.
    /// Taken (and so cleared) by [`Exchange::take_stream`].
    first_message: Cell<Option<Instant>>,
    messages: Cell<u64>,
    /// Journeys: this exchange's own encoded request, sent in place of `target`'s.
    own: RefCell<Vec<u8>>,
    has_own: Cell<bool>,
    /// Journeys: the answer's header fields and body, kept when `keeping`.
    kept: RefCell<Kept>,
    keeping: Cell<bool>,
}

impl Exchange {
    /// Which of the transport's requests to send (`--targets`); 0 when there is one.
    pub fn target(&self) -> usize {
        self.target.get()
    }

    /// The request's first byte is being handed to the socket (or to the function) now.
    pub fn mark_sent(&self) {
        self.sent.set(Some(Instant::now()));
    }

    /// Moves the send stamp to `at`, when the transport learns later when the request really
    /// left (an HTTP/2 frame queued before the connection wrote it).
    pub fn sent_at(&self, at: Instant) {
        self.sent.set(Some(at));
    }

    pub fn sent(&self) -> Option<Instant> {
        self.sent.get()
    }

    /// The protocol answered: its code is kept for the result's per-code counts, and its
    /// outcome is the request's.
    pub fn answered(&self, answer: Answer) -> Outcome {
        self.code.set(Some(answer.code));
        answer.outcome
    }

    /// A server-streaming answer's first message arrived now.
    pub fn first_message(&self) {
        self.first_message.set(Some(Instant::now()));
    }

    /// A server-streaming answer carried `n` messages.
    pub fn messages(&self, n: u64) {
        self.messages.set(n);
    }

    /// The streaming answer's first-message time and message count, cleared for the next
    /// request; `(None, 0)` for any other answer.
    pub fn take_stream(&self) -> (Option<Instant>, u64) {
        (self.first_message.take(), self.messages.take())
    }

    /// The answer's status code, once the protocol answered.
    pub fn code(&self) -> Option<u16> {
        self.code.get()
    }

    /// Ready for a new request: no stamps yet.
    pub(crate) fn begin(&self, target: usize) {
        self.target.set(target);
        self.sent.set(None);
        self.code.set(None);
        self.has_own.set(false);
        self.keeping.set(false);
    }

    /// Journeys: a request of this exchange's own, encoded into the buffer `encode` is given
    /// (by the transport's [`Transport::encode`]); the answer's headers are kept, and its body
    /// when `body` says the step reads it.
    pub(crate) fn begin_own(
        &self,
        body: bool,
        encode: impl FnOnce(&mut Vec<u8>) -> Result<(), FailureClass>,
    ) -> Result<(), FailureClass> {
        self.begin(0);
        let mut own = self.own.borrow_mut();
        own.clear();
        encode(&mut own)?;
        self.has_own.set(true);
        self.keeping.set(true);
        let limit = if body { MAX_KEPT_BODY } else { 0 };
        self.kept.borrow_mut().clear(limit);
        Ok(())
    }

    /// The request to send in place of a fixed one, if this exchange has its own.
    pub fn own_request(&self) -> Option<Ref<'_, [u8]>> {
        self.has_own
            .get()
            .then(|| Ref::map(self.own.borrow(), |v| v.as_slice()))
    }

    /// Where the answer's headers and body go, if they are to be kept.
    pub fn keep(&self) -> Option<RefMut<'_, Kept>> {
        self.keeping.get().then(|| self.kept.borrow_mut())
    }

    /// What was kept of the last answer.
    pub fn kept(&self) -> Ref<'_, Kept> {
        self.kept.borrow()
    }

    /// Keeps the first attempt's send stamp across a retry: the reconnect counts against the
    /// request, not in its favour.
    pub(crate) fn restore_sent(&self, first: Option<Instant>) {
        if first.is_some() {
            self.sent.set(first);
        }
    }
}

/// One connection (or one HTTP/2 stream slot): one exchange at a time.
pub trait Connection: 'static {
    /// Sends request `ex.target()` and reads its whole answer. Must call `ex.mark_sent()` the
    /// moment the first byte is handed to the socket (or to the function), before any await
    /// that could stall, and `ex.answered(answer)` when the protocol answered.
    fn exchange(&mut self, ex: &Exchange) -> impl Future<Output = Result<Outcome, ExchangeError>>;

    /// Whether the connection can carry another exchange (keep-alive).
    fn reusable(&self) -> bool;
}
