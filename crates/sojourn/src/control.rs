//! How a run starts its control hiccup meter: a program that calls
//! [`sojourn_engine::serve_control`] in a process of its own. The `sojourn` binary installs
//! itself (with a hidden subcommand) once at start-up; a library user may install their own
//! program. With none installed, runs have no control meter, nothing is excused as the
//! machine's, and the result says so.
use std::sync::OnceLock;

pub use sojourn_engine::ControlCommand;

static COMMAND: OnceLock<Option<ControlCommand>> = OnceLock::new();

/// Sets the command every later run uses to start its control meter. The first call wins.
pub fn install(command: Option<ControlCommand>) {
    let _ = COMMAND.set(command);
}

/// The installed command, if any.
pub fn command() -> Option<ControlCommand> {
    COMMAND.get().cloned().flatten()
}
