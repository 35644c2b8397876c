//! In-process code as the engine's transport: an async function called on the worker's own
//! runtime, or a blocking one handed to a thread of its own.
use std::future::Future;
use std::sync::Arc;

use sojourn_core::{FailureClass, Outcome};
use sojourn_engine::{Connection, Exchange, ExchangeError, Transport};

/// What a call returned, as a success or a failure. Implemented for `()`, `bool` (true is a
/// success) and any `Result`, so a function under test can be driven as it is.
///
/// ```
/// use sojourn::CallResult;
/// assert!(().succeeded());
/// assert!(!false.succeeded());
/// assert!(!Err::<(), &str>("full").succeeded());
/// ```
pub trait CallResult {
    /// Whether the call succeeded; a failure is counted under the `error` class.
    fn succeeded(&self) -> bool;
}

impl CallResult for () {
    fn succeeded(&self) -> bool {
        true
    }
}

impl CallResult for bool {
    fn succeeded(&self) -> bool {
        *self
    }
}

impl<T, E> CallResult for Result<T, E> {
    fn succeeded(&self) -> bool {
        self.is_ok()
    }
}

fn outcome(r: &impl CallResult) -> Outcome {
    if r.succeeded() {
        Outcome::Ok
    } else {
        Outcome::Failed(FailureClass::Error)
    }
}

/// An async function: each "connection" is one slot of concurrency on a worker's runtime.
#[derive(Clone)]
pub(crate) struct AsyncCalls<F> {
    pub call: F,
}

pub(crate) struct AsyncCall<F> {
    call: F,
}

impl<F, Fut, R> Transport for AsyncCalls<F>
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = R> + 'static,
    R: CallResult,
{
    type Conn = AsyncCall<F>;

    async fn connect(&self) -> Result<Self::Conn, FailureClass> {
        Ok(AsyncCall {
            call: self.call.clone(),
        })
    }
}

impl<F, Fut, R> Connection for AsyncCall<F>
where
    F: Fn() -> Fut + 'static,
    Fut: Future<Output = R> + 'static,
    R: CallResult,
{
    async fn exchange(&mut self, ex: &Exchange) -> Result<Outcome, ExchangeError> {
        ex.mark_sent();
        Ok(outcome(&(self.call)().await))
    }

    fn reusable(&self) -> bool {
        true
    }
}

/// A blocking function: each "connection" is a thread of its own, which runs one call at a
/// time when handed one. The pool of these threads is the engine's connection pool, so calls
/// that fall due while every thread is busy wait FIFO, measured from their due time.
pub(crate) struct BlockingCalls<F> {
    pub call: Arc<F>,
}

impl<F> Clone for BlockingCalls<F> {
    fn clone(&self) -> Self {
        BlockingCalls {
            call: self.call.clone(),
        }
    }
}

pub(crate) struct BlockingCall {
    /// Hands the thread its next call; capacity one, and the thread is idle when it is used.
    go: std::sync::mpsc::SyncSender<()>,
    /// The thread's answer: whether the call succeeded.
    done: tokio::sync::mpsc::Receiver<bool>,
}

impl<F, R> Transport for BlockingCalls<F>
where
    F: Fn() -> R + Send + Sync + 'static,
    R: CallResult,
{
    type Conn = BlockingCall;

    async fn connect(&self) -> Result<Self::Conn, FailureClass> {
        let (go, calls) = std::sync::mpsc::sync_channel::<()>(1);
        let (answers, done) = tokio::sync::mpsc::channel::<bool>(1);
        let call = self.call.clone();
        // The thread ends when its connection is dropped (the run is over, or a call timed
        // out and the engine gave up on it) and its current call has returned.
        std::thread::Builder::new()
            .name("sojourn-call".into())
            .spawn(move || {
                while calls.recv().is_ok() {
                    let ok = call().succeeded();
                    if answers.blocking_send(ok).is_err() {
                        return;
                    }
                }
            })
            .map_err(|_| FailureClass::Connect)?;
        Ok(BlockingCall { go, done })
    }
}

impl Connection for BlockingCall {
    async fn exchange(&mut self, ex: &Exchange) -> Result<Outcome, ExchangeError> {
        ex.mark_sent();
        if self.go.send(()).is_err() {
            return Err(ExchangeError::Failed(FailureClass::Io));
        }
        match self.done.recv().await {
            Some(true) => Ok(Outcome::Ok),
            Some(false) => Ok(Outcome::Failed(FailureClass::Error)),
            None => Err(ExchangeError::Failed(FailureClass::Io)),
        }
    }

    fn reusable(&self) -> bool {
        true
    }
}
