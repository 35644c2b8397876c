//! The gate: where a request waits, after its service time, while a stall or pause holds the
//! gate closed.
//!
//! When the gate opens, everyone waiting leaves together. So instead of one timer per waiting
//! request (a thousand timerfds firing in the same millisecond would spread the release over
//! several), one release task sleeps precisely to the next opening and broadcasts it on a
//! `watch` channel; waiters only compare the broadcast instant with their own.
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sojourn_scenario::Scenario;
use tokio::sync::{watch, Notify};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub(crate) struct Gate {
    scenario: Arc<Scenario>,
    /// Stalls triggered on demand through the control endpoint, as wall-clock windows.
    extra: Mutex<Vec<(Instant, Instant)>>,
    /// Openings that someone waits for; the release task sleeps to the first.
    pending: Mutex<BTreeSet<Instant>>,
    /// Wakes the release task when a new earliest opening is added.
    changed: Notify,
    /// The latest opening the release task has reached.
    released: watch::Sender<Instant>,
}

impl Gate {
    pub(crate) fn new(scenario: Arc<Scenario>) -> Arc<Gate> {
        Arc::new(Gate {
            scenario,
            extra: Mutex::new(Vec::new()),
            pending: Mutex::new(BTreeSet::new()),
            changed: Notify::new(),
            released: watch::Sender::new(Instant::now()),
        })
    }

    /// Closes the gate from now for `duration`, on top of whatever the scenario does.
    pub(crate) fn stall_now(&self, duration: Duration) -> Instant {
        let now = Instant::now();
        let mut extra = self.extra.lock().expect("gate lock");
        // Forget windows long past so on-demand stalls cannot grow the list without bound.
        extra.retain(|&(_, end)| end + Duration::from_secs(60) > now);
        extra.push((now, now + duration));
        now + duration
    }

    /// When a request that reaches the gate at `reach` may leave: the scenario's
    /// `gate_open_at`, chained with on-demand stalls until neither holds it.
    pub(crate) fn open_at(&self, origin: Instant, reach: Instant) -> Instant {
        let mut t = reach;
        loop {
            let rel = t.saturating_duration_since(origin);
            let scheduled = origin + self.scenario.gate_open_at(rel);
            let after = self.extra_open_at(scheduled.max(t));
            if after == t {
                return t;
            }
            t = after;
        }
    }

    fn extra_open_at(&self, mut t: Instant) -> Instant {
        let extra = self.extra.lock().expect("gate lock");
        while let Some(&(_, end)) = extra.iter().find(|&&(start, end)| start <= t && t < end) {
            t = end;
        }
        t
    }

    /// Waits until the release task has reached `open`.
    pub(crate) async fn wait_until_open(&self, open: Instant) {
        let mut rx = self.released.subscribe();
        if *rx.borrow() >= open {
            return;
        }
        let earliest = {
            let mut pending = self.pending.lock().expect("gate lock");
            let earliest = pending.first().is_none_or(|&first| open < first);
            pending.insert(open);
            earliest
        };
        if earliest {
            self.changed.notify_one();
        }
        // An error means the release task has gone (shutdown); the caller's abort handles it.
        let _ = rx.wait_for(|&released| released >= open).await;
    }

    /// The release task: sleeps precisely to each awaited opening and broadcasts it.
    pub(crate) async fn run_releases(self: Arc<Self>, stop: CancellationToken) {
        let mut timer = sojourn_timer::Timer::new();
        loop {
            let next = self.pending.lock().expect("gate lock").first().copied();
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = self.changed.notified() => {}
                _ = timer.sleep_until(next.unwrap_or_else(Instant::now)), if next.is_some() => {
                    let Some(opened) = next else { continue };
                    self.pending.lock().expect("gate lock").retain(|&t| t > opened);
                    self.released.send_modify(|r| *r = (*r).max(opened));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn hiccup_at(at_ms: u64, for_ms: u64) -> Arc<Scenario> {
        let sets = [
            format!("hiccup.at={at_ms}ms"),
            format!("hiccup.duration={for_ms}ms"),
        ];
        let o: Vec<_> = sets.iter().map(|s| s.parse().unwrap()).collect();
        Arc::new(Scenario::builtin("hiccup", &o).unwrap())
    }

    #[test]
    fn on_demand_stalls_chain_with_scheduled_ones() {
        let gate = Gate::new(hiccup_at(100, 100));
        let origin = Instant::now();
        // Nothing on demand: the scenario's own window.
        assert_eq!(gate.open_at(origin, origin + 150 * MS), origin + 200 * MS);
        gate.extra
            .lock()
            .unwrap()
            .push((origin + 200 * MS, origin + 300 * MS));
        // The scheduled stall ends where the on-demand one begins: both hold the request.
        assert_eq!(gate.open_at(origin, origin + 150 * MS), origin + 300 * MS);
        assert_eq!(gate.open_at(origin, origin + 50 * MS), origin + 50 * MS);
    }

    #[tokio::test]
    async fn waiters_for_the_same_opening_leave_together_and_not_early() {
        let gate = Gate::new(hiccup_at(0, 1));
        let stop = CancellationToken::new();
        tokio::spawn(gate.clone().run_releases(stop.clone()));
        let open = Instant::now() + 30 * MS;
        let waiters: Vec<_> = (0..50)
            .map(|_| {
                let gate = gate.clone();
                tokio::spawn(async move {
                    gate.wait_until_open(open).await;
                    Instant::now()
                })
            })
            .collect();
        let mut left = Vec::new();
        for w in waiters {
            left.push(w.await.unwrap());
        }
        stop.cancel();
        assert!(left.iter().all(|&t| t >= open), "nobody leaves early");
        let spread = *left.iter().max().unwrap() - *left.iter().min().unwrap();
        assert!(spread < 20 * MS, "released together, spread {spread:?}");
    }
}
