//! What a request *is*. The dispatcher knows only this seam: open a connection, and exchange
//! one request on it. HTTP/1.1 is one transport; an in-process async function is another, so
//! code can be driven open-loop without a network (and tests can drive the engine in virtual
//! time).
use std::cell::Cell;
use std::future::Future;
use std::rc::Rc;

use sojourn_core::{FailureClass, Outcome};
use tokio::time::Instant;

/// Why an exchange did not produce an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExchangeError {
    /// The connection was closed by the peer before any byte of the answer arrived, on a
    /// connection that had already served requests: a stale keep-alive connection. The request
    /// may be retried once on a fresh connection.
    Stale,
    /// Any other failure, by class.
    Failed(FailureClass),
}

/// A source of connections. Cloned once per worker thread.
pub trait Transport: Clone + Send + 'static {
    type Conn: Connection;

    /// Opens one connection.
    fn connect(&self) -> impl Future<Output = Result<Self::Conn, FailureClass>>;
}

/// One connection: one exchange at a time.
pub trait Connection: 'static {
    /// Sends one request and reads its whole answer. Must set `sent` to the moment the first
    /// byte is handed to the socket (or to the function), before any await that could stall.
    fn exchange(
        &mut self,
        sent: &Cell<Option<Instant>>,
    ) -> impl Future<Output = Result<Outcome, ExchangeError>>;

    /// Whether the connection can carry another exchange (keep-alive).
    fn reusable(&self) -> bool;
}

/// An async function as a transport: each call is one request. Returns an HTTP-like status.
#[derive(Clone)]
pub struct FnTransport<F> {
    call: F,
}

impl<F, Fut> FnTransport<F>
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<u16, FailureClass>> + 'static,
{
    pub fn new(call: F) -> Self {
        FnTransport { call }
    }
}

impl<F, Fut> Transport for FnTransport<F>
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<u16, FailureClass>> + 'static,
{
    type Conn = FnConnection<F>;

    async fn connect(&self) -> Result<Self::Conn, FailureClass> {
        Ok(FnConnection {
            call: Rc::new(self.call.clone()),
        })
    }
}

pub struct FnConnection<F> {
    call: Rc<F>,
}

impl<F, Fut> Connection for FnConnection<F>
where
    F: Fn() -> Fut + 'static,
    Fut: Future<Output = Result<u16, FailureClass>> + 'static,
{
    async fn exchange(&mut self, sent: &Cell<Option<Instant>>) -> Result<Outcome, ExchangeError> {
        sent.set(Some(Instant::now()));
        match (self.call)().await {
            Ok(status) => Ok(Outcome::of_status(status)),
            Err(class) => Err(ExchangeError::Failed(class)),
        }
    }

    fn reusable(&self) -> bool {
        true
    }
}
