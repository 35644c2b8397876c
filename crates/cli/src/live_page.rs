//! `--dashboard` on the commands of several runs (`compare`, `sweep`, `demo`): bound before
//! any run, fed by every run under its result's label, and ended with the page the command
//! itself writes.
use std::net::SocketAddr;
use std::time::Duration;

use sojourn::dashboard::Dashboard;

use crate::panel::TerminalSinks;

/// The dashboard of a command, and how long it stays up after the command ends.
pub struct LivePage {
    dashboard: Dashboard,
    linger: Duration,
}

/// Binds `addr` (a taken port is bad input naming `--dashboard`) and serves there, printing
/// the URL on stderr before anything else; nothing when `--dashboard` was not given.
pub fn start(addr: Option<SocketAddr>, linger: Duration) -> anyhow::Result<Option<LivePage>> {
    let Some(addr) = addr else {
        return Ok(None);
    };
    let listener = sojourn::dashboard::bind(addr)?;
    Ok(Some(LivePage {
        dashboard: Dashboard::start(listener)?,
        linger,
    }))
}

/// The terminal's sinks, with the page's feed when there is a page.
pub fn sinks(page: Option<&LivePage>) -> TerminalSinks {
    TerminalSinks {
        metrics: None,
        dashboard: page.map(|p| p.dashboard.feeder()),
    }
}

impl LivePage {
    /// A sweep's step finished: the page's table of steps grows by its row.
    pub fn step(&self, step: &sojourn::sweep::Step) {
        let run = sojourn::sweep::step_label(step.target);
        self.dashboard.step(&run, step);
    }

    /// The command is over: the page shows `html`, the report the command wrote, and stays up
    /// for `--dashboard-linger`.
    pub fn end(self, html: String) -> anyhow::Result<()> {
        self.dashboard.end_with_html(html);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        self.dashboard.linger(&rt, self.linger);
        Ok(())
    }
}
