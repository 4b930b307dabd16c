//! `--json FILE`: the whole `Run` as JSON (latencies summarised in
//! microseconds, durations in seconds), for scripts and later comparison.

use crate::model::Run;
use anyhow::Context;
use std::path::Path;

pub fn to_string(run: &Run) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(run)?)
}

pub fn write(run: &Run, path: &Path) -> anyhow::Result<()> {
    let text = to_string(run)?;
    std::fs::write(path, text + "\n").with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Measure, Outcome, Step, Target};
    use std::time::Duration;

    #[test]
    fn a_run_round_trips_through_json_values() {
        let mut m = Measure::empty();
        m.ok = 10;
        m.failed = 2;
        m.elapsed = Duration::from_millis(500);
        m.latency.record(Duration::from_micros(250));
        m.failure_kinds.push(("ERR nope".into(), 2));
        let mut run = Run::new("t", vec![Target::new("a", "127.0.0.1:1")]);
        run.steps = vec![Step {
            name: "SET".into(),
            outcomes: vec![
                Outcome::Done(Box::new(m)),
                Outcome::Unsupported {
                    reason: "no".into(),
                },
            ],
        }];
        let v: serde_json::Value = serde_json::from_str(&to_string(&run).unwrap()).unwrap();
        let done = &v["steps"][0]["outcomes"][0];
        assert_eq!(done["status"], "done");
        assert_eq!(done["ok"], 10);
        assert_eq!(done["elapsed"], 0.5);
        assert_eq!(done["failure_kinds"][0][0], "ERR nope");
        assert!((done["latency"]["percentiles_us"][0][1].as_f64().unwrap() - 250.0).abs() < 1.0);
        assert_eq!(v["steps"][0]["outcomes"][1]["status"], "unsupported");
        // How, when and where the run was made.
        assert!(v["meta"]["command_line"].is_string());
        assert!(v["meta"]["date"].as_str().unwrap().ends_with('Z'));
        assert!(v["meta"]["host"]["cores"].as_u64().unwrap() >= 1);
        assert!(v["meta"]["host"]["model"].is_string());
        assert!(v["targets"][0]["version"].is_null());
    }
}
