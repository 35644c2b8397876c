//! An async function as a transport, for code driven open-loop without a network and for
//! tests that drive the engine in virtual time. Its calls answer with an HTTP-like status,
//! counted as HTTP's are ([`crate::http::answer`]).
use std::future::Future;
use std::rc::Rc;

use sojourn_core::{FailureClass, Outcome};

use crate::http;
use crate::transport::{Connection, Exchange, ExchangeError, Transport};

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
    async fn exchange(&mut self, ex: &Exchange) -> Result<Outcome, ExchangeError> {
        ex.mark_sent();
        match (self.call)().await {
            Ok(status) => Ok(ex.answered(http::answer(status))),
            Err(class) => Err(ExchangeError::Failed(class)),
        }
    }

    fn reusable(&self) -> bool {
        true
    }
}
