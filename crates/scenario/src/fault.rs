//! Faults: what goes wrong, and when, on the scenario clock.
use std::fmt;
use std::time::Duration;

use crate::law::Percent;
use crate::parse::human as h;

/// How a picked request is slowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slowdown {
    /// The request takes exactly this long instead of its baseline (seed 000's "200 ms pause").
    Takes(Duration),
    /// The request takes this much longer than its baseline.
    Adds(Duration),
}

impl Slowdown {
    pub(crate) fn apply(self, baseline: Duration) -> Duration {
        match self {
            Slowdown::Takes(d) => d,
            Slowdown::Adds(d) => baseline + d,
        }
    }
}

impl fmt::Display for Slowdown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Slowdown::Takes(d) => write!(f, "takes {}", h(d)),
            Slowdown::Adds(d) => write!(f, "takes {} longer", h(d)),
        }
    }
}

/// A concurrency limit with a FIFO queue in front of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cap {
    /// At most this many requests in service at once.
    pub limit: u32,
    /// At most this many waiting; one more is answered 503 at once. `None`: the queue is unbounded.
    pub queue: Option<u32>,
}

/// One fault. Times (`at`, `first`, `start`, `end`) are on the scenario clock, which starts at
/// server start or at the first request.
#[derive(Clone, Debug, PartialEq)]
pub enum Fault {
    /// The gate closes at `at` for `duration`. A request that reaches the gate (after its service
    /// time) while it is closed waits; all waiting requests are released together when it opens.
    Stall { at: Duration, duration: Duration },
    /// A stall of `duration` every `every`, the first at `first`.
    Pause {
        every: Duration,
        duration: Duration,
        first: Duration,
    },
    /// Service times are multiplied by a factor that moves linearly from 1 at `start` to `scale`
    /// at `end`, and stays at `scale` after.
    Ramp {
        start: Duration,
        end: Duration,
        scale: f64,
    },
    /// The `n`-th, `2n`-th, … request (counting from 1) is slowed.
    EveryNth { n: u64, slow: Slowdown },
    /// A seeded `percent` of requests are slowed.
    SlowFraction {
        percent: Percent,
        slow: Slowdown,
        seed: Option<u64>,
    },
    /// A concurrency cap with a FIFO queue and an optional bound.
    Cap(Cap),
    /// A seeded `percent` of requests are answered with `status` (after their service time).
    Errors {
        percent: Percent,
        status: u16,
        seed: Option<u64>,
    },
    /// A seeded `percent` of requests have their connection dropped (after their service time)
    /// instead of an answer.
    Reset { percent: Percent, seed: Option<u64> },
}

/// What a timeline window shades.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WindowKind {
    Stall,
    Pause,
    Ramp,
}

/// The most windows one pause gives (a 10 s pause over 27 hours). A pause every few nanoseconds
/// over a long horizon would otherwise fill memory with windows no chart can show apart.
pub const MAX_PAUSE_WINDOWS: usize = 10_000;

/// A span of the scenario clock during which a fault acts, for reports to shade timelines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Window {
    pub kind: WindowKind,
    #[serde(rename = "start_ns", serialize_with = "as_nanos")]
    pub start: Duration,
    #[serde(rename = "end_ns", serialize_with = "as_nanos")]
    pub end: Duration,
}

fn as_nanos<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

impl Fault {
    /// The name this fault has in TOML (`kind = "..."`).
    pub fn kind(&self) -> &'static str {
        match self {
            Fault::Stall { .. } => "stall",
            Fault::Pause { .. } => "pause",
            Fault::Ramp { .. } => "ramp",
            Fault::EveryNth { .. } => "every-nth",
            Fault::SlowFraction { .. } => "slow-fraction",
            Fault::Cap(_) => "cap",
            Fault::Errors { .. } => "errors",
            Fault::Reset { .. } => "reset",
        }
    }

    /// If the gate is closed by this fault at `t`, when this closure ends.
    pub(crate) fn gate_closed_until(&self, t: Duration) -> Option<Duration> {
        match *self {
            Fault::Stall { at, duration } => {
                (at <= t && t < at + duration).then_some(at + duration)
            }
            Fault::Pause {
                every,
                duration,
                first,
            } => {
                let since = t.checked_sub(first)?;
                let k = since.as_nanos() / every.as_nanos();
                let start = first + nanos(k * every.as_nanos());
                (t < start + duration).then_some(start + duration)
            }
            _ => None,
        }
    }

    /// The factor this fault applies to the baseline at `at` (1 unless a ramp).
    pub(crate) fn ramp_factor(&self, at: Duration) -> f64 {
        let Fault::Ramp { start, end, scale } = *self else {
            return 1.0;
        };
        if at <= start {
            1.0
        } else if at >= end {
            scale
        } else {
            let progress = (at - start).as_secs_f64() / (end - start).as_secs_f64();
            1.0 + (scale - 1.0) * progress
        }
    }

    /// This fault's windows that begin before `horizon`.
    pub(crate) fn windows(&self, horizon: Duration, out: &mut Vec<Window>) {
        match *self {
            Fault::Stall { at, duration } if at < horizon => out.push(Window {
                kind: WindowKind::Stall,
                start: at,
                end: at + duration,
            }),
            Fault::Pause {
                every,
                duration,
                first,
            } => {
                let mut start = first;
                for _ in 0..MAX_PAUSE_WINDOWS {
                    if start >= horizon {
                        break;
                    }
                    out.push(Window {
                        kind: WindowKind::Pause,
                        start,
                        end: start + duration,
                    });
                    start += every;
                }
            }
            Fault::Ramp { start, end, .. } if start < horizon => out.push(Window {
                kind: WindowKind::Ramp,
                start,
                end,
            }),
            _ => {}
        }
    }
}

fn nanos(n: u128) -> Duration {
    Duration::new((n / 1_000_000_000) as u64, (n % 1_000_000_000) as u32)
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::Stall { at, duration } => write!(f, "stall at {} for {}", h(*at), h(*duration)),
            Fault::Pause {
                every,
                duration,
                first,
            } => write!(
                f,
                "pause {} every {} from {}",
                h(*duration),
                h(*every),
                h(*first)
            ),
            Fault::Ramp { start, end, scale } => {
                write!(f, "ramp to x{scale} between {} and {}", h(*start), h(*end))
            }
            // The second number is left out when it would not fit (n near u64::MAX).
            Fault::EveryNth { n, slow } => match n.checked_mul(2) {
                Some(second) => write!(f, "every request number {n}, {second}, … {slow}"),
                None => write!(f, "every request number {n} {slow}"),
            },
            Fault::SlowFraction { percent, slow, .. } => write!(f, "{percent} of requests {slow}"),
            Fault::Cap(Cap { limit, queue }) => match queue {
                Some(q) => write!(f, "cap {limit} in service, queue {q} then 503"),
                None => write!(f, "cap {limit} in service, unbounded queue"),
            },
            Fault::Errors {
                percent, status, ..
            } => write!(f, "{percent} answered {status}"),
            Fault::Reset { percent, .. } => write!(f, "{percent} of connections reset"),
        }
    }
}
