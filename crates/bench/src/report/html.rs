//! Report: html.
pub fn write(_run: &crate::model::Run, _path: &std::path::Path) -> anyhow::Result<()> {
    anyhow::bail!("html reports are not built yet")
}
