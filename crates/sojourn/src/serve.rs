//! `sojourn serve`: a scenario over HTTP (or gRPC), for `sojourn run` (or any other tool) to
//! measure.
use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use sojourn_scenario::{builtins, Scenario};
use sojourn_server::{serve, AbuseNote, Protocol, ServeOptions};

/// A pathology server as a person describes it (`sojourn serve`'s flags).
#[derive(Debug, Clone)]
pub struct ServeSettings {
    /// A built-in scenario (healthy, hiccup, ramp, gc-pauses, saturation, every-nth, bimodal,
    /// spike) or the path of a scenario TOML file. See --list and docs/scenarios.md.
    pub scenario: String,

    /// Address to listen on; port 0 picks a free one. The chosen address is printed on stdout
    /// as `listening on http://ADDR` (`grpc://ADDR` with --grpc). 0.0.0.0 exposes the server
    /// to the network: only if meant.
    pub listen: String,

    /// Serve the scenario as gRPC over cleartext HTTP/2 (h2c) instead of HTTP/1.1: every
    /// unary call, whatever its method, is the system under test, answered with an empty
    /// message. See docs/grpc.md.
    pub grpc: bool,

    /// Override a built-in's parameter, e.g. `--set hiccup.at=5s`. Repeatable. See --list.
    pub set: Vec<String>,

    /// Write the ground-truth log: one CSV line per /api request with its arrival, start of
    /// service and departure on the server's clock.
    pub truth: Option<PathBuf>,

    /// Serve POST /control/stall?for=1s, which closes the gate on demand.
    pub control: bool,

    /// How long a client may take to send a whole request head, counted from when the
    /// server starts waiting for one; then its connection is closed. Stops slowloris clients,
    /// and also closes connections idle that long (new, or kept alive between requests).
    pub header_timeout: std::time::Duration,

    /// List the built-in scenarios and their parameters, then exit.
    pub list: bool,

    /// Print the scenario in TOML form (a starting point for a file), then exit.
    pub print: bool,
}

/// Serves the scenario until Ctrl-C or SIGTERM (or lists or prints scenarios, when asked),
/// announcing the address it listens on.
pub fn run(args: ServeSettings) -> anyhow::Result<()> {
    if args.list {
        print_builtins();
        return Ok(());
    }
    let scenario = scenario(&args)?;
    if args.print {
        print!("{}", scenario.to_toml());
        return Ok(());
    }
    let addr: SocketAddr = args.listen.trim().parse().map_err(|_| {
        crate::bad_input!(
            "--listen: expected an address like 127.0.0.1:8080 or [::1]:0, got {:?}",
            args.listen
        )
    })?;
    let truth = match &args.truth {
        Some(path) => Some(truth_file(path)?),
        None => None,
    };
    let options = ServeOptions {
        protocol: if args.grpc {
            Protocol::Grpc
        } else {
            Protocol::Http1
        },
        truth,
        control: args.control,
        header_timeout: args.header_timeout,
        on_first_abuse: Some(Box::new(|note: AbuseNote| eprintln!("{note}"))),
        ..ServeOptions::default()
    };
    // 10k connections need 10k descriptors; the default soft limit is often 1024.
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(serve_on(addr, scenario, options, &args))
}

fn scenario(args: &ServeSettings) -> anyhow::Result<Scenario> {
    crate::scenario_arg::resolve(&args.scenario, &args.set)
}

fn truth_file(path: &PathBuf) -> anyhow::Result<Box<dyn Write + Send>> {
    let file = File::create(path).map_err(|e| {
        crate::bad_input!(
            "--truth: cannot create {:?}: {e}",
            path.display().to_string()
        )
    })?;
    Ok(Box::new(BufWriter::new(file)))
}

async fn serve_on(
    addr: SocketAddr,
    scenario: Scenario,
    options: ServeOptions,
    args: &ServeSettings,
) -> anyhow::Result<()> {
    let listener =
        sojourn_server::bind(addr).with_context(|| format!("--listen {addr}: cannot listen"))?;
    let local = listener.local_addr().context("reading the bound address")?;
    // Registered before the announcement: a Ctrl-C the moment it says where it listens still
    // stops it cleanly, with its truth log written.
    let stop = shutdown_signal();
    announce(local, &scenario, args, options.header_timeout)?;
    let summary = serve(listener, scenario, options, stop).await?;
    eprintln!("stopped: {summary}");
    if summary.cut_off > 0 {
        eprintln!(
            "  {} connections or requests were cut off after the grace period",
            summary.cut_off
        );
    }
    Ok(())
}

/// The stdout line scripts parse, then the human context on stderr.
fn announce(
    local: SocketAddr,
    scenario: &Scenario,
    args: &ServeSettings,
    header_timeout: Duration,
) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    let scheme = if args.grpc { "grpc" } else { "http" };
    writeln!(out, "listening on {scheme}://{local}")?;
    out.flush()?;
    eprintln!("serving {scenario}");
    if args.grpc {
        eprintln!(
            "  gRPC over h2c: every unary call is the system under test, answered with an empty message"
        );
    }
    eprintln!("  /api is the system under test; /healthy ignores faults; /scenario describes it");
    if args.control {
        eprintln!("  control on: POST /control/stall?for=1s closes the gate on demand");
    }
    if let Some(path) = &args.truth {
        eprintln!("  truth log: {}", path.display());
    }
    if args.grpc {
        eprintln!(
            "  limits: headers {} KiB, {} calls at once per connection, body {} MiB",
            sojourn_server::MAX_HEAD >> 10,
            sojourn_server::MAX_STREAMS,
            sojourn_server::MAX_BODY >> 20
        );
    } else {
        eprintln!(
            "  limits: request head {} KiB within {}, body {} MiB; abuse is counted, the first of each kind logged",
            sojourn_server::MAX_HEAD >> 10,
            humantime::format_duration(header_timeout),
            sojourn_server::MAX_BODY >> 20
        );
    }
    if !local.ip().is_loopback() {
        eprintln!(
            "  warning: listening on {} is reachable from the network",
            local.ip()
        );
    }
    Ok(())
}

/// Registers SIGINT (Ctrl-C) and SIGTERM now, when called, and resolves on either. (Tokio's
/// `ctrl_c()` would register only when first polled: a signal before that kills the process.)
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{signal, Signal, SignalKind};
    let (mut int, mut term) = (
        signal(SignalKind::interrupt()).ok(),
        signal(SignalKind::terminate()).ok(),
    );
    async move {
        async fn arrives(s: Option<&mut Signal>) {
            match s {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        }
        tokio::select! {
            _ = arrives(int.as_mut()) => {}
            _ = arrives(term.as_mut()) => {}
        }
    }
}

fn print_builtins() {
    for b in builtins() {
        println!("{:<11} {} ({})", b.name, b.summary, b.source);
        for p in b.params {
            let set = format!("{}.{}={}", b.name, p.name, p.default);
            println!("            --set {set:<34} {}", p.help);
        }
    }
}
