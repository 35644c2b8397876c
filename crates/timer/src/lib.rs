//! Sleeping to a deadline with microsecond accuracy on tokio, at a bounded CPU cost.
//!
//! tokio's timer wheel has a 1 ms tick: a `sleep_until` can fire up to a millisecond late, which
//! is too coarse for a load schedule at 10k+ req/s or for a server that must hold a request for
//! exactly 10 ms. A Linux `timerfd` wakes through the same epoll loop tokio already runs, with
//! the kernel's microsecond resolution.
//!
//! A wake-up is not free, though, nor instant. On a virtual machine the kernel hands a sleeping
//! thread its CPU back tens of microseconds late, and the round trip costs about as much CPU
//! again. [`Timer`] therefore *learns* how late its wake-ups come, arms the timerfd that much
//! early, and spins (yielding to the runtime, so I/O keeps flowing) only the short stretch
//! between the wake-up and the deadline. The spin is capped, so an idle sleeper never burns a
//! core: with a cap of zero it is a plain timerfd sleep.
#![forbid(unsafe_code)]

pub mod affinity;
mod control;
mod hiccup;
mod learn;

use std::io;
use std::time::Duration;

use timerfd::{ClockId, SetTimeFlags, TimerFd, TimerState};
use tokio::io::unix::AsyncFd;
use tokio::time::Instant;

pub use control::{
    serve as serve_control, serve_reporting as serve_control_reporting, ControlCommand,
    ControlError, ControlMeter, ControlReport, FloorFigures, FloorSnapshot, FloorWatch,
    LINE_PREFIX, PERIOD_PREFIX, REPORT_EVERY,
};
pub use hiccup::{HiccupMeter, Oversleeps};
pub use learn::Lateness;

/// A yield shorter than this is counted as idle spinning.
const IDLE_YIELD: Duration = Duration::from_micros(5);

/// The default cap on spinning per wait. On the VMs this was tuned on, an idle thread's
/// wake-up comes 20–60 µs late (later the longer it slept), so a cap of 100 µs covers most
/// of them.
pub const DEFAULT_MAX_SPIN: Duration = Duration::from_micros(100);

/// Whatever the cap, one wait spins at most this share of the time since the previous wait
/// ended: precision costs at most a tenth of the sleeper's time, so an idle or slow-paced
/// sleeper spins a little and a fast one (where spinning would cost a core) hardly at all.
pub const SPIN_SHARE: f64 = 0.1;

/// A reusable precise sleeper. Keep one per task that sleeps often (a pacer); use
/// [`sleep_until`] for one-off waits.
pub struct Timer {
    fd: Option<AsyncFd<TimerFd>>,
    /// The most this sleeper spins in one wait.
    max_spin: Duration,
    /// How late the kernel's wake-ups come: arm this much before the deadline.
    lateness: Lateness,
    /// Time spent spinning so far: CPU burnt on purpose, not work.
    spun: Duration,
    /// How many times the timerfd woke this sleeper.
    wakes: u64,
    /// When the previous wait ended.
    last: Option<Instant>,
}

impl Timer {
    /// A sleeper that never spins: it arms the timerfd for the deadline itself. Call it inside
    /// a tokio runtime. If the kernel refuses a timerfd the sleeper still works, with tokio's
    /// 1 ms resolution; [`Timer::is_precise`] tells which.
    pub fn new() -> Self {
        Timer::with_max_spin(Duration::ZERO)
    }

    /// A sleeper that wakes up to `max_spin` early, by as much as it has learned the kernel's
    /// wake-ups run late, and yields to the runtime in a loop until the deadline.
    pub fn with_max_spin(max_spin: Duration) -> Self {
        // `AsyncFd::new` is deprecated because a caller could close the descriptor behind the
        // registration's back. `TimerFd` owns its descriptor and keeps it open until it is
        // dropped together with the `AsyncFd`, so that cannot happen here; the replacement,
        // `AsyncFd::register`, is `unsafe`, which this crate forbids.
        #[allow(deprecated)]
        let fd = TimerFd::new_custom(ClockId::Monotonic, true, true)
            .and_then(AsyncFd::new)
            .ok();
        Timer {
            fd,
            max_spin,
            lateness: Lateness::new(max_spin),
            spun: Duration::ZERO,
            wakes: 0,
            last: None,
        }
    }

    /// Whether this sleeper has microsecond resolution.
    pub fn is_precise(&self) -> bool {
        self.fd.is_some()
    }

    /// Returns at or shortly after `deadline`, never before it.
    pub async fn sleep_until(&mut self, deadline: Instant) {
        self.wait(deadline, true).await
    }

    /// Returns after `deadline`, late by however long the kernel takes to wake the thread: no
    /// spinning, for deadlines that need not be met to the microsecond.
    pub async fn sleep_until_loosely(&mut self, deadline: Instant) {
        self.wait(deadline, false).await
    }

    async fn wait(&mut self, deadline: Instant, spin: bool) {
        let now = Instant::now();
        if deadline <= now {
            self.last = Some(now);
            return;
        }
        let allowed = if spin {
            self.spin_allowed(deadline)
        } else {
            Duration::ZERO
        };
        let early = self.lateness.estimate().min(allowed);
        let Some(fd) = self.fd.as_mut() else {
            tokio::time::sleep_until(deadline).await;
            return;
        };
        // Closer than a wake-up takes: sleeping would only make the request later.
        if deadline - now > early {
            let wake = deadline - early;
            match wait_on_timerfd(fd, wake).await {
                Ok(woke) => {
                    self.wakes += 1;
                    self.lateness.observe(woke.saturating_duration_since(wake));
                }
                Err(_) => tokio::time::sleep_until(deadline).await,
            }
        }
        self.spin_until(deadline).await;
        self.last = Some(Instant::now());
    }

    /// The most this wait may spin: the cap, and at most [`SPIN_SHARE`] of the time since the
    /// previous wait ended.
    fn spin_allowed(&self, deadline: Instant) -> Duration {
        let share = match self.last {
            Some(last) => deadline.saturating_duration_since(last).mul_f64(SPIN_SHARE),
            None => self.max_spin,
        };
        self.max_spin.min(share)
    }

    async fn spin_until(&mut self, deadline: Instant) {
        let mut now = Instant::now();
        while now < deadline {
            tokio::task::yield_now().await;
            let after = Instant::now();
            // A yield that comes straight back found nothing else to run: idle spinning. A
            // longer one ran other tasks, which is work, not spin.
            if after - now < IDLE_YIELD {
                self.spun += after - now;
            }
            now = after;
        }
    }

    /// Total time this sleeper has spent spinning idly (yields that found nothing else to run).
    pub fn spun(&self) -> Duration {
        self.spun
    }

    /// How many times the kernel woke this sleeper.
    pub fn wakes(&self) -> u64 {
        self.wakes
    }

    /// The wake-up lateness this sleeper has learned (it arms its timer that early, within
    /// its spin allowance).
    pub fn learned_lateness(&self) -> Duration {
        self.lateness.estimate()
    }
}

impl Default for Timer {
    fn default() -> Self {
        Timer::new()
    }
}

/// Waits until the timerfd fires at `deadline`; returns when this task got the CPU back.
async fn wait_on_timerfd(fd: &mut AsyncFd<TimerFd>, deadline: Instant) -> io::Result<Instant> {
    loop {
        let now = Instant::now();
        if deadline <= now {
            return Ok(now);
        }
        fd.get_mut()
            .set_state(TimerState::Oneshot(deadline - now), SetTimeFlags::Default);
        let mut guard = fd.readable_mut().await?;
        // The expiry count is irrelevant; reading clears readiness for the next wait.
        let _ = guard.get_inner_mut().read();
        guard.clear_ready();
        let woke = Instant::now();
        if woke >= deadline {
            return Ok(woke);
        }
    }
}

/// One-off precise sleep, without spinning.
pub async fn sleep_until(deadline: Instant) {
    if deadline <= Instant::now() {
        return;
    }
    Timer::new().sleep_until(deadline).await;
}

/// Precise sleep for a duration from now.
pub async fn sleep(duration: Duration) {
    sleep_until(Instant::now() + duration).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn median_overshoot(timer: Option<&mut Timer>) -> Duration {
        let mut late = Vec::new();
        let mut timer = timer;
        for i in 0..40u64 {
            let deadline = Instant::now() + Duration::from_micros(300 + 97 * i);
            match timer.as_deref_mut() {
                Some(t) => t.sleep_until(deadline).await,
                None => tokio::time::sleep_until(deadline).await,
            }
            late.push(Instant::now() - deadline);
        }
        late.sort();
        late[late.len() / 2]
    }

    /// The point of the crate: against the same deadlines, in the same run, the precise sleeper
    /// overshoots far less than tokio's own timer (a ratio, so a slow machine cannot fail it).
    #[tokio::test(flavor = "current_thread")]
    async fn overshoots_far_less_than_tokio() {
        let mut timer = Timer::new();
        assert!(timer.is_precise(), "timerfd unavailable on this machine");
        let coarse = median_overshoot(None).await;
        let precise = median_overshoot(Some(&mut timer)).await;
        assert!(
            precise * 3 < coarse,
            "precise {precise:?} vs tokio {coarse:?}"
        );
        assert_eq!(timer.spun(), Duration::ZERO, "Timer::new never spins");
        assert!(timer.wakes() >= 40, "every wait was a timerfd wake-up");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn never_returns_early() {
        let mut spinning = Timer::with_max_spin(Duration::from_micros(200));
        for us in [0u64, 150, 1_000, 3_000] {
            let deadline = Instant::now() + Duration::from_micros(us);
            sleep_until(deadline).await;
            assert!(Instant::now() >= deadline);
            let deadline = Instant::now() + Duration::from_micros(us);
            spinning.sleep_until(deadline).await;
            assert!(Instant::now() >= deadline);
        }
    }

    /// Fast-paced waits spin at most a tenth of their gap, however high the cap: at 50 µs apart,
    /// 5 µs each.
    #[tokio::test(flavor = "current_thread")]
    async fn fast_paced_waits_spin_a_share_of_their_gap() {
        let mut timer = Timer::with_max_spin(Duration::from_micros(500));
        let gap = Duration::from_micros(50);
        let waits = 400u32;
        let mut deadline = Instant::now();
        for _ in 0..waits {
            deadline += gap;
            timer.sleep_until(deadline).await;
        }
        let per_wait = timer.spun() / waits;
        assert!(
            per_wait <= gap.mul_f64(SPIN_SHARE) + IDLE_YIELD,
            "spun {per_wait:?} per wait at {gap:?} apart"
        );
    }

    /// The spin is capped: however late the wake-ups have been, one wait spins at most the cap
    /// (plus the one yield that crosses the deadline).
    #[tokio::test(flavor = "current_thread")]
    async fn spinning_is_capped_per_wait() {
        let cap = Duration::from_micros(30);
        let mut timer = Timer::with_max_spin(cap);
        let waits = 50u32;
        for _ in 0..waits {
            timer
                .sleep_until(Instant::now() + Duration::from_micros(400))
                .await;
        }
        assert!(timer.learned_lateness() <= cap);
        let per_wait = timer.spun() / waits;
        assert!(
            per_wait <= cap + IDLE_YIELD,
            "spun {per_wait:?} per wait with a cap of {cap:?}"
        );
    }
}
