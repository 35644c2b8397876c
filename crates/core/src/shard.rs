//! One global schedule, run by N processes: shard K of N takes every N-th sender's slice of it.
//!
//! A schedule is already cut into slices for the worker threads of one process (every
//! `workers`-th request; for Poisson arrivals, an independent stream per slice). Sharding cuts
//! the same way one level up: thread `t` of shard `K` runs slice `K + N·t` of `N·T`. The shards
//! together run every slice exactly once, so every index of the global schedule is run once,
//! and with T threads per shard the union is exactly the single process's schedule with N·T
//! threads.
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Shard `index` (from 0, as Kubernetes' `JOB_COMPLETION_INDEX`) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

/// The most shards one plan may be cut into.
pub const MAX_SHARDS: u32 = 100_000;

impl Shard {
    /// A run that is not sharded: the whole schedule.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    pub fn new(index: u32, count: u32) -> Result<Shard, ShardError> {
        if count == 0 || count > MAX_SHARDS {
            return Err(ShardError::Count(count));
        }
        if index >= count {
            return Err(ShardError::Index { index, count });
        }
        Ok(Shard { index, count })
    }

    pub fn is_whole(self) -> bool {
        self.count == 1
    }

    /// The slice of the global schedule that local sender `local` of `locals` runs: slice
    /// `index + count·local` of `count·locals`.
    pub fn slot(self, local: usize, locals: usize) -> (usize, usize) {
        let (k, n) = (self.index as usize, self.count as usize);
        (k + n * local, n * locals.max(1))
    }
}

/// Why a shard is not usable; each message says what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    #[error("expected K/N with K from 0 to N−1, e.g. 0/4, got {0:?}")]
    Shape(String),
    #[error("the shard count must be from 1 to {MAX_SHARDS}, got {0}")]
    Count(u32),
    #[error("shard {index} of {count}: shards are numbered from 0 to {}", count - 1)]
    Index { index: u32, count: u32 },
}

impl FromStr for Shard {
    type Err = ShardError;
    fn from_str(text: &str) -> Result<Shard, ShardError> {
        let shape = || ShardError::Shape(text.into());
        let (k, n) = text.trim().split_once('/').ok_or_else(shape)?;
        let k = k.trim().parse().map_err(|_| shape())?;
        let n = n.trim().parse().map_err(|_| shape())?;
        Shard::new(k, n)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::{Arrival, Due, End, Schedule};
    use crate::units::Rate;
    use std::time::Duration;

    #[test]
    fn parse_table() {
        let table: &[(&str, Result<Shard, &str>)] = &[
            ("0/4", Ok(Shard { index: 0, count: 4 })),
            (" 3 / 4 ", Ok(Shard { index: 3, count: 4 })),
            ("0/1", Ok(Shard::WHOLE)),
            ("4/4", Err("numbered from 0 to 3")),
            ("0/0", Err("from 1 to")),
            ("1", Err("expected K/N")),
            ("-1/4", Err("expected K/N")),
            ("a/b", Err("expected K/N")),
        ];
        for (text, want) in table {
            match (text.parse::<Shard>(), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, *want, "{text}"),
                (Err(e), Err(want)) => assert!(e.to_string().contains(want), "{text}: {e}"),
                (got, want) => panic!("{text}: {got:?}, wanted {want:?}"),
            }
        }
    }

    /// Every index of the global schedule, run once across shards and threads, at the time
    /// the single process with N·T threads would run it: for constant, ramped, staged and
    /// seeded Poisson arrivals alike.
    #[test]
    fn shards_and_threads_compose_into_the_single_process_schedule() {
        let rate = |r| Rate::per_second(r).unwrap();
        let secs = |s| End::After(Duration::from_secs(s));
        let schedules = [
            Schedule::new(Arrival::Constant, rate(500.0), secs(2)).unwrap(),
            Schedule::new(Arrival::Ramp { to: rate(900.0) }, rate(100.0), secs(2)).unwrap(),
            Schedule::new(Arrival::Poisson { seed: 9 }, rate(700.0), secs(2)).unwrap(),
            Schedule::new(Arrival::Poisson { seed: 9 }, rate(700.0), End::Count(999)).unwrap(),
            Schedule::staged(
                Arrival::Poisson { seed: 4 },
                crate::Stages::parse("1s@0..800,1s@800").unwrap(),
            )
            .unwrap(),
        ];
        for s in schedules {
            for (shards, threads) in [(1u32, 6usize), (2, 3), (3, 2), (6, 1)] {
                let mut got: Vec<Due> = (0..shards)
                    .flat_map(|k| {
                        let shard = Shard::new(k, shards).unwrap();
                        let s = s.clone();
                        (0..threads).flat_map(move |t| {
                            let (w, ws) = shard.slot(t, threads);
                            s.slice(w, ws)
                        })
                    })
                    .collect();
                got.sort_by_key(|d| d.index);
                let mut whole: Vec<Due> = (0..6).flat_map(|w| s.slice(w, 6)).collect();
                whole.sort_by_key(|d| d.index);
                assert_eq!(
                    got, whole,
                    "{:?}: {shards} shards × {threads} threads",
                    s.arrival
                );
                let indices: Vec<u64> = got.iter().map(|d| d.index).collect();
                assert!(indices.windows(2).all(|w| w[0] < w[1]), "each index once");
            }
        }
    }

    /// What each shard was due to run, known from the plan alone, is what its slices hold, and
    /// the shards' dues add up to the whole schedule.
    #[test]
    fn due_counts_are_each_shards_exact_share() {
        let rate = |r| Rate::per_second(r).unwrap();
        let schedules = [
            Schedule::new(
                Arrival::Constant,
                rate(450.0),
                End::After(Duration::from_secs(30)),
            )
            .unwrap(),
            Schedule::new(Arrival::Constant, rate(3.0), End::Count(1_000)).unwrap(),
            Schedule::new(
                Arrival::Ramp { to: rate(50.0) },
                rate(400.0),
                End::After(Duration::from_secs(4)),
            )
            .unwrap(),
            Schedule::new(
                Arrival::Poisson { seed: 2 },
                rate(300.0),
                End::After(Duration::from_secs(3)),
            )
            .unwrap(),
            Schedule::staged(
                Arrival::Constant,
                crate::Stages::parse("1s@0..100,1s@0,1s@50").unwrap(),
            )
            .unwrap(),
        ];
        for s in schedules {
            let whole: u64 = (0..6).map(|w| s.slice(w, 6).count() as u64).sum();
            if let Some(planned) = s.planned_count() {
                assert_eq!(planned, whole, "{:?}", s.arrival);
            }
            for shards in [1u32, 4, 7] {
                let dues: Vec<u64> = (0..shards)
                    .map(|k| {
                        s.due_count(Shard::new(k, shards).unwrap(), 6 / shards.min(6) as usize)
                    })
                    .collect();
                for (k, &due) in dues.iter().enumerate() {
                    let shard = Shard::new(k as u32, shards).unwrap();
                    let threads = 6 / shards.min(6) as usize;
                    let run: u64 = (0..threads)
                        .map(|t| {
                            let (w, ws) = shard.slot(t, threads);
                            s.slice(w, ws).count() as u64
                        })
                        .sum();
                    assert_eq!(due, run, "{:?}: shard {shard}", s.arrival);
                }
                if s.planned_count().is_some() {
                    assert_eq!(
                        dues.iter().sum::<u64>(),
                        whole,
                        "{:?}: {shards} shards",
                        s.arrival
                    );
                }
            }
        }
        // A month at 100,000 req/s is counted by bisection, not by walking 2.6·10¹¹ due times.
        let month = Schedule::new(
            Arrival::Constant,
            rate(100_000.0),
            End::After(Duration::from_secs(30 * 24 * 3600)),
        )
        .unwrap();
        assert_eq!(month.planned_count(), Some(259_200_000_000));
    }
}
