//! `tf-spawner compare NAME | TAG TAG… [--sort METRIC] [--no-stopped] [-o json|csv]
//! [--local]`: the runs' metrics side by side, from their records (`ops/compare.rs`), as
//! a table and a chart (`metrics/`).

use anyhow::{Result, bail};

use crate::cli::CompareArgs;
use crate::errors::UsageError;
use crate::metrics::chart::{self, Series};
use crate::metrics::early::Objective;
use crate::metrics::table::{self, CompareFormat, Compared, SortBy};
use crate::output;
use crate::settings::Settings;

pub async fn exec(settings: &Settings, args: &CompareArgs) -> Result<()> {
    let sort = match &args.sort {
        Some(text) => {
            Some(SortBy::parse(text).map_err(|e| UsageError::new(format!("--sort {e}")))?)
        }
        None => None,
    };
    let (mut runs, objective, sweeper) = read(settings, args, sort.is_none()).await?;
    let left_out = args.no_stopped.then(|| table::leave_out_stopped(&mut runs));
    if let Some(left) = left_out
        .as_ref()
        .filter(|l| runs.is_empty() && !l.is_empty())
    {
        bail!(
            "every run compared was stopped early ({}); compare them without --no-stopped",
            left.join(", ")
        );
    }
    if let Some(by) = &sort {
        by.check(&runs)
            .map_err(|e| UsageError::new(format!("--sort {e}")))?;
    }
    // Without --sort: the experiment's objective, else val_loss, else loss…
    let sort = sort.or(objective).or_else(|| SortBy::default_for(&runs));
    let best = table::sort(&mut runs, sort.as_ref());
    let experiment = (args.names.len() == 1)
        .then(|| args.names[0].as_str())
        .filter(|n| runs.iter().any(|r| r.experiment.as_deref() == Some(*n)));
    let document = || {
        let mut json = table::to_json(&runs, experiment, sort.as_ref(), best.as_deref());
        json.left_out = left_out.as_deref();
        json
    };
    let text = match args.output {
        CompareFormat::Json => output::Styled::plain(&output::json(&document())?),
        CompareFormat::Yaml => output::Styled::plain(&output::yaml(&document())?),
        CompareFormat::Csv => output::Styled::plain(&table::to_csv(&runs, best.as_deref())),
        CompareFormat::Table => {
            let shown = Shown {
                sort: sort.as_ref(),
                best: best.as_deref(),
                left_out: left_out.as_deref(),
                sweeper: experiment.zip(sweeper.as_deref()),
            };
            table_and_chart(args, &runs, shown)
        }
    };
    output::print_styled(&text)?;
    Ok(())
}

/// What the table shows besides the runs: the sort, the best run, the runs left out.
struct Shown<'a> {
    sort: Option<&'a SortBy>,
    best: Option<&'a str>,
    left_out: Option<&'a [String]>,
    /// The experiment compared, and who runs its sweep now.
    sweeper: Option<(&'a str, &'a str)>,
}

/// The table, the best run's line, the runs `--no-stopped` left out, then the chart
/// (unless `--no-chart`).
fn table_and_chart(args: &CompareArgs, runs: &[Compared], shown: Shown) -> output::Styled {
    let mut text = table::render(runs, shown.sort, shown.best);
    if let Some(tag) = shown.best {
        text.push_str(&format!("best: {tag} (*)\n"));
    }
    if let Some(left) = shown.left_out.filter(|l| !l.is_empty()) {
        text.push_str(&format!("left out, stopped early: {}\n", left.join(", ")));
    }
    // The sweep and the runs a wait or a supervisor follows now (`--detach`): still
    // acted for.
    if let Some((name, by)) = shown.sweeper {
        let by = output::escape_controls(by);
        text.push_str(&format!("followed now: experiment {name} by {by}\n"));
    }
    for run in runs {
        if let Some(by) = &run.followed_by {
            let by = output::escape_controls(by);
            text.push_str(&format!("followed now: {} by {by}\n", run.tag));
        }
    }
    let mut text = output::Styled::plain(&text);
    let metric = args.chart.clone().or(shown.sort.map(|s| s.metric.clone()));
    if let Some(metric) = metric.filter(|_| !args.no_chart) {
        text.push_plain("\n");
        match chart_of(runs, &metric) {
            Some(chart) => text.push(&chart),
            None => text.push_plain(&format!(
                "no run recorded {} per epoch\n",
                output::escape_controls(&metric)
            )),
        }
    }
    text
}

/// The runs compared, when `objective` is asked (no `--sort`) the experiment's recorded
/// objective as the sort, and who runs the sweep of the one experiment named now.
async fn read(
    settings: &Settings,
    args: &CompareArgs,
    objective: bool,
) -> Result<(Vec<Compared>, Option<SortBy>, Option<String>)> {
    let by = |o: Objective| SortBy {
        metric: o.metric,
        lower_first: o.lower,
    };
    if args.local {
        let here = std::env::current_dir()?;
        let runs = crate::ops::compare::local_runs(&here, &args.names)?;
        let objective = objective
            .then(|| crate::ops::compare::local_objective(&here, &args.names))
            .flatten();
        return Ok((runs, objective.map(by), None));
    }
    let cluster = settings.connect()?;
    let judged = crate::ops::compare::judged_runs(&cluster, &args.names).await?;
    let objective = judged.objective.filter(|_| objective);
    Ok((judged.runs, objective.map(by), judged.sweeper))
}

/// The chart of `metric` for every run: its legend names the run and its parameters
/// that differ.
fn chart_of(runs: &[Compared], metric: &str) -> Option<output::Styled> {
    let params = table::differing(runs);
    let series: Vec<Series> = runs
        .iter()
        .map(|r| {
            let shown: Vec<String> = params
                .iter()
                .filter_map(|p| Some(format!("{p}={}", r.params.get(p)?)))
                .collect();
            let label = if shown.is_empty() {
                r.tag.clone()
            } else {
                format!("{} ({})", r.tag, shown.join(", "))
            };
            let points = r.metrics.as_ref().map(|m| m.curve.series(metric));
            Series {
                label,
                points: points.unwrap_or_default(),
            }
        })
        .collect();
    chart::draw(metric, &series, chart::DEFAULT_SIZE, output::fancy_stdout())
}
