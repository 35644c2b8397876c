//! The paced closed loop over real sockets, with every arrival law: each connection sends
//! exactly its own share of the schedule's slots (the same slots `sojourn sim --client paced`
//! gives it), on two worker threads, and a request is timed from its slot as well as its send.
mod common;

use std::time::Duration;

use common::{assert_nothing_lost, open_plan, run, transport, Behaviour, TestServer};
use sojourn_core::{Arrival, End, Rate, Schedule};
use sojourn_engine::{Load, Plan};

const CONNECTIONS: usize = 6;

fn paced_plan(arrival: Arrival, rate: f64, duration: Duration) -> (Plan, Schedule) {
    let schedule = Schedule::new(
        arrival,
        Rate::per_second(rate).unwrap(),
        End::After(duration),
    )
    .unwrap();
    let plan = Plan {
        load: Load::Paced(schedule.clone()),
        threads: 2,
        ..open_plan(rate, duration, CONNECTIONS)
    };
    (plan, schedule)
}

/// However the slots are spread, the connections together send each of them once: as many as
/// the N shares hold, which is what the model sends too.
#[test]
fn every_arrival_law_sends_each_connections_own_share() {
    let server = TestServer::start(Behaviour::Answer);
    let laws = [
        Arrival::Constant,
        Arrival::Poisson { seed: 7 },
        Arrival::Ramp {
            to: Rate::per_second(900.0).unwrap(),
        },
    ];
    for arrival in laws {
        let (plan, schedule) = paced_plan(arrival, 300.0, Duration::from_millis(1500));
        let report = run(&plan, transport(&server.url()), None);
        let m = assert_nothing_lost(&report);
        let shares: u64 = (0..CONNECTIONS)
            .map(|c| schedule.slice(c, CONNECTIONS).count() as u64)
            .sum();
        assert_eq!(report.scheduled, shares, "{arrival:?}");
        assert_eq!(m.tally.completed, shares, "{arrival:?}: {:?}", m.tally);
        // A fast target: every slot is sent on time or nearly, so the two clocks agree.
        let from_slot = m.hist.response.value_at_quantile(0.5);
        let from_send = m.hist.service.value_at_quantile(0.5);
        assert!(
            from_slot >= from_send && from_slot < from_send + 5_000_000,
            "{arrival:?}: p50 from the slot {from_slot} ns, from the send {from_send} ns"
        );
    }
}

/// A slow target holds each connection past its next slot: the slot is sent late, when the
/// answer arrives, and the wait is in its time from the slot, not in its time from the send.
#[test]
fn a_late_answer_delays_the_connections_next_slot() {
    let server = TestServer::start(Behaviour::Slow(Duration::from_millis(30)));
    // Two connections at 100 req/s in all: a slot every 20 ms each, 30 ms a request.
    let schedule = Schedule::new(
        Arrival::Constant,
        Rate::per_second(100.0).unwrap(),
        End::After(Duration::from_secs(1)),
    )
    .unwrap();
    let plan = Plan {
        load: Load::Paced(schedule),
        ..open_plan(100.0, Duration::from_secs(1), 2)
    };
    let report = run(&plan, transport(&server.url()), None);
    let m = assert_nothing_lost(&report);
    assert_eq!(report.scheduled, 100);
    // Each connection gets through about 1 s / 30 ms of its 50 slots before the end; the rest
    // were never reached.
    assert!(
        (20..=40).contains(&m.tally.never_sent),
        "never reached {:?}",
        m.tally
    );
    assert!(m.tally.waited_for_connection > 50, "{:?}", m.tally);
    let from_send = m.hist.service.value_at_quantile(0.99);
    let from_slot = m.hist.response.value_at_quantile(0.99);
    assert!(from_send < 60_000_000, "from the send p99 {from_send} ns");
    assert!(from_slot > 250_000_000, "from the slot p99 {from_slot} ns");
}

/// What a watcher counts as due, from the plan alone, is what the senders are given: the
/// slices of an open loop (one per worker thread) and of a paced one (one per connection),
/// for Poisson arrivals bounded by a duration (whose count depends on each slice's own seed)
/// and a shard of the run, add up to the requests the plan is due to schedule.
#[test]
fn the_due_slices_are_the_senders_schedule() {
    let (paced, schedule) = paced_plan(Arrival::Poisson { seed: 7 }, 900.0, Duration::from_secs(3));
    let shard = sojourn_core::Shard::new(1, 2).unwrap();
    let open = Plan {
        load: Load::Open(schedule),
        threads: 3,
        shard,
        ..open_plan(900.0, Duration::from_secs(3), CONNECTIONS)
    };
    let paced = Plan { shard, ..paced };
    for (what, plan, senders) in [("open", &open, 3), ("paced", &paced, CONNECTIONS)] {
        let slices = plan.due_slices().expect("a schedule");
        assert_eq!(slices.len(), senders, "{what}");
        let counted: u64 = slices.into_iter().map(|s| s.count() as u64).sum();
        assert_eq!(Some(counted), plan.due(), "{what}");
    }
    let closed = Plan {
        load: Load::Closed(End::After(Duration::from_secs(1))),
        ..open_plan(900.0, Duration::from_secs(3), CONNECTIONS)
    };
    assert!(closed.due_slices().is_none());
}
