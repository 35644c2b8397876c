//! `sojourn serve`: its flags. The command itself is `sojourn::serve`.
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// A built-in scenario (healthy, hiccup, ramp, gc-pauses, saturation, every-nth, bimodal,
    /// spike) or the path of a scenario TOML file. See --list and docs/scenarios.md.
    #[arg(long, value_name = "NAME|FILE", default_value = "healthy")]
    scenario: String,

    /// Address to listen on; port 0 picks a free one. The chosen address is printed on stdout
    /// as `listening on http://ADDR` (`grpc://ADDR` with --grpc). 0.0.0.0 exposes the server
    /// to the network: only if meant.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    listen: String,

    /// Serve the scenario as gRPC over cleartext HTTP/2 (h2c) instead of HTTP/1.1: every
    /// unary call, whatever its method, is the system under test, answered with an empty
    /// message. See docs/grpc.md.
    #[arg(long)]
    grpc: bool,

    /// Override a built-in's parameter, e.g. `--set hiccup.at=5s`. Repeatable. See --list.
    #[arg(long = "set", value_name = "NAME.PARAM=VALUE")]
    set: Vec<String>,

    /// Write the ground-truth log: one CSV line per /api request with its arrival, start of
    /// service and departure on the server's clock.
    #[arg(long, value_name = "FILE")]
    truth: Option<PathBuf>,

    /// Serve POST /control/stall?for=1s, which closes the gate on demand.
    #[arg(long)]
    control: bool,

    /// How long a client may take to send a whole request head, counted from when the
    /// server starts waiting for one; then its connection is closed. Stops slowloris clients,
    /// and also closes connections idle that long (new, or kept alive between requests).
    #[arg(long, value_name = "DURATION", value_parser = sojourn::parse::positive_duration, default_value = "60s")]
    header_timeout: std::time::Duration,

    /// List the built-in scenarios and their parameters, then exit.
    #[arg(long)]
    list: bool,

    /// Print the scenario in TOML form (a starting point for a file), then exit.
    #[arg(long)]
    print: bool,
}

impl From<ServeArgs> for sojourn::serve::ServeSettings {
    fn from(a: ServeArgs) -> Self {
        sojourn::serve::ServeSettings {
            scenario: a.scenario,
            listen: a.listen,
            grpc: a.grpc,
            set: a.set,
            truth: a.truth,
            control: a.control,
            header_timeout: a.header_timeout,
            list: a.list,
            print: a.print,
        }
    }
}

pub fn run(a: ServeArgs) -> anyhow::Result<ExitCode> {
    sojourn::serve::run(a.into())?;
    Ok(ExitCode::SUCCESS)
}
