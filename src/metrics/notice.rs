//! `--notify`'s message (pure): where it goes (a command, or an http(s) URL), and the
//! summary of a run's or an experiment's end: the JSON a command reads on its stdin and
//! a URL is sent (with a Slack- and Mattermost-compatible `text`), and the variables a
//! command gets. `ops/notify.rs` sends it.

use std::collections::BTreeMap;

use serde::Serialize;

use super::RunMetrics;
use super::cost::Cost;
use super::winner::{Results, Winner};

/// At most this many of the failed task's last lines go in a notice, each cut to
/// [`LINE_CHARS`] characters; the reason is cut to [`REASON_CHARS`].
pub const LAST_LINES: usize = 20;
pub const LINE_CHARS: usize = 500;
pub const REASON_CHARS: usize = 1000;

/// Where a notice goes: `--notify`'s value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A command line, run by `sh -c`.
    Command(String),
    /// An `http://` or `https://` URL, sent the JSON by a POST.
    Url(String),
}

impl Target {
    /// A value that starts with `http://` or `https://` is a URL; any other is a
    /// command line.
    pub fn parse(text: &str) -> Result<Target, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err(
                "must name a command (run by sh -c) or an http:// or https:// URL".to_string(),
            );
        }
        let lower = text.to_ascii_lowercase();
        if !(lower.starts_with("http://") || lower.starts_with("https://")) {
            return Ok(Target::Command(text.to_string()));
        }
        match text.parse::<http::Uri>() {
            Ok(uri) if uri.host().is_some_and(|h| !h.is_empty()) => {
                Ok(Target::Url(text.to_string()))
            }
            _ => Err(format!("\"{text}\" is not a valid URL")),
        }
    }
}

/// A command as given; a URL without its path, which is often the webhook's secret
/// (`https://hooks.slack.com/…`), and without its `user:password@`: what `config` and a
/// warning show.
impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Command(c) => f.write_str(c),
            Target::Url(u) => match u.parse::<http::Uri>() {
                Ok(uri) => write!(
                    f,
                    "{}://{}{}/…",
                    uri.scheme_str().unwrap_or("https"),
                    uri.host().unwrap_or(""),
                    uri.port().map(|p| format!(":{p}")).unwrap_or_default()
                ),
                Err(_) => f.write_str("(a URL)"),
            },
        }
    }
}

/// How a run ended, for a notice.
#[derive(Debug, Clone, Default)]
pub struct Ending {
    pub tag: String,
    /// The run's namespace; `None` for a `--local` run.
    pub namespace: Option<String>,
    /// `Succeeded`, `Failed`, `TimedOut` (the wait gave up, the run goes on) or `Error`
    /// (the wait could not go on).
    pub verdict: &'static str,
    pub exit_code: u8,
    /// The kind of failure (`exited`, `removed`, `stalled`, `cannot_start`,
    /// `not_started`, `error`); `None` for a success, a time-out, a cancel.
    pub failure: Option<&'static str>,
    /// The error line the command ends with; `None` for a success.
    pub reason: Option<String>,
    /// Seconds from the first task's start to the deciding task's end, if known.
    pub duration_seconds: Option<u64>,
    pub metrics: Option<RunMetrics>,
    /// The task that failed, and its last lines.
    pub failed_task: Option<String>,
    pub last_lines: String,
}

/// The notice's JSON (docs/reference.md, "Notify").
#[derive(Debug, Clone, Serialize)]
pub struct Notice {
    /// One line for a chat (Slack's and Mattermost's incoming webhooks show `text`).
    pub text: String,
    /// `run`, or `experiment` (a sweep's end).
    pub kind: &'static str,
    pub tag: String,
    pub namespace: Option<String>,
    pub local: bool,
    pub verdict: String,
    pub exit_code: u8,
    /// The kind of failure: `exited`, `removed`, `stalled`, `cannot_start`,
    /// `not_started`, `error` (`Ending::failure`).
    pub failure: Option<&'static str>,
    pub reason: Option<String>,
    pub duration_seconds: Option<u64>,
    pub restarts: u32,
    pub epochs_done: Option<u32>,
    /// The training's last metrics (each at the last epoch's end).
    pub metrics: BTreeMap<String, f64>,
    pub cost: Option<Cost>,
    pub failed_task: Option<String>,
    pub last_lines: Vec<String>,
    /// An experiment's runs by verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs: Option<BTreeMap<String, u32>>,
    /// An experiment's best run (its `metrics` are the notice's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best: Option<Winner>,
}

fn cut(text: &str, chars: usize) -> String {
    let mut out: String = text.chars().take(chars).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

/// An experiment's end, as its notice tells it.
pub struct ExperimentEnd<'a> {
    pub name: &'a str,
    /// Its namespace; `None` for `--local`.
    pub namespace: Option<&'a str>,
    /// Each run's tag and verdict word.
    pub runs: &'a [(String, &'a str)],
    /// How long the sweep took.
    pub seconds: Option<u64>,
    /// What its runs held, and its best run.
    pub results: Results,
}

impl Notice {
    /// The notice of a run's end.
    pub fn of_run(end: Ending) -> Notice {
        let m = end.metrics.as_ref();
        let lines: Vec<&str> = end.last_lines.lines().collect();
        let last_lines = lines[lines.len().saturating_sub(LAST_LINES)..]
            .iter()
            .map(|l| cut(l, LINE_CHARS))
            .collect();
        let mut notice = Notice {
            text: String::new(),
            kind: "run",
            local: end.namespace.is_none(),
            namespace: end.namespace,
            verdict: end.verdict.to_string(),
            exit_code: end.exit_code,
            failure: end.failure,
            reason: end.reason.as_deref().map(|r| cut(r, REASON_CHARS)),
            duration_seconds: end.duration_seconds,
            restarts: m.map_or(0, |m| m.restarts),
            epochs_done: m.map(|m| m.epochs_done).filter(|e| *e > 0),
            metrics: m.map(|m| m.last.clone()).unwrap_or_default(),
            cost: m.and_then(|m| m.cost),
            failed_task: end.failed_task,
            last_lines,
            runs: None,
            best: None,
            tag: end.tag,
        };
        notice.text = notice.line();
        notice
    }

    /// The notice of an experiment's end: its runs by verdict, failed unless every run
    /// succeeded (`exit_code` 0); the sweep's time, what its runs held, and its best
    /// run, whose final metrics and epochs are the notice's.
    pub fn of_experiment(end: ExperimentEnd<'_>, exit_code: u8, reason: Option<String>) -> Notice {
        let ExperimentEnd {
            name,
            namespace,
            runs,
            seconds,
            results,
        } = end;
        let mut counts: BTreeMap<String, u32> = BTreeMap::new();
        for (_, verdict) in runs {
            *counts.entry(verdict.to_string()).or_default() += 1;
        }
        let verdict = if exit_code == 0 {
            "Succeeded"
        } else {
            "Failed"
        };
        let mut notice = Notice {
            text: String::new(),
            kind: "experiment",
            tag: name.to_string(),
            namespace: namespace.map(str::to_string),
            local: namespace.is_none(),
            verdict: verdict.to_string(),
            exit_code,
            failure: None,
            reason: reason.as_deref().map(|r| cut(r, REASON_CHARS)),
            duration_seconds: seconds,
            restarts: 0,
            epochs_done: results.best.as_ref().map(|b| b.epochs_done),
            metrics: results
                .best
                .as_ref()
                .map(|b| b.metrics.clone())
                .unwrap_or_default(),
            cost: results.cost,
            failed_task: None,
            last_lines: Vec::new(),
            runs: Some(counts),
            best: results.best,
        };
        notice.text = notice.line();
        notice
    }

    /// `run exp-3: Failed (exit 3) after 1h 2m: worker-1 exited 1; val_loss 0.031
    /// after 12 epochs; held 2.0 task-hours, …`.
    fn line(&self) -> String {
        let local = if self.local { " (local)" } else { "" };
        let mut line = format!("{} {}{local}: {}", self.kind, self.tag, self.verdict);
        if self.exit_code != 0 {
            line.push_str(&format!(" (exit {})", self.exit_code));
        }
        if let Some(s) = self.duration_seconds {
            let took = humantime::format_duration(std::time::Duration::from_secs(s));
            line.push_str(&format!(" after {took}"));
        }
        if let Some(r) = &self.reason {
            line.push_str(&format!(": {r}"));
        }
        if let Some(runs) = &self.runs {
            let counts: Vec<String> = runs.iter().map(|(v, n)| format!("{n} {v}")).collect();
            line.push_str(&format!("; runs: {}", counts.join(", ")));
        }
        let headline = super::objective(self.metrics.keys().map(String::as_str))
            .and_then(|n| self.metrics.get_key_value(n))
            .filter(|_| self.best.is_none());
        if let Some(best) = &self.best {
            line.push_str(&format!("; best {}", best.line()));
        }
        if let Some((name, value)) = headline {
            line.push_str(&format!("; {name} {}", super::number(*value)));
            if let Some(e) = self.epochs_done {
                line.push_str(&format!(" after {e} epochs"));
            }
        }
        if self.restarts > 0 {
            let s = if self.restarts == 1 { "" } else { "s" };
            line.push_str(&format!("; {} restart{s}", self.restarts));
        }
        if let Some(c) = &self.cost {
            let whose = if self.runs.is_some() { "the runs " } else { "" };
            line.push_str(&format!("; {whose}{}", c.line()));
        }
        line
    }

    /// The variables a command gets: `TF_SPAWNER_VERDICT`, `…_TAG`, `…_EXIT_CODE`,
    /// `…_REASON`, `…_NAMESPACE`, `…_NOTICE_KIND`, `…_TEXT`.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("TF_SPAWNER_VERDICT", self.verdict.clone()),
            ("TF_SPAWNER_TAG", self.tag.clone()),
            ("TF_SPAWNER_EXIT_CODE", self.exit_code.to_string()),
            ("TF_SPAWNER_REASON", self.reason.clone().unwrap_or_default()),
            (
                "TF_SPAWNER_NAMESPACE",
                self.namespace.clone().unwrap_or_default(),
            ),
            ("TF_SPAWNER_NOTICE_KIND", self.kind.to_string()),
            ("TF_SPAWNER_TEXT", self.text.clone()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_urls_userinfo_and_path_are_never_shown() {
        let t = Target::parse("https://bot:s3cret@hooks.example.com:8443/T0/B1/xyz").unwrap();
        assert_eq!(t.to_string(), "https://hooks.example.com:8443/…");
        let t = Target::parse("http://[::1]:9/x").unwrap();
        assert_eq!(t.to_string(), "http://[::1]:9/…");
    }

    #[test]
    fn a_url_is_told_from_a_command_by_its_scheme() {
        assert_eq!(
            Target::parse("https://hooks.example.com/x"),
            Ok(Target::Url("https://hooks.example.com/x".into()))
        );
        assert_eq!(
            Target::parse("HTTP://127.0.0.1:8080/"),
            Ok(Target::Url("HTTP://127.0.0.1:8080/".into()))
        );
        assert_eq!(
            Target::parse("curl -d @- https://x"),
            Ok(Target::Command("curl -d @- https://x".into()))
        );
        assert_eq!(
            Target::parse("./notify.sh"),
            Ok(Target::Command("./notify.sh".into()))
        );
        assert!(Target::parse(" ").is_err());
        let secret = Target::parse("https://hooks.example.com/services/T0/B0/secret").unwrap();
        assert_eq!(secret.to_string(), "https://hooks.example.com/…");
        assert_eq!(
            Target::parse("https://"),
            Err("\"https://\" is not a valid URL".into())
        );
    }

    #[test]
    fn a_failed_runs_notice_says_why_and_keeps_the_last_lines() {
        let lines: String = (1..=30).map(|i| format!("line {i}\n")).collect();
        let mut metrics = RunMetrics {
            epochs_done: 3,
            restarts: 1,
            ..RunMetrics::default()
        };
        metrics.last.insert("loss".into(), 0.25);
        let n = Notice::of_run(Ending {
            tag: "exp".into(),
            namespace: Some("team-a".into()),
            verdict: "Failed",
            exit_code: 3,
            failure: Some("exited"),
            reason: Some("run 'exp' failed: worker-1 exited 1".into()),
            duration_seconds: Some(75),
            metrics: Some(metrics),
            failed_task: Some("worker-1".into()),
            last_lines: lines,
        });
        assert_eq!(
            n.text,
            "run exp: Failed (exit 3) after 1m 15s: run 'exp' failed: worker-1 exited 1; loss 0.25 after 3 epochs; 1 restart"
        );
        assert_eq!(n.last_lines.len(), LAST_LINES);
        assert_eq!(n.last_lines[0], "line 11");
        let json = serde_json::to_value(&n).unwrap();
        assert_eq!(json["restarts"], 1);
        assert_eq!(json["metrics"]["loss"], 0.25);
        assert_eq!(json["local"], false);
        assert_eq!(json["failure"], "exited");
        let env = n.env();
        assert!(env.contains(&("TF_SPAWNER_VERDICT", "Failed".into())));
        assert!(env.contains(&("TF_SPAWNER_EXIT_CODE", "3".into())));
    }

    #[test]
    fn an_experiments_notice_counts_its_runs() {
        let runs = [
            ("e-1".to_string(), "Succeeded"),
            ("e-2".to_string(), "Failed"),
            ("e-3".to_string(), "Succeeded"),
        ];
        let end = ExperimentEnd {
            name: "e",
            namespace: None,
            runs: &runs,
            seconds: None,
            results: Results::default(),
        };
        let n = Notice::of_experiment(end, 3, Some("1 of 3 runs failed".into()));
        assert_eq!(
            n.text,
            "experiment e (local): Failed (exit 3): 1 of 3 runs failed; runs: 1 Failed, 2 Succeeded"
        );
        assert_eq!(n.runs.as_ref().unwrap()["Succeeded"], 2);
    }

    #[test]
    fn an_experiments_notice_names_its_best_run_with_its_metrics_time_and_cost() {
        let held = crate::metrics::cost::Held {
            task_seconds: 3600,
            gpu_seconds: 0,
        };
        let cost = Cost {
            total: held,
            training: held,
            ..Cost::default()
        };
        let best = Winner {
            tag: "e-2".into(),
            params: BTreeMap::from([("lr".to_string(), "0.01".to_string())]),
            metric: "val_loss".into(),
            order: "ascending",
            value: 0.25,
            verdict: Some("Succeeded".into()),
            duration_seconds: Some(60),
            epochs_done: 2,
            metrics: BTreeMap::from([("val_loss".to_string(), 0.3)]),
            cost: Some(cost),
        };
        let runs = [
            ("e-1".to_string(), "Succeeded"),
            ("e-2".to_string(), "Succeeded"),
        ];
        let results = Results {
            best: Some(best),
            cost: Some(cost.plus(&cost)),
        };
        let end = ExperimentEnd {
            name: "e",
            namespace: Some("ns"),
            runs: &runs,
            seconds: Some(150),
            results,
        };
        let n = Notice::of_experiment(end, 0, None);
        assert_eq!(
            n.text,
            "experiment e: Succeeded after 2m 30s; runs: 2 Succeeded; best e-2 (lr=0.01): val_loss 0.25, 1m, held 1.0 task-hours; the runs held 2.0 task-hours: 0.00 waiting for the last task to start, 2.0 training"
        );
        let json = serde_json::to_value(&n).unwrap();
        assert_eq!(json["metrics"]["val_loss"], 0.3);
        assert_eq!(json["duration_seconds"], 150);
        assert_eq!(json["cost"]["total"]["task_seconds"], 7200);
        assert_eq!(json["epochs_done"], 2);
        assert_eq!(json["best"]["tag"], "e-2");
        assert_eq!(json["best"]["metric"], "val_loss");
        assert_eq!(json["best"]["value"], 0.25);
    }
}
