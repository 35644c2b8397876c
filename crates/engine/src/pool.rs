//! Connections pull. A free connection takes the oldest due request, sends it, reads the
//! answer, records it, and pulls again; with nothing due it parks until the pacer hands it one.
//! One task per connection for the whole run, one timer per connection for every timeout: a
//! request costs no task, no map entry and no timer of its own.
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

use sojourn_core::{FailureClass, Outcome};
use tokio::time::{Instant, Sleep};

use crate::transport::{Connection, ExchangeError, Transport};
use crate::worker::{Next, Slot, Source, Worker, WorkerReport};

/// After a failed connect, a closed loop waits this long before its next request, so a refused
/// port does not turn into a busy loop of failures. (An open loop has its schedule for pacing.)
const CONNECT_BACKOFF: Duration = Duration::from_millis(10);

/// Opens a new connection task with `slot` (which may already carry its first request).
pub(crate) fn open<T: Transport, S: Source + 'static>(worker: &Rc<Worker<T, S>>) -> Rc<Slot> {
    let lane = worker.slots.borrow().len();
    let slot = Rc::new(Slot {
        lane,
        ..Slot::default()
    });
    worker.slots.borrow_mut().push(slot.clone());
    worker.live.set(worker.live.get() + 1);
    tokio::task::spawn_local(run(worker.clone(), slot.clone(), lane));
    slot
}

/// The closed loops' run (unpaced and paced): every connection opens at the start of the run
/// and loops until the worker's source has nothing more for it, the run is cancelled, or the
/// hard stop (a duration-bounded loop's end plus one timeout for the last answers; a
/// count-bounded loop has no clock bound of its own). Then what is left is accounted for.
pub(crate) async fn run_all<T: Transport, S: Source + 'static>(
    worker: &Rc<Worker<T, S>>,
    end: sojourn_core::End,
) -> WorkerReport {
    // Like the open loop's first request, the first requests leave at the start of the run.
    tokio::time::sleep_until(worker.t0()).await;
    for _ in 0..worker.cfg.connections.max(1) {
        open(worker);
    }
    let hard_stop = match end {
        sojourn_core::End::After(d) => worker.t0() + d + worker.cfg.timeout,
        sojourn_core::End::Count(_) => Instant::now() + Duration::from_secs(365 * 24 * 3600),
    };
    tokio::select! {
        biased;
        _ = worker.cancel().cancelled() => {}
        _ = tokio::time::sleep_until(hard_stop) => {}
        _ = async {
            while worker.live.get() > 0 {
                worker.quiet.notified().await;
            }
        } => {}
    }
    worker.close(worker.now())
}

/// One connection's life: pull, exchange, record, until the run has nothing more for it.
/// `lane` is the connection's number in its worker (a paced connection's share of the slots).
async fn run<T: Transport, S: Source>(worker: Rc<Worker<T, S>>, slot: Rc<Slot>, lane: usize) {
    let mut conn: Option<T::Conn> = None;
    let deadline = tokio::time::sleep(Duration::ZERO);
    tokio::pin!(deadline);
    // A paced connection sleeps to its own slots: one microsecond timer for its whole life.
    let mut timer = worker.is_paced().then(sojourn_timer::Timer::new);
    let mut woke = false;
    loop {
        if slot.job.get().is_none() {
            match worker.next(lane, std::mem::take(&mut woke)) {
                Next::Job(job) => worker.assign(&slot, job),
                Next::WaitUntil(at) => {
                    let at = worker.t0() + at;
                    match timer.as_mut() {
                        Some(t) => t.sleep_until(at).await,
                        None => tokio::time::sleep_until(at).await,
                    }
                    woke = true;
                    continue;
                }
                Next::Park => {
                    worker.park(&slot);
                    // A request is only handed to a slot taken off the idle list, so a wake-up
                    // without one leaves the slot where it is.
                    while slot.job.get().is_none() {
                        slot.wake.notified().await;
                    }
                    continue;
                }
                Next::Stop => break,
            }
        }
        let outcome = attempt(&worker, &mut conn, &slot, deadline.as_mut()).await;
        worker.finish(&slot, outcome);
        if worker.is_closed_loop()
            && matches!(
                outcome,
                Outcome::Failed(FailureClass::Connect | FailureClass::Tls)
            )
        {
            tokio::time::sleep(CONNECT_BACKOFF).await;
        }
    }
    worker.retire();
}

/// One request, bounded by the timeout from the moment the connection took it up.
async fn attempt<T: Transport, S: Source>(
    worker: &Worker<T, S>,
    conn: &mut Option<T::Conn>,
    slot: &Slot,
    mut deadline: Pin<&mut Sleep>,
) -> Outcome {
    let counters = worker.counters();
    counters.on_sent();
    deadline.as_mut().reset(Instant::now() + worker.cfg.timeout);
    let outcome = tokio::select! {
        biased;
        outcome = exchange(worker, conn, slot) => outcome,
        _ = deadline => {
            // The connection is mid-exchange in an unknown state: it cannot be reused.
            *conn = None;
            Outcome::Failed(FailureClass::Timeout)
        }
    };
    counters.on_answer(outcome);
    outcome
}

/// Sends on the connection (opening one if there is none) and reads the answer.
async fn exchange<T: Transport, S: Source>(
    worker: &Worker<T, S>,
    conn: &mut Option<T::Conn>,
    slot: &Slot,
) -> Outcome {
    let reused = conn.is_some();
    let c = match conn {
        Some(c) => c,
        None => match worker.transport().connect().await {
            Ok(c) => conn.insert(c),
            Err(class) => return Outcome::Failed(class),
        },
    };
    worker.note_send();
    let result = c.exchange(&slot.ex).await;
    keep_or_drop(conn, &result);
    match result {
        Ok(outcome) => outcome,
        Err(ExchangeError::Unprocessed(_)) if reused => retry_fresh(worker, conn, slot).await,
        Err(ExchangeError::Unprocessed(class) | ExchangeError::Failed(class)) => {
            Outcome::Failed(class)
        }
    }
}

/// The server did not process the request (it had closed an idle keep-alive connection, or
/// refused the stream on its way out). Send it once more on a fresh connection; its send stamp
/// stays the first attempt's, so the reconnect counts against the request, not in its favour.
async fn retry_fresh<T: Transport, S: Source>(
    worker: &Worker<T, S>,
    conn: &mut Option<T::Conn>,
    slot: &Slot,
) -> Outcome {
    let first = slot.ex.sent();
    let c = match worker.transport().connect().await {
        Ok(c) => conn.insert(c),
        Err(class) => return Outcome::Failed(class),
    };
    let result = c.exchange(&slot.ex).await;
    keep_or_drop(conn, &result);
    slot.ex.restore_sent(first);
    match result {
        Ok(outcome) => outcome,
        Err(ExchangeError::Unprocessed(class) | ExchangeError::Failed(class)) => {
            Outcome::Failed(class)
        }
    }
}

/// A connection that broke, or that the server will close, is not used again.
fn keep_or_drop<C: Connection>(conn: &mut Option<C>, result: &Result<Outcome, ExchangeError>) {
    let keep = result.is_ok() && conn.as_ref().is_some_and(|c| c.reusable());
    if !keep {
        *conn = None;
    }
}
