//! How a [`Training`] reads: the live line, `status`'s column and JSON, the run report.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Millis, Training};

/// Metrics on a live line; the others are in `status -o json`.
const LIVE_METRICS: usize = 2;

/// `status -o json`'s `progress`: the documented, stable shape (null when the deciding
/// task printed nothing recognisable).
#[derive(Debug, Serialize, PartialEq)]
pub struct ProgressJson {
    /// The epoch under way (from 1), and how many there are; null when not printed.
    pub epoch: Option<u32>,
    pub epochs: Option<u32>,
    /// Epochs seen to end.
    pub epochs_done: u32,
    /// The step within the epoch, and its steps when known.
    pub step: Option<u64>,
    pub steps: Option<u64>,
    /// The last metrics printed, by name.
    pub metrics: BTreeMap<String, f64>,
    /// The metrics at the last epoch's end.
    pub epoch_metrics: BTreeMap<String, f64>,
    pub steps_per_second: Option<f64>,
    pub seconds_per_epoch: Option<f64>,
    /// The estimate of the time left, as of the last progress line.
    pub seconds_left: Option<u64>,
    /// When the last progress line was printed (RFC 3339).
    pub last_progress_at: Option<String>,
    /// No progress line for longer than the stall bound (`stall_after`); false without one.
    pub stalled: bool,
}

impl ProgressJson {
    pub fn of(t: &Training, stalled: bool) -> Option<ProgressJson> {
        if t.is_empty() {
            return None;
        }
        Some(ProgressJson {
            epoch: t.epoch,
            epochs: t.epochs,
            epochs_done: t.epochs_done,
            step: t.step,
            steps: t.steps,
            metrics: t.metrics.iter().cloned().collect(),
            epoch_metrics: t.epoch_metrics.iter().cloned().collect(),
            steps_per_second: t.steps_per_second().map(round3),
            seconds_per_epoch: t.secs_per_epoch().map(round3),
            seconds_left: t.secs_left().map(|s| s.round() as u64),
            last_progress_at: t.last_at.and_then(rfc3339),
            stalled,
        })
    }
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

fn rfc3339(ms: Millis) -> Option<String> {
    let at = k8s_openapi::jiff::Timestamp::from_millisecond(ms).ok()?;
    Some(at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
}

/// `epoch 7/20` (or `epoch 7`), else `step 120/500` (or `step 120`): `status`'s column.
pub fn short(t: &Training) -> String {
    match (t.epoch, t.epochs, t.step, t.steps) {
        (Some(k), Some(n), _, _) => format!("epoch {k}/{n}"),
        (Some(k), None, _, _) => format!("epoch {k}"),
        (None, _, Some(s), Some(n)) => format!("step {s}/{n}"),
        (None, _, Some(s), None) => format!("step {s}"),
        _ => "-".into(),
    }
}

/// `epoch 7/20, step 120/500, loss 0.31, accuracy 0.9, 8.3 steps/s, about 40 min left`;
/// `metrics`: how many to show (all with `None`).
pub fn line(t: &Training, metrics: Option<usize>) -> String {
    line_with(t, metrics, true)
}

/// [`line`] of a run whose verdict is in (a failed run has no time left to guess).
pub fn line_ended(t: &Training, metrics: Option<usize>) -> String {
    line_with(t, metrics, false)
}

fn line_with(t: &Training, metrics: Option<usize>, estimate: bool) -> String {
    let mut parts = vec![short(t)];
    if t.epoch.is_some()
        && let Some(s) = t.step
    {
        parts.push(match t.steps {
            Some(n) => format!("step {s}/{n}"),
            None => format!("step {s}"),
        });
    }
    let shown = metrics.unwrap_or(usize::MAX);
    parts.extend(
        t.metrics
            .iter()
            .take(shown)
            .map(|(name, v)| format!("{name} {}", value(*v))),
    );
    if let Some(rate) = t.steps_per_second() {
        parts.push(format!("{} steps/s", significant(rate)));
    }
    if t.finished() {
        parts.push("done".into());
    } else if let Some(left) = t.secs_left().filter(|_| estimate) {
        parts.push(format!("about {} left", left_text(left)));
    }
    parts.join(", ")
}

/// The live line's text: the short form of [`line`].
pub fn live(t: &Training) -> String {
    line(t, Some(LIVE_METRICS))
}

/// The run report's lines after the verdict: epochs, time per epoch, final metrics.
pub fn report(t: &Training) -> Option<String> {
    if t.is_empty() {
        return None;
    }
    let mut parts = Vec::new();
    match (t.epochs_done, t.epochs) {
        (0, _) => parts.push(format!("last seen at {}", short(t))),
        (done, Some(n)) => parts.push(format!("{done} of {n} epochs seen to end")),
        (1, None) => parts.push("1 epoch seen to end".to_string()),
        (done, None) => parts.push(format!("{done} epochs seen to end")),
    }
    if let Some(per) = t.secs_per_epoch().filter(|_| t.epochs_done > 0) {
        parts.push(format!("{} per epoch", duration_text(per)));
    }
    let metrics = if t.epoch_metrics.is_empty() {
        &t.metrics
    } else {
        &t.epoch_metrics
    };
    let mut out = format!("training: {}", parts.join(", "));
    if !metrics.is_empty() {
        let named: Vec<String> = metrics
            .iter()
            .map(|(n, v)| format!("{n} {}", value(*v)))
            .collect();
        let last = if t.partial { "last read" } else { "final" };
        out.push_str(&format!("; {last} {}", named.join(", ")));
    }
    if t.partial {
        out.push_str(" (partial: the log could not be read whole)");
    }
    Some(out)
}

/// A metric as printed (Keras prints 4 decimals; shorter when exact).
pub fn value(v: f64) -> String {
    if v != 0.0 && v.abs() < 1e-3 {
        return format!("{v:e}");
    }
    let text = format!("{v:.4}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text.is_empty() || text == "-" || text == "-0" {
        "0".into()
    } else {
        text.to_string()
    }
}

/// Two or three significant figures: `8.3`, `120`, `0.42`.
fn significant(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}").trim_end_matches(".0").to_string()
    } else {
        value((v * 100.0).round() / 100.0)
    }
}

/// `40 min`, `2 h 10 min`, `30 s`: an estimate, rounded as one.
pub fn left_text(secs: f64) -> String {
    let secs = secs.max(0.0).round() as u64;
    match secs {
        0..90 => format!("{secs} s"),
        90..5400 => format!("{} min", (secs + 30) / 60),
        _ => {
            let mins = (secs + 30) / 60;
            format!("{} h {} min", mins / 60, mins % 60)
        }
    }
}

/// `2m 3s`, `45s`, `0.8s`: a measured time.
fn duration_text(secs: f64) -> String {
    if secs < 10.0 {
        return format!("{}s", value((secs * 10.0).round() / 10.0));
    }
    humantime::format_duration(std::time::Duration::from_secs(secs.round() as u64)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn training(lines: &[(Millis, &str)]) -> Training {
        let mut t = Training::default();
        for (at, text) in lines {
            t.read(*at, text, true);
        }
        t
    }

    #[test]
    fn the_lines_a_user_reads() {
        let t = training(&[
            (0, "Epoch 1/20"),
            (
                120_000,
                "500/500 - 120s - loss: 0.5 - accuracy: 0.8 - 240ms/step",
            ),
            (120_500, "Epoch 2/20"),
        ]);
        assert_eq!(short(&t), "epoch 2/20");
        assert_eq!(
            line(&t, None),
            "epoch 2/20, loss 0.5, accuracy 0.8, 4.17 steps/s, about 38 min left"
        );
        assert_eq!(
            report(&t).unwrap(),
            "training: 1 of 20 epochs seen to end, 2m per epoch; final loss 0.5, accuracy 0.8"
        );
        let json = ProgressJson::of(&t, false).unwrap();
        assert_eq!(json.seconds_left, Some(2280));
        assert_eq!(
            json.last_progress_at.as_deref(),
            Some("1970-01-01T00:02:00Z")
        );
        assert_eq!(ProgressJson::of(&Training::default(), false), None);
        assert_eq!(report(&Training::default()), None);
    }

    #[test]
    fn a_finished_training_says_done() {
        let t = training(&[
            (0, "Epoch 2/2"),
            (
                800,
                "5/5 - 1s - loss: 0.7071 - accuracy: 0.5063 - 64ms/step",
            ),
        ]);
        assert_eq!(
            live(&t),
            "epoch 2/2, step 5/5, loss 0.7071, accuracy 0.5063, 15.6 steps/s, done"
        );
        assert_eq!(
            report(&t).unwrap(),
            "training: 1 of 2 epochs seen to end, 0.8s per epoch; final loss 0.7071, accuracy 0.5063"
        );
    }

    #[test]
    fn a_single_epoch_of_unknown_count_is_one_epoch() {
        // Keras 3 prints no `Epoch 1/1` when fit() runs one epoch (seen on an H200 with
        // `--local`: the report said "1 epochs seen to end").
        let t = training(&[(
            0,
            "235/235 - 43s - 183ms/step - accuracy: 0.2277 - loss: 2.1479",
        )]);
        assert!(
            report(&t)
                .unwrap()
                .starts_with("training: 1 epoch seen to end"),
            "{:?}",
            report(&t)
        );
    }

    #[test]
    fn a_report_from_a_log_not_read_whole_says_so() {
        let mut t = training(&[
            (0, "Epoch 2/2"),
            (
                800,
                "5/5 - 1s - loss: 0.7071 - accuracy: 0.5063 - 64ms/step",
            ),
        ]);
        t.partial = true;
        assert_eq!(
            report(&t).unwrap(),
            "training: 1 of 2 epochs seen to end, 0.8s per epoch; last read loss 0.7071, accuracy 0.5063 (partial: the log could not be read whole)"
        );
    }

    #[test]
    fn estimates_read_as_estimates() {
        assert_eq!(left_text(30.4), "30 s");
        assert_eq!(left_text(2400.0), "40 min");
        assert_eq!(left_text(7800.0), "2 h 10 min");
        assert_eq!(value(0.2310), "0.231");
        assert_eq!(value(2.0), "2");
        assert_eq!(value(1e-5), "1e-5");
    }
}
