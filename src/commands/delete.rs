//! `tf-spawner -d [-t TAG]`: delete every object of a run.

use std::io::{BufRead, IsTerminal};

use anyhow::{Result, bail};

use crate::cli::SpawnArgs;
use crate::cluster::ObjectRef;
use crate::errors::UsageError;
use crate::ops::{delete, summary};
use crate::output;
use crate::plan::podgroup::Gang;
use crate::render::OutputFormat;
use crate::settings::Settings;

pub async fn exec(settings: &Settings, args: &SpawnArgs) -> Result<()> {
    // `--timeout` counts from here: the deletes are part of the time it bounds.
    let started = std::time::Instant::now();
    if args.randomize_tag {
        return Err(UsageError::new(
            "-r makes a new tag and cannot be used with -d; name the run with -t TAG",
        )
        .into());
    }
    if let Some(name) = &args.experiment {
        return experiment(settings, args, name).await;
    }
    if let Some(age) = args.older_than.filter(|_| args.finished) {
        return finished(settings, args, age).await;
    }
    let tag = args.tag.as_str();
    let cluster = settings.connect()?;
    let ns = cluster.namespace().to_string();

    if !args.yes && std::io::stdin().is_terminal() {
        let found = delete::existing(&cluster, tag, &Gang::ALL, true).await?;
        if found.is_empty() {
            return not_found(&cluster, tag, &ns, args).await;
        }
        let shown: Vec<String> = found.iter().map(ToString::to_string).collect();
        output::eprint(&format!("{}\n", shown.join("\n")));
        if !confirm(&format!(
            "delete these {} objects of run '{tag}' in namespace {ns}? [y/N] ",
            found.len()
        ))
        .await?
        {
            bail!("aborted; nothing was deleted");
        }
    }

    let deleted = delete::delete(&cluster, tag, args.max_in_flight).await;
    let nothing = deleted.removed.is_empty() && deleted.failed.is_empty();
    // What was deleted is printed even when some of it failed (the error follows on stderr).
    if !nothing {
        report(tag, &ns, &deleted.removed, args.output)?;
    }
    for note in &deleted.notes {
        output::note(note);
    }
    if let Some(err) = delete::failure(&deleted, tag, &ns) {
        return Err(err);
    }
    if nothing {
        return not_found(&cluster, tag, &ns, args).await;
    }
    if args.wait {
        if args.output.is_some() {
            // The summary stays parseable: the wait's messages are not added to it.
            output::silence();
        }
        delete::wait_gone(&cluster, tag, args.timeout, started).await?;
    }
    Ok(())
}

/// `-d --experiment NAME`: every object of the experiment's runs, after the list and
/// the question (as for a run), by the experiment's label in one pass per kind.
async fn experiment(settings: &Settings, args: &SpawnArgs, name: &str) -> Result<()> {
    if let Some(problem) = crate::labels::label_value_problem(name) {
        return Err(UsageError::new(format!(
            "--experiment \"{}\" {problem}",
            output::escape_controls(name)
        ))
        .into());
    }
    let cluster = settings.connect()?;
    let ns = cluster.namespace().to_string();
    let which = delete::Selected::Experiment(name);
    if !args.yes && std::io::stdin().is_terminal() {
        let found =
            delete::existing_selected(&cluster, &which.selector(), &Gang::ALL, true).await?;
        if found.is_empty() {
            return no_experiment(name, &which, &ns, args.ignore_not_found);
        }
        let shown: Vec<String> = found.iter().map(ToString::to_string).collect();
        output::eprint(&format!("{}\n", shown.join("\n")));
        let question = format!(
            "delete these {} objects of experiment '{name}' in namespace {ns}? [y/N] ",
            found.len()
        );
        if !confirm(&question).await? {
            bail!("aborted; nothing was deleted");
        }
    }
    let deleted = delete::delete_experiment(&cluster, name, args.max_in_flight).await;
    let nothing = deleted.removed.is_empty() && deleted.failed.is_empty();
    if !nothing {
        report(name, &ns, &deleted.removed, args.output)?;
    }
    for note in &deleted.notes {
        output::note(note);
    }
    match delete::failure_of(&deleted, which, &ns) {
        Some(err) => Err(err),
        None if nothing => no_experiment(name, &which, &ns, args.ignore_not_found),
        None => Ok(()),
    }
}

/// `-d --experiment NAME` found nothing: exit 1 in one line, or with
/// `--ignore-not-found` the "nothing labelled" line and exit 0.
fn no_experiment(name: &str, which: &delete::Selected, ns: &str, ignore: bool) -> Result<()> {
    if ignore {
        output::print(&format!(
            "nothing labelled {} in namespace {ns}\n",
            which.selector()
        ))?;
        return Ok(());
    }
    bail!(
        "nothing labelled {} in namespace {ns}: no experiment '{name}' there (tf-spawner list -n {ns}; --ignore-not-found makes this exit 0)",
        which.selector()
    )
}

/// `-d --finished --older-than AGE`: every run whose verdict is final (Succeeded or
/// Failed) and that was made at least AGE ago, an experiment whole or not at all
/// (`ops::delete::old_runs`), after the list and the question; the experiments' records
/// first, then one run after the other, each as `-d -t TAG`.
async fn finished(settings: &Settings, args: &SpawnArgs, age: std::time::Duration) -> Result<()> {
    let cluster = settings.connect()?;
    let ns = cluster.namespace().to_string();
    let delete::OldRuns {
        runs: old,
        records,
        kept,
    } = delete::old_runs(&cluster, age).await?;
    for (name, why) in &kept {
        output::note(&format!(
            "experiment {name} is kept whole: {why} (its runs and its record go together)"
        ));
    }
    let shown = crate::duration::age(age.as_secs());
    if old.is_empty() && records.is_empty() {
        output::print(&format!(
            "no finished run older than {shown} in namespace {ns}\n"
        ))?;
        return Ok(());
    }
    if !args.yes
        && std::io::stdin().is_terminal()
        && !confirm_old(&old, &records, &shown, &ns).await?
    {
        bail!("aborted; nothing was deleted");
    }
    let mut failed = Vec::new();
    for record in &records {
        match delete::remove_record(&cluster, record).await {
            Ok(object) => report(&record.name, &ns, &[object], args.output)?,
            Err(e) => failed.push(format!("{e:#}")),
        }
    }
    for run in &old {
        let deleted = delete::delete(&cluster, &run.tag, args.max_in_flight).await;
        report(&run.tag, &ns, &deleted.removed, args.output)?;
        for note in &deleted.notes {
            output::note(note);
        }
        if let Some(err) = delete::failure(&deleted, &run.tag, &ns) {
            failed.push(format!("{err:#}"));
        }
    }
    match failed.is_empty() {
        true => Ok(()),
        false => bail!("{}", failed.join("; ")),
    }
}

/// The runs and records `-d --finished --older-than` would delete, listed on stderr,
/// and the question.
async fn confirm_old(
    old: &[crate::ops::list::RunJson],
    records: &[crate::cluster::experiment::Listed],
    shown: &str,
    ns: &str,
) -> Result<bool> {
    let rows: Vec<String> = old
        .iter()
        .map(|r| {
            let age = r
                .age_seconds
                .map_or_else(|| "-".into(), crate::duration::age);
            format!("{}  {}  {age}", r.tag, r.verdict)
        })
        .chain(
            records
                .iter()
                .map(|r| format!("{}  experiment's record", r.name)),
        )
        .collect();
    output::eprint(&format!("{}\n", rows.join("\n")));
    let question = format!(
        "delete these {} finished runs older than {shown} in namespace {ns}{}? [y/N] ",
        old.len(),
        match records.len() {
            0 => String::new(),
            n => format!(", and {n} experiments' records"),
        }
    );
    confirm(&question).await
}

/// `deleted pod/…` lines, or with `-o json|yaml` the summary
/// `{"tag","namespace","deleted":[{"kind","name"}]}` (see `ops/summary.rs`). A
/// closed stdout ends the report, not the command.
fn report(tag: &str, ns: &str, removed: &[ObjectRef], format: Option<OutputFormat>) -> Result<()> {
    if let Some(format) = format {
        let text = summary::render(&summary::deleted(tag, ns, removed), format)?;
        output::print(&text)?;
        return Ok(());
    }
    let mut text = String::new();
    for object in removed {
        text.push_str(&format!("deleted {object}\n"));
    }
    if removed.is_empty() {
        text = format!("nothing labelled training_attempt={tag} in namespace {ns}\n");
    }
    output::print(&text)?;
    Ok(())
}

/// Nothing had the tag: exit 1 in one line naming the runs there (a mistyped tag), as
/// every verb's "nothing matched"; with `--ignore-not-found` (deleting twice in a
/// pipeline) the "nothing labelled" line and exit 0.
async fn not_found(
    cluster: &crate::cluster::Cluster,
    tag: &str,
    ns: &str,
    args: &SpawnArgs,
) -> Result<()> {
    if args.ignore_not_found {
        return report(tag, ns, &[], args.output);
    }
    let runs = crate::ops::list::list(cluster, false)
        .await
        .unwrap_or_default();
    let there = if runs.is_empty() {
        "no run is there".to_string()
    } else {
        let tags: Vec<&str> = runs.iter().map(|r| r.tag.as_str()).collect();
        format!("the runs there: {}", tags.join(", "))
    };
    bail!(
        "no run tagged '{tag}' in namespace {ns}; {there} (tf-spawner list -n {ns}; --ignore-not-found makes this exit 0)"
    )
}

/// Asks on stderr and reads the answer from stdin, in a thread of its own so that
/// Ctrl-C and SIGTERM still end the wait (130, 143; nothing deleted).
async fn confirm(question: &str) -> Result<bool> {
    // Caught before the question is shown: an answer of Ctrl-C must not kill us.
    let mut stop = crate::signals::Stop::listen();
    output::eprint(question);
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("confirm".into())
        .spawn(move || {
            let mut answer = String::new();
            // An answer is a word: a bounded read, whatever is typed or pasted.
            let read = std::io::Read::take(std::io::stdin().lock(), 1024).read_line(&mut answer);
            let _ = tx.send(read.map(|_| answer));
        })?;
    tokio::select! {
        answer = rx => {
            let answer = answer.map_err(|_| anyhow::anyhow!("the answer could not be read"))??;
            Ok(matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes"))
        }
        code = stop.requested() => {
            output::eprint("\n");
            Err(crate::errors::ExitError::new(code, "interrupted; nothing was deleted").into())
        }
    }
}
