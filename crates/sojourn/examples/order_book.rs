//! The JVM order-matching seed, in Rust: an in-process order book whose normalisation step
//! takes a shared lock that housekeeping sometimes holds for milliseconds.
//!
//! ```sh
//! cargo run --release -p sojourn --example order_book             # with the lock
//! cargo run --release -p sojourn --example order_book -- --no-lock
//! ```
//!
//! Each variant runs a closed loop (one caller, as a microbenchmark harness would), then an
//! open loop at 10,000 orders a second on four threads, prints the seed's table (p50, p99,
//! p99.9, p99.99 of each) and writes `order-book.html` (or `order-book-no-lock.html`). With the
//! lock, the closed loop's tail looks fine and the open loop's does not; without it, the open
//! loop's p99.9 falls.
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use sojourn::{ClosedLoop, OpenLoop, RunResult};

/// How often housekeeping rebuilds the normaliser's index, and how long the rebuild takes.
const HOUSEKEEPING_EVERY: Duration = Duration::from_millis(100);
const REBUILD_TAKES: Duration = Duration::from_millis(8);

/// One design under one load.
struct Setup {
    locked: bool,
    length: Duration,
    rate: f64,
    /// How long each rebuild takes (and, with the lock, holds it).
    rebuild: Duration,
}
const SYMBOLS: u64 = 64;

/// Maps the symbols clients send ("aapl", "AAPL.O") to one instrument id.
struct Normaliser {
    index: HashMap<String, u32>,
}

impl Normaliser {
    fn build() -> Normaliser {
        let index = (0..SYMBOLS)
            .flat_map(|i| {
                [
                    (format!("sym{i}"), i as u32),
                    (format!("SYM{i}.X"), i as u32),
                ]
            })
            .collect();
        Normaliser { index }
    }

    fn instrument(&self, symbol: &str) -> Option<u32> {
        self.index.get(symbol).copied()
    }
}

/// The two designs of the normalisation path.
enum Normalisation {
    /// Every order takes the normaliser's lock; housekeeping rebuilds under the same lock.
    Locked(Mutex<Normaliser>),
    /// Orders read an immutable snapshot; housekeeping builds a new one aside and swaps it in.
    Snapshot(RwLock<Arc<Normaliser>>),
}

impl Normalisation {
    fn instrument(&self, symbol: &str) -> Option<u32> {
        match self {
            Normalisation::Locked(m) => m.lock().unwrap().instrument(symbol),
            Normalisation::Snapshot(s) => {
                let current = s.read().unwrap().clone();
                current.instrument(symbol)
            }
        }
    }

    /// Housekeeping: rebuild the index, taking `takes`. Under the lock, every order waits for it.
    fn rebuild(&self, takes: Duration) {
        // The rebuild waits on something slow (a reference-data fetch): it holds the lock
        // without holding a core.
        let slow_build = || {
            let start = Instant::now();
            let n = Normaliser::build();
            std::thread::sleep(takes.saturating_sub(start.elapsed()));
            n
        };
        match self {
            Normalisation::Locked(m) => {
                let mut guard = m.lock().unwrap();
                *guard = slow_build();
            }
            Normalisation::Snapshot(s) => {
                let fresh = Arc::new(slow_build());
                *s.write().unwrap() = fresh;
            }
        }
    }
}

/// Resting orders of one instrument: price → quantity, bids and asks.
#[derive(Default)]
struct Book {
    bids: BTreeMap<u32, u64>,
    asks: BTreeMap<u32, u64>,
}

impl Book {
    /// Matches an order against the other side, and rests what is left. Returns fills.
    fn submit(&mut self, buy: bool, price: u32, mut qty: u64) -> u64 {
        let mut filled = 0;
        let (other, own) = if buy {
            (&mut self.asks, &mut self.bids)
        } else {
            (&mut self.bids, &mut self.asks)
        };
        while qty > 0 {
            let best = if buy {
                other.iter().next().filter(|(&p, _)| p <= price)
            } else {
                other.iter().next_back().filter(|(&p, _)| p >= price)
            };
            let Some((&p, &q)) = best else { break };
            let take = q.min(qty);
            qty -= take;
            filled += take;
            if take == q {
                other.remove(&p);
            } else {
                other.insert(p, q - take);
            }
        }
        if qty > 0 {
            *own.entry(price).or_default() += qty;
        }
        filled
    }
}

/// The exchange: normalisation, then one book per instrument.
struct Exchange {
    normalisation: Normalisation,
    books: Vec<Mutex<Book>>,
    sequence: AtomicU64,
}

impl Exchange {
    fn new(locked: bool) -> Exchange {
        let normalisation = if locked {
            Normalisation::Locked(Mutex::new(Normaliser::build()))
        } else {
            Normalisation::Snapshot(RwLock::new(Arc::new(Normaliser::build())))
        };
        Exchange {
            normalisation,
            books: (0..SYMBOLS).map(|_| Mutex::new(Book::default())).collect(),
            sequence: AtomicU64::new(0),
        }
    }

    /// One order, from a client's symbol to its fills.
    fn order(&self) -> Result<u64, &'static str> {
        let n = self.sequence.fetch_add(1, Ordering::Relaxed);
        let symbol = if n % 2 == 0 {
            format!("sym{}", n % SYMBOLS)
        } else {
            format!("SYM{}.X", n % SYMBOLS)
        };
        let instrument = self
            .normalisation
            .instrument(&symbol)
            .ok_or("unknown symbol")?;
        let price = 1_000 + (n.wrapping_mul(2_654_435_761) % 21) as u32;
        let mut book = self.books[instrument as usize].lock().unwrap();
        Ok(book.submit(n % 3 != 0, price, 1 + n % 5))
    }
}

/// Housekeeping on a thread of its own, until dropped.
struct Housekeeping {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Housekeeping {
    fn start(exchange: Arc<Exchange>, rebuild: Duration) -> Housekeeping {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(HOUSEKEEPING_EVERY);
                exchange.normalisation.rebuild(rebuild);
            }
        });
        Housekeeping {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Housekeeping {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The closed loop and the open loop of one design, each against a fresh exchange.
struct Runs {
    closed: RunResult,
    open: RunResult,
}

fn measure(setup: &Setup) -> Result<Runs, sojourn::Error> {
    let Setup {
        locked,
        length,
        rate,
        rebuild,
    } = *setup;
    let variant = if locked { "lock" } else { "no lock" };
    let exchange = Arc::new(Exchange::new(locked));
    let housekeeping = Housekeeping::start(exchange.clone(), rebuild);
    let closed = ClosedLoop::with(1)
        .for_duration(length)
        .label(&format!("closed, {variant}"))
        .run_blocking({
            let exchange = exchange.clone();
            move || exchange.order()
        })?;
    drop(housekeeping);
    let exchange = Arc::new(Exchange::new(locked));
    let _housekeeping = Housekeeping::start(exchange.clone(), rebuild);
    let open = OpenLoop::at(rate)
        .for_duration(length)
        .label(&format!("open {rate}/s, {variant}"))
        .run_blocking(4, move || exchange.order())?;
    Ok(Runs { closed, open })
}

fn us(r: &RunResult, p: f64) -> String {
    let h = &r.histograms.response;
    match h.percentiles.get(p) {
        Some(ns) => format!("{:.0} µs", ns as f64 / 1e3),
        None => "-".into(),
    }
}

fn table(runs: &Runs) -> String {
    let mut out = format!("{:<8}{:>14}{:>14}{:>8}\n", "", "closed", "open", "ratio");
    for (name, p) in [
        ("p50", 50.0),
        ("p90", 90.0),
        ("p99", 99.0),
        ("p99.9", 99.9),
        ("p99.99", 99.99),
    ] {
        let at = |r: &RunResult| r.histograms.response.percentiles.get(p).unwrap_or(0) as f64;
        let ratio = at(&runs.open) / at(&runs.closed).max(1.0);
        out.push_str(&format!(
            "{name:<8}{:>14}{:>14}{:>7.0}x\n",
            us(&runs.closed, p),
            us(&runs.open, p),
            ratio
        ));
    }
    out
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let locked = !std::env::args().any(|a| a == "--no-lock");
    let runs = measure(&Setup {
        locked,
        length: Duration::from_secs(10),
        rate: 10_000.0,
        rebuild: REBUILD_TAKES,
    })?;
    println!(
        "order book, {} normalisation: closed loop (1 caller) vs open loop (10,000/s, 4 threads), response from due",
        if locked { "locked" } else { "lock-free" }
    );
    print!("{}", table(&runs));
    for r in [&runs.closed, &runs.open] {
        println!(
            "{}: {} calls, {} failed, achieved {:.0}/s",
            r.label,
            r.counts.completed,
            r.counts.failed.total(),
            r.rate.achieved
        );
    }
    let name = if locked {
        "order-book.html"
    } else {
        "order-book-no-lock.html"
    };
    sojourn::write_html(
        std::path::Path::new(name),
        &[&runs.closed, &runs.open],
        "order book: closed vs open loop",
    )?;
    println!("report: {name}");
    Ok(())
}

/// A shortened run of each design (`cargo test -p sojourn --examples`): the shape the seed
/// found, whatever the machine. The rebuild holds the lock 20 ms of every 100 here (8 in the
/// full run), so its effect stands well clear of a busy test machine's own noise: with the
/// lock, the holds reach the open loop's p99 while the closed loop's one caller meets each of
/// the 20 holds once; without it, the open loop's p90 falls by more than half. The holds delay a
/// fifth of the requests, so they decide p90; a pause of the whole machine does not: one of
/// 35 ms (a CI run met one) delays 1.75% of a 2 s run, enough to reach p99 with or without the
/// lock, and no pause under 200 ms reaches p90. (The release run in docs/library.md shows
/// p99.9 falling.)
///
/// The closed loop is judged at p99, not p99.9: its 20 delayed calls are 20 of however many it
/// completes, which a slow machine makes fewer. A clean-clone CI run on the 2-vCPU VM
/// (2026-11-27, debug build, closed p50 108 µs) completed few enough that they reached its
/// p99.9 (20.3 ms, against the open loop's 24.3); at p99 they stay clear while it completes
/// more than a hundred calls per hold, which the test asserts.
#[test]
fn the_closed_loop_hides_the_lock_and_the_open_loop_does_not() {
    let at = |r: &RunResult, p: f64| r.histograms.response.percentiles.get(p).unwrap() as f64;
    let setup = |locked| Setup {
        locked,
        length: Duration::from_secs(2),
        rate: 5_000.0,
        rebuild: Duration::from_millis(20),
    };
    let locked = measure(&setup(true)).unwrap();
    for r in [&locked.closed, &locked.open] {
        let c = &r.counts;
        assert_eq!(
            c.scheduled,
            c.completed + c.failed.total() + c.censored + c.never_sent
        );
        assert_eq!(c.failed.total(), 0);
    }
    let holds = (setup(true).length.as_millis() / HOUSEKEEPING_EVERY.as_millis()) as u64;
    assert!(
        locked.closed.counts.completed > 100 * holds,
        "the closed loop completed {} calls: too few for its {holds} delayed ones to stay \
         under its p99",
        locked.closed.counts.completed
    );
    assert!(
        at(&locked.open, 99.0) > 3.0 * at(&locked.closed, 99.0),
        "{}",
        table(&locked)
    );
    assert!(at(&locked.open, 99.0) > 10e6, "{}", table(&locked));
    let free = measure(&setup(false)).unwrap();
    assert!(
        at(&free.open, 90.0) * 2.0 < at(&locked.open, 90.0),
        "lock removed:\n{}\nwith the lock:\n{}",
        table(&free),
        table(&locked)
    );
}
