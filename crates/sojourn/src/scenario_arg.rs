//! `--scenario NAME|FILE` with `--set NAME.PARAM=VALUE` overrides, shared by every command
//! that takes a scenario.
use sojourn_scenario::{builtins, Override, Scenario, ScenarioError};

/// Resolves the scenario; a bad name or file is `--scenario`'s fault, a bad override `--set`'s.
pub fn resolve(name_or_path: &str, sets: &[String]) -> anyhow::Result<Scenario> {
    let mut overrides = Vec::new();
    for given in sets {
        let o: Override = given.parse().map_err(|e| crate::bad_input!("--set: {e}"))?;
        overrides.push(o);
    }
    Scenario::resolve(name_or_path, &overrides).map_err(|e| match e {
        ScenarioError::BadOverride { .. } | ScenarioError::OverrideOnFile { .. } => {
            crate::bad_input!("--set: {e}")
        }
        ScenarioError::UnknownScenario { .. } => crate::bad_input!("--scenario: {e}"),
        // A built-in's defaults are valid, so a field error there comes from a --set value.
        _ if is_builtin(name_or_path) => crate::bad_input!("--set: {e}"),
        _ => crate::bad_input!("--scenario {name_or_path}: {e}"),
    })
}

/// Whether `name` is one of the built-in scenarios rather than the path of a file.
pub fn is_builtin(name: &str) -> bool {
    builtins().iter().any(|b| b.name == name)
}
