//! The HTTP load engine: an open loop that sends on a schedule and measures every request from
//! when it was due, and a labelled closed loop for comparison. Runs on tokio, one
//! current-thread runtime per worker thread.
//!
//! Each worker thread owns a slice of the schedule, a pool of connections and a recorder. The
//! requests due but not yet sent are a range of the schedule's indices (`backlog`); free
//! connections pull the oldest of them (`pool`); a pacer sleeps precisely to the next due time
//! and hands requests to idle connections ([`open`]). Memory does not depend on how many
//! requests wait, and over plain HTTP/1.1 nothing is allocated per request (over TLS and
//! HTTP/2 a request allocates its records and header maps, each held to its measured figure by
//! `tests/allocations.rs`). A paced closed loop ([`paced`]) gives each connection its own share
//! of the schedule's slots, as rate-capped closed-loop tools do.
#![forbid(unsafe_code)]

mod backlog;
pub mod closed;
mod cpu;
pub mod function;
pub mod grpc;
pub mod grpc_proto;
pub mod grpc_reflect;
pub mod http;
pub mod http2;
mod insecure;
pub mod journey;
pub mod live;
pub mod live_labels;
pub mod open;
pub mod paced;
mod pool;
pub mod progress;
pub mod result;
pub mod run;
pub mod sleeper;
pub mod transport;
pub mod worker;

pub use function::FnTransport;
pub use http::{ConnectError, HttpRequest, HttpTransport, TargetError, TlsServerName, Trust};
pub use http2::{Http2Settings, Http2Transport};
pub use live::{Figures, IntervalSnapshot, Live};
pub use live_labels::{LabelSnapshot, LabelsSnapshot, LiveLabels};
pub use progress::{Progress, ProgressSnapshot};
pub use run::{execute, execute_journeys, Load, Plan, RunReport, HICCUP_TICK};
pub use sleeper::Slack;
pub use sojourn_timer::{
    serve_control, ControlCommand, FloorFigures, FloorSnapshot, DEFAULT_MAX_SPIN,
};
pub use transport::{Answer, Connection, Exchange, ExchangeError, Kept, StepRequest, Transport};
