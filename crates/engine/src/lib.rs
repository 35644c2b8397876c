//! The HTTP load engine: an open loop that sends on a schedule and measures every request from
//! when it was due, and a labelled closed loop for comparison. Runs on tokio, one
//! current-thread runtime per worker thread.
#![forbid(unsafe_code)]

pub mod closed;
mod cpu;
pub mod http;
mod insecure;
pub mod lane;
pub mod open;
pub mod progress;
pub mod result;
pub mod run;
pub mod sleeper;
pub mod transport;

pub use http::{HttpRequest, HttpTransport, TargetError};
pub use progress::{Progress, ProgressSnapshot};
pub use run::{execute, Load, Plan, RunReport};
pub use transport::{Connection, ExchangeError, FnTransport, Transport};
