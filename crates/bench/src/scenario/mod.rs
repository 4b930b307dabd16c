//! Scenario files.
pub fn run_cli(_args: &[String]) -> anyhow::Result<std::process::ExitCode> {
    anyhow::bail!("scenarios are not built yet")
}
