//! How a log's lines are shown: each after its task's prefix ([`Prefixes`]: padded,
//! coloured per task on a terminal), made safe for the terminal unless `--raw`, and
//! the notes on stderr (a pod with no log yet: [`no_log`]).

use std::collections::BTreeMap;

use crate::cluster::pod_logs;
use crate::output::{self, Styled};
use crate::verdict::{PodView, Tracker};

/// Task prefixes: padded to the longest task id known at the start, coloured per task.
pub struct Prefixes {
    width: usize,
    colour: bool,
    index: BTreeMap<String, usize>,
}

impl Prefixes {
    pub fn new(tracker: &Tracker, colour: bool) -> Prefixes {
        let mut labels: Vec<(Option<crate::roles::Task>, String)> = tracker
            .tasks()
            .into_iter()
            .map(|t| (Some(t), t.id()))
            .chain(tracker.live().map(|v| (v.task, v.label())))
            .collect();
        labels.sort();
        labels.dedup();
        let width = labels.iter().map(|(_, l)| l.len()).max().unwrap_or(0);
        let mut index = BTreeMap::new();
        for (_, label) in labels {
            let next = index.len();
            index.entry(label).or_insert(next);
        }
        Prefixes {
            width,
            colour,
            index,
        }
    }

    pub fn prefix(&mut self, label: &str) -> Styled {
        let next = self.index.len();
        let n = *self.index.entry(label.to_string()).or_insert(next);
        output::prefix(label, self.width, self.colour.then_some(n))
    }
}

/// Prefixes every line of `text`; a last line without a newline gets one.
/// `text`'s lines, each after `prefix`; unless `raw` (`logs --raw`), each made safe for
/// the terminal ([`output::terminal_text`]): a pod's log may carry escape sequences.
pub(super) fn prefixed(prefix: &Styled, text: &str, raw: bool) -> Styled {
    let mut out = Styled::new();
    // The kubelet's notice for a container it no longer has is no log line.
    for line in text.lines().filter(|l| !pod_logs::kubelet_notice(l)) {
        out.push(prefix);
        out.push(&shown(line, raw));
        out.push_plain("\n");
    }
    out
}

/// A log line as shown: as it is with `--raw`, else made safe for the terminal.
pub(super) fn shown(line: &str, raw: bool) -> Styled {
    if raw {
        Styled::unaltered(line)
    } else {
        Styled::plain(line)
    }
}

pub(super) fn note(text: &str) {
    output::note(text);
}

/// Why a pod that has not started (see [`PodView::started`]) has no log.
pub fn no_log(pod: &PodView) -> String {
    let why = pod
        .waiting
        .as_ref()
        .or(pod.pod_reason.as_ref())
        .map(|r| format!(" ({})", r.reason))
        .unwrap_or_default();
    if pod.state().finished() {
        format!("pod {} ended without starting{why}; no log", pod.name)
    } else {
        format!("pod {} has not started yet{why}; no log", pod.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::tests::{pod, view};

    #[test]
    fn prefixes_are_padded_to_the_longest_task_and_lines_are_prefixed() {
        let mut t = Tracker::new("t", false);
        t.replace(vec![
            view(pod("ps-0", "Running")),
            view(pod("worker-10", "Running")),
        ]);
        let mut p = Prefixes::new(&t, false);
        assert_eq!(p.prefix("ps-0").codes(), "ps-0      | ");
        let ps = Styled::plain("ps-0 | ");
        assert_eq!(prefixed(&ps, "a\nb", false).codes(), "ps-0 | a\nps-0 | b\n");
        assert_eq!(
            prefixed(&ps, "a\x1b]0;title\x07\r\nb", false).codes(),
            "ps-0 | a\\u{1b}]0;title\\u{7}\nps-0 | b\n"
        );
        assert_eq!(prefixed(&ps, "a\x1b[2J", true).codes(), "ps-0 | a\x1b[2J\n");
        let mut c = Prefixes::new(&t, true);
        assert_ne!(c.prefix("ps-0"), c.prefix("worker-10"));
        assert!(c.prefix("ps-0").codes().starts_with("\x1b["));
    }
}
