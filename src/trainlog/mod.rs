//! What a training prints about itself, read from the deciding task's output (pure):
//! the epoch, the step, the last metrics, the speed and the time left.
//!
//! [`Feed`] takes the output's bytes as they come (a pod's log, with the kubelet's
//! timestamps, or a local process's pipe) and cuts them into the states a terminal would
//! show: a state ends at `\n` or at the `\r` of Keras' redrawn bar (its `\x08`s and
//! escape codes removed). It holds at most [`MAX_STATE`] bytes whatever the input: a
//! longer state is no progress line and is skipped to its end. [`parse`] reads a state;
//! [`Training`] folds what they say.

pub(crate) mod history;
pub(crate) mod parse;
pub(crate) mod show;

use k8s_openapi::jiff::Timestamp;

pub use parse::Mark;
use parse::Step;

/// The longest line state read; progress lines are far shorter.
pub const MAX_STATE: usize = 4096;
/// The longest timestamp the kubelet puts before a line (RFC 3339, nanoseconds).
const MAX_TIMESTAMP: usize = 40;

/// Milliseconds since the Unix epoch.
pub type Millis = i64;

/// The training's progress so far, from the marks of one task's output.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Training {
    /// The epoch under way (from 1) and the number of epochs, when printed.
    pub epoch: Option<u32>,
    pub epochs: Option<u32>,
    pub step: Option<u64>,
    pub steps: Option<u64>,
    /// The last metrics printed (of a step, or of the epoch's end).
    pub metrics: Vec<(String, f64)>,
    /// The epoch under way when `metrics` were printed: an earlier one than `epoch`
    /// at a new epoch's start, until its first line with metrics.
    metrics_epoch: Option<u32>,
    /// Seconds per step: Keras' own figure, else measured between our lines.
    pub secs_per_step: Option<f64>,
    /// When the last progress line was printed.
    pub last_at: Option<Millis>,
    /// The longest time between two progress lines seen so far (the derived stall
    /// bound's measure, `ops/wait/options.rs`).
    pub longest_gap: Option<Millis>,
    /// Epochs seen to end, and the metrics at the last one's end.
    pub epochs_done: u32,
    pub epoch_metrics: Vec<(String, f64)>,
    /// The epoch under way has ended (its last step printed).
    epoch_ended: bool,
    /// When the epoch under way began (its `Epoch k/n` line, or its first step line).
    began: Option<Millis>,
    /// Epochs whose whole length was seen, and their total in milliseconds.
    timed: u32,
    timed_ms: i64,
    /// The first of our step lines in this epoch (time, step): to measure the speed.
    anchor: Option<(Millis, u64)>,
    /// How many progress lines were read: what changed since a given moment.
    marks: u64,
    /// The metrics at each epoch's end, bounded, and the best of each.
    pub history: history::History,
    /// What was read is not the whole log (it could not be read to its end, nor again
    /// whole after the verdict): the last metrics may not be the training's last.
    pub partial: bool,
}

impl Training {
    /// Whether nothing recognisable was printed.
    pub fn is_empty(&self) -> bool {
        self.last_at.is_none()
    }

    /// Reads one state of a line printed at `at`; `ended`: it ended with `\n`.
    pub fn read(&mut self, at: Millis, text: &str, ended: bool) {
        match parse::parse(text) {
            Some(Mark::Epoch { k, of }) => self.begin(at, k, Some(of)),
            Some(Mark::Step(step)) => self.step(at, step, ended),
            None => return,
        }
        if let Some(last) = self.last_at {
            let gap = at.saturating_sub(last).max(0);
            self.longest_gap = Some(self.longest_gap.map_or(gap, |g| g.max(gap)));
        }
        self.last_at = Some(at);
        self.marks = self.marks.wrapping_add(1);
    }

    /// How many progress lines were read so far (a change count).
    pub fn marks(&self) -> u64 {
        self.marks
    }

    /// Reads one whole line (the final state of a redrawn one) printed at `at`; a line
    /// longer than [`MAX_STATE`] is no progress line.
    pub fn read_line(&mut self, at: Millis, line: &[u8]) {
        if line.len() <= MAX_STATE {
            self.read(at, &parse::clean(line), true);
        }
    }

    fn begin(&mut self, at: Millis, k: u32, of: Option<u32>) {
        if self.epoch != Some(k) {
            self.epoch = Some(k);
            self.epoch_ended = false;
            self.began = Some(at);
            self.step = None;
            self.anchor = None;
        }
        if of.is_some() {
            self.epochs = of;
        }
    }

    fn step(&mut self, at: Millis, s: Step, ended: bool) {
        if let Some((k, of)) = s.epoch {
            self.begin(at, k, of);
        } else if self.epoch_ended {
            // After the epoch's end and before the next `Epoch` line: the end drawn
            // once more (Keras 3 draws its last step twice: the second has the epoch's
            // time per step), else an evaluation's or a prediction's bar.
            if s.step == self.step.unwrap_or(0) && s.steps == self.steps && !s.eta {
                self.secs_per_step = s.secs_per_step.or(self.secs_per_step);
                if !s.metrics.is_empty() {
                    let epoch = self.epoch.unwrap_or(self.epochs_done);
                    self.history.amend(epoch, &s.metrics);
                    self.epoch_metrics.clone_from(&s.metrics);
                    self.metrics = s.metrics;
                    self.metrics_epoch = self.epoch;
                }
            }
            return;
        }
        if self.began.is_none() {
            self.began = Some(at);
        }
        if s.own && (s.step > 0 || s.steps.is_some()) {
            self.measure(at, s.step);
        }
        self.step = Some(s.step);
        self.steps = s.steps.or(self.steps.filter(|_| s.own));
        if s.secs_per_step.is_some() {
            self.secs_per_step = s.secs_per_step;
        }
        if !s.metrics.is_empty() {
            self.metrics = s.metrics;
            self.metrics_epoch = self.epoch;
        }
        let last = match s.steps {
            Some(n) => s.step >= n,
            None => ended && !s.own,
        };
        if last && !s.eta && !self.epoch_ended {
            self.end_epoch(at);
        }
    }

    /// Our lines carry no time per step: measured from the epoch's first one.
    fn measure(&mut self, at: Millis, step: u64) {
        match self.anchor {
            Some((t0, s0)) if at > t0 && step > s0 => {
                self.secs_per_step = Some((at - t0) as f64 / 1000.0 / (step - s0) as f64);
            }
            Some((_, s0)) if step >= s0 => {}
            _ => self.anchor = Some((at, step)),
        }
    }

    fn end_epoch(&mut self, at: Millis) {
        self.epoch_ended = true;
        self.epochs_done = self.epochs_done.saturating_add(1);
        self.epoch_metrics.clone_from(&self.metrics);
        let epoch = self.epoch.unwrap_or(self.epochs_done);
        self.history.push(epoch, &self.epoch_metrics);
        // An epoch of no measurable length (its lines read at once, without the
        // kubelet's timestamps) says nothing of the time an epoch takes.
        if let Some(began) = self.began.filter(|b| at > *b) {
            self.timed = self.timed.saturating_add(1);
            self.timed_ms = self.timed_ms.saturating_add(at - began);
        }
    }

    /// The epoch `metrics` were printed in, when it is an earlier one than the epoch
    /// under way (which printed none yet: Keras' `verbose=2` prints an epoch's metrics
    /// at its end only).
    pub fn metrics_from_before(&self) -> Option<u32> {
        match (self.metrics_epoch, self.epoch) {
            (Some(m), Some(k)) if m < k && !self.metrics.is_empty() => Some(m),
            _ => None,
        }
    }

    /// Whether the last epoch has ended (`epochs` known and reached).
    pub fn finished(&self) -> bool {
        self.epoch_ended && self.epoch.is_some() && self.epoch == self.epochs
    }

    /// Seconds per epoch: the mean of the epochs seen whole, else steps × time per step.
    pub fn secs_per_epoch(&self) -> Option<f64> {
        if self.timed > 0 {
            return Some(self.timed_ms as f64 / 1000.0 / f64::from(self.timed));
        }
        Some(self.steps? as f64 * self.secs_per_step?)
    }

    /// Steps per second, from the time per step.
    pub fn steps_per_second(&self) -> Option<f64> {
        self.secs_per_step.filter(|s| *s > 0.0).map(|s| 1.0 / s)
    }

    /// The time left, in seconds, as of the last progress line: the rest of this epoch
    /// and the epochs after it.
    pub fn secs_left(&self) -> Option<f64> {
        if self.finished() {
            return Some(0.0);
        }
        let this = if self.epoch_ended {
            0.0
        } else {
            match (self.step, self.steps, self.secs_per_step) {
                (Some(s), Some(n), Some(p)) => n.saturating_sub(s) as f64 * p,
                _ => {
                    let elapsed = (self.last_at? - self.began?) as f64 / 1000.0;
                    (self.secs_per_epoch()? - elapsed).max(0.0)
                }
            }
        };
        let after = match (self.epoch, self.epochs) {
            (Some(k), Some(n)) => n.saturating_sub(k),
            (None, None) => 0,
            _ => return None,
        };
        if after == 0 {
            return Some(this);
        }
        Some(this + f64::from(after) * self.secs_per_epoch()?)
    }
}

/// Cuts a task's output into line states for a [`Training`], in bounded memory.
#[derive(Debug)]
pub struct Feed {
    /// Lines start with the kubelet's timestamp (`timestamps=true`).
    timestamps: bool,
    /// At the start of a line (before its timestamp, if any).
    at_start: bool,
    /// The timestamp read so far, at a line's start.
    head: Vec<u8>,
    /// The current line's timestamp.
    line_at: Option<Millis>,
    /// The current line is not to be read (sent before, by a resumed stream).
    skip: bool,
    /// The state being read, and whether it grew past [`MAX_STATE`].
    state: Vec<u8>,
    overlong: bool,
}

impl Feed {
    pub fn new(timestamps: bool) -> Feed {
        Feed {
            timestamps,
            at_start: true,
            head: Vec::new(),
            line_at: None,
            skip: false,
            state: Vec::new(),
            overlong: false,
        }
    }

    /// Reads `chunk`. A line without a timestamp counts as printed at `now`; `keep` says
    /// whether a line with this timestamp is new (see `ops::logs::Cursor`).
    pub fn push(
        &mut self,
        mut chunk: &[u8],
        now: Millis,
        keep: &mut dyn FnMut(Timestamp) -> bool,
        training: &mut Training,
    ) {
        while !chunk.is_empty() {
            if self.at_start && self.timestamps {
                chunk = self.timestamp(chunk, keep);
                continue;
            }
            self.at_start = false;
            let end = chunk.iter().position(|b| matches!(b, b'\n' | b'\r'));
            let (body, rest) = match end {
                Some(at) => (&chunk[..at], Some((chunk[at], &chunk[at + 1..]))),
                None => (chunk, None),
            };
            if !self.skip {
                self.take(body);
            }
            let Some((end, rest)) = rest else {
                return;
            };
            // `\r\n` (a terminal's line end) ends the line, like `\n`.
            let (ended, rest) = match rest.strip_prefix(b"\n") {
                Some(after) if end == b'\r' => (true, after),
                _ => (end == b'\n', rest),
            };
            if !self.skip {
                let at = self.line_at.unwrap_or(now);
                self.emit(at, ended, training);
            }
            if ended {
                self.at_start = true;
                self.skip = false;
                self.line_at = None;
            }
            chunk = rest;
        }
    }

    /// The end of the output: an unfinished line is a line.
    pub fn finish(&mut self, now: Millis, training: &mut Training) {
        if !self.skip {
            let at = self.line_at.unwrap_or(now);
            self.emit(at, true, training);
        }
    }

    /// Reads a line's timestamp (up to its space) from `chunk`; returns the rest.
    fn timestamp<'a>(
        &mut self,
        chunk: &'a [u8],
        keep: &mut dyn FnMut(Timestamp) -> bool,
    ) -> &'a [u8] {
        let room = MAX_TIMESTAMP.saturating_sub(self.head.len());
        let stop = chunk
            .iter()
            .take(room + 1)
            .position(|b| matches!(b, b' ' | b'\n' | b'\r'));
        let space = match stop {
            None if chunk.len() <= room => {
                // The timestamp goes on in the next chunk.
                self.head.extend_from_slice(chunk);
                return &[];
            }
            None => {
                self.head.extend_from_slice(&chunk[..room]);
                self.no_timestamp();
                return &chunk[room..];
            }
            Some(at) if chunk[at] != b' ' => {
                self.head.extend_from_slice(&chunk[..at]);
                self.no_timestamp();
                return &chunk[at..];
            }
            Some(at) => at,
        };
        self.head.extend_from_slice(&chunk[..space]);
        let parsed = std::str::from_utf8(&self.head)
            .ok()
            .and_then(|t| t.parse::<Timestamp>().ok());
        match parsed {
            Some(at) => {
                self.skip = !keep(at);
                self.line_at = Some(at.as_millisecond());
                self.head.clear();
                self.at_start = false;
                &chunk[space + 1..]
            }
            None => {
                self.no_timestamp();
                &chunk[space..]
            }
        }
    }

    /// What looked like a timestamp's place is text: read as such.
    fn no_timestamp(&mut self) {
        self.at_start = false;
        let head = std::mem::take(&mut self.head);
        self.take(&head);
    }

    fn take(&mut self, bytes: &[u8]) {
        if self.overlong || self.state.len() + bytes.len() > MAX_STATE {
            self.overlong = true;
            self.state.clear();
        } else {
            self.state.extend_from_slice(bytes);
        }
    }

    fn emit(&mut self, at: Millis, ended: bool, training: &mut Training) {
        if !self.overlong && !self.state.is_empty() {
            training.read(at, &parse::clean(&self.state), ended);
        }
        self.state.clear();
        self.overlong = false;
    }
}

#[cfg(test)]
mod tests;
