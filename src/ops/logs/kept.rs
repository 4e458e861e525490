//! The logs restarts kept (`cluster/attempt_logs.rs`): `logs --attempt N` of an
//! attempt that has ended, and `--save-logs`' copies of them.

use anyhow::Result;

use crate::cluster::Cluster;
use crate::cluster::attempt_logs::{self, Got};
use crate::cluster::pod_logs::LogOptions;
use crate::errors::UsageError;
use crate::output::{self, Styled};
use crate::roles::{Role, Task};

use super::lines::{Prefixes, note, prefixed};
use super::pick::Pick;

/// `logs --attempt N` of an attempt that is not the current one: its kept logs
/// (`cluster/attempt_logs.rs`), in task order, each told once why the attempt ended.
pub(super) async fn attempt(
    cluster: &Cluster,
    tag: &str,
    n: u32,
    current: u32,
    options: &LogOptions,
    pick: &Pick,
    prefixes: &mut Prefixes,
) -> Result<()> {
    if n > current {
        return Err(UsageError::new(format!(
            "--attempt {n}: run '{tag}' has had no attempt {n}: its current one is {current} (0 is the spawn's)"
        ))
        .into());
    }
    if options.follow {
        return Err(UsageError::new(format!(
            "--attempt {n} with -f: attempt {n} of run '{tag}' has ended (its current one is {current}); drop -f"
        ))
        .into());
    }
    let (mut kept, more) = attempt_logs::list(cluster, tag, Some(n)).await?;
    let label = |pod: &str| {
        pod.strip_prefix(&format!("{tag}-"))
            .unwrap_or(pod)
            .to_string()
    };
    kept.retain(|k| pick.tasks.is_empty() || pick.tasks.iter().any(|t| t.name(tag) == k.pod));
    let Some(first) = kept.first() else {
        anyhow::bail!(
            "run '{tag}': no log of attempt {n} was kept (a restart keeps the logs of the attempt it replaces; one made by an earlier version of tf-spawner, or of a pod that never started or was lost with its node, has none)"
        );
    };
    note(&format!("run {tag}: attempt {n} ended: {}", first.ended));
    if more {
        note(&attempt_logs::too_many(tag));
    }
    kept.sort_by_key(|k| task_order(&label(&k.pod)));
    let mut budget = attempt_logs::Budget::default();
    for k in &kept {
        if !print_kept(
            cluster,
            k,
            options,
            prefixes.prefix(&label(&k.pod)),
            &mut budget,
        )
        .await?
        {
            return Ok(());
        }
    }
    Ok(())
}

/// Prints one kept log (read within `budget`), its cuts said in a line; `false` when
/// nothing more is to be printed (the budget spent, stdout closed).
async fn print_kept(
    cluster: &Cluster,
    k: &attempt_logs::Kept,
    options: &LogOptions,
    prefix: Styled,
    budget: &mut attempt_logs::Budget,
) -> Result<bool> {
    if k.dropped > 0 {
        note(&format!(
            "pod {}: the first {} bytes of attempt {}'s log were dropped to keep it under 1 MiB",
            k.pod, k.dropped, k.attempt
        ));
    }
    let (text, cut) = match attempt_logs::text(cluster, k, budget).await? {
        Got::Text(text, cut) => (text, cut),
        Got::Spent(line) => {
            line.iter().for_each(|l| note(l));
            return Ok(false);
        }
    };
    let shown = match options.tail {
        Some(t) => last_lines(&text, t),
        None => &text,
    };
    if !output::print_styled(&prefixed(&prefix, shown, options.raw))? {
        return Ok(false);
    }
    if let Some(cut) = cut {
        note(&cut);
    }
    Ok(true)
}

/// Task order of a pod's label (`worker-1`): the task, then the label.
fn task_order(label: &str) -> (Option<Task>, String) {
    let task = label.rsplit_once('-').and_then(|(r, i)| {
        Some(Task {
            role: Role::parse(r)?,
            index: i.parse().ok()?,
        })
    });
    (task, label.to_string())
}

/// `--save-logs`: the kept logs of the attempts restarts replaced, each in
/// `DIR/POD.attempt-N.log`; returns how many were written.
pub(crate) async fn save_kept(
    cluster: &Cluster,
    tag: &str,
    dir: &std::path::Path,
) -> Result<usize> {
    let (kept, more) = attempt_logs::list(cluster, tag, None).await?;
    if more {
        output::warning(&attempt_logs::too_many(tag));
    }
    let mut budget = attempt_logs::Budget::default();
    let mut written = 0;
    for k in &kept {
        let (text, cut) = match attempt_logs::text(cluster, k, &mut budget).await? {
            Got::Text(text, cut) => (text, cut),
            Got::Spent(line) => {
                line.iter().for_each(|l| output::warning(l));
                break;
            }
        };
        let path = dir.join(format!("{}.attempt-{}.log", k.pod, k.attempt));
        std::fs::write(&path, &text)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
        written += 1;
        if let Some(cut) = cut {
            output::warning(&cut);
        }
    }
    Ok(written)
}

/// The last `n` lines of `text`.
fn last_lines(text: &str, n: u64) -> &str {
    let n = usize::try_from(n).unwrap_or(usize::MAX);
    let body = text.strip_suffix('\n').unwrap_or(text);
    match body.rmatch_indices('\n').nth(n.saturating_sub(1)) {
        _ if n == 0 => "",
        Some((i, _)) => &text[i + 1..],
        None => text,
    }
}
