//! memtier-like mixed workloads.

/// Whether the arguments ask for the mixed mode.
pub fn wants(_args: &[String]) -> bool {
    false
}

pub fn run_cli(_args: &[String]) -> anyhow::Result<std::process::ExitCode> {
    anyhow::bail!("mixed mode is not built yet")
}
