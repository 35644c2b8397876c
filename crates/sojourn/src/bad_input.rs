//! An error in what the user asked for: the binary exits 2 on it.
use std::fmt;

/// An error in what the user asked for. Its message names the flag (or the file and line, or
/// the plan file and key), what was given and what is accepted.
#[derive(Debug)]
pub struct BadInput(pub String);

impl fmt::Display for BadInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

/// Whether `e` (or one of its causes) is a [`BadInput`].
pub fn is_bad_input(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.is::<BadInput>())
}

/// Shorthand for returning a [`BadInput`] error.
#[macro_export]
macro_rules! bad_input {
    ($($arg:tt)*) => { anyhow::Error::new($crate::BadInput(format!($($arg)*))) };
}
