//! A task's output, from its pipe to the terminal: split into lines, with a bound.
//!
//! - A line ends at `\n` (a `\r\n` too). A line longer than [`MAX_LINE`] bytes is
//!   printed in pieces of that size, each on a prefixed line of its own, so memory stays
//!   bounded whatever a task writes.
//! - A `\r` redraws the line (tqdm, Keras and curl progress): what is printed of a line
//!   is its final state, the text after its last `\r`. On a terminal, each new state is
//!   drawn over the last as it arrives (one live line at the bottom, the other tasks'
//!   lines printed above it); in a pipe (or with `NO_COLOR`, `TERM=dumb`) only the final
//!   state is printed, when the line ends.

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::mpsc;

use super::setup::LocalPlan;
use crate::output::{self, Styled};

/// What the runner hears from its tasks: their output (from the readers here) and
/// their exits.
pub(super) enum Event {
    /// What task `at` wrote: a line, or the latest state of a redrawn one.
    Output(usize, Piece),
    /// A stdout or stderr stream reached its end.
    Closed,
    Exited(usize, std::process::ExitStatus),
}

/// The longest piece of a line printed at once.
pub const MAX_LINE: usize = 16 * 1024;
/// What one read takes from a task's pipe.
const CHUNK: usize = 8 * 1024;

/// What the splitter makes of a task's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// A line (or a piece of a long one), without its end.
    Line(Vec<u8>),
    /// The latest state of a line redrawn with `\r`, not ended yet.
    Redraw(Vec<u8>),
}

/// Splits a stream into [`Piece`]s, holding at most [`MAX_LINE`] bytes (plus a chunk).
#[derive(Debug, Default)]
pub struct Splitter {
    pending: Vec<u8>,
}

/// Where the state a line shows starts, and where it ends: the text after its last
/// `\r`, trailing ones ignored.
fn state_bounds(bytes: &[u8]) -> (usize, usize) {
    let end = bytes
        .iter()
        .rposition(|b| *b != b'\r')
        .map_or(0, |at| at.saturating_add(1));
    let start = bytes[..end]
        .iter()
        .rposition(|b| *b == b'\r')
        .map_or(0, |at| at.saturating_add(1));
    (start, end)
}

fn final_state(bytes: &[u8]) -> &[u8] {
    let (start, end) = state_bounds(bytes);
    &bytes[start..end]
}

impl Splitter {
    /// Takes the next bytes; what they complete goes to `out`.
    pub fn push(&mut self, mut chunk: &[u8], out: &mut Vec<Piece>) {
        loop {
            let newline = chunk.iter().position(|b| *b == b'\n');
            let (part, rest) = match newline {
                Some(at) => (&chunk[..at], Some(&chunk[at.saturating_add(1)..])),
                None => (chunk, None),
            };
            self.pending.extend_from_slice(part);
            // What a `\r` overwrote is gone from the line.
            let redrawn = self.pending.contains(&b'\r');
            if redrawn {
                let (start, _) = state_bounds(&self.pending);
                self.pending.drain(..start);
            }
            while self.pending.len() > MAX_LINE {
                let tail = self.pending.split_off(MAX_LINE);
                out.push(Piece::Line(std::mem::replace(&mut self.pending, tail)));
            }
            let Some(rest) = rest else {
                let state = final_state(&self.pending);
                if redrawn && !state.is_empty() {
                    out.push(Piece::Redraw(state.to_vec()));
                }
                return;
            };
            out.push(Piece::Line(final_state(&self.pending).to_vec()));
            self.pending.clear();
            chunk = rest;
        }
    }

    /// The end of the stream: an unfinished line is a line.
    pub fn finish(&mut self) -> Option<Piece> {
        let state = final_state(&self.pending).to_vec();
        self.pending.clear();
        (!state.is_empty()).then_some(Piece::Line(state))
    }
}

/// Reads task `at`'s stream until its end, sending what it says to the runner.
pub async fn read(at: usize, mut stream: impl AsyncRead + Unpin, tx: mpsc::Sender<Event>) {
    let mut splitter = Splitter::default();
    let mut buf = vec![0u8; CHUNK];
    let mut pieces = Vec::new();
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => splitter.push(&buf[..n], &mut pieces),
        }
        for piece in pieces.drain(..) {
            if tx.send(Event::Output(at, piece)).await.is_err() {
                return;
            }
        }
    }
    if let Some(piece) = splitter.finish() {
        let _ = tx.send(Event::Output(at, piece)).await;
    }
    let _ = tx.send(Event::Closed).await;
}

/// Prints task lines with their prefixes, and tf-spawner's own notes; after the reader
/// closed the pipe, prints nothing (the run goes on to its verdict).
pub struct Printer {
    prefixes: Vec<Styled>,
    note_prefix: String,
    closed: bool,
    /// Redraw `\r` lines in place (a terminal that takes escape codes).
    redraw: bool,
    /// The live line at the bottom of the terminal: its task and text.
    live: Option<(usize, Styled)>,
}

impl Printer {
    pub fn new(plan: &LocalPlan, colour: bool) -> Printer {
        let width = plan
            .tasks
            .iter()
            .map(|t| t.task.id().len())
            .max()
            .unwrap_or(0);
        let prefixes = plan
            .tasks
            .iter()
            .enumerate()
            .map(|(n, t)| output::prefix(&t.task.id(), width, colour.then_some(n)))
            .collect();
        Printer {
            prefixes,
            note_prefix: format!("local run {}: ", plan.tag),
            closed: false,
            redraw: colour,
            live: None,
        }
    }

    pub fn piece(&mut self, at: usize, piece: &Piece) {
        match piece {
            Piece::Line(line) => {
                let mut text = self.task_text(at, line);
                text.push_plain("\n");
                if self.live.as_ref().is_some_and(|(task, _)| *task == at) {
                    // The live line ends: its final state replaces it.
                    self.live = None;
                    let mut erased = Styled::erase_line();
                    erased.push(&text);
                    self.print(&erased);
                } else {
                    self.print_above(&text);
                }
            }
            Piece::Redraw(state) if self.redraw => {
                let text = self.task_text(at, state);
                let mut erased = Styled::erase_line();
                erased.push(&text);
                self.print(&erased);
                self.live = Some((at, text));
            }
            Piece::Redraw(_) => {}
        }
    }

    /// tf-spawner's own line (none with `-q`; the tasks' lines are printed all the same:
    /// they are the training's log, which CI keeps).
    pub fn note(&mut self, text: &str) {
        if !text.is_empty() && !output::is_quiet() {
            let text = Styled::plain(&format!("{}{text}\n", self.note_prefix));
            self.print_above(&text);
        }
    }

    /// Task `at`'s prefix and what it wrote: as it is, the user's own script's output,
    /// run on the user's own machine, as a terminal would show it.
    fn task_text(&self, at: usize, bytes: &[u8]) -> Styled {
        let mut text = self.prefixes[at].clone();
        text.push(&Styled::unaltered(&String::from_utf8_lossy(bytes)));
        text
    }

    /// Prints whole lines above the live line, which is drawn again below them.
    fn print_above(&mut self, text: &Styled) {
        match &self.live {
            Some((_, live)) => {
                let mut all = Styled::erase_line();
                all.push(text);
                all.push(live);
                self.print(&all);
            }
            None => self.print(text),
        }
    }

    fn print(&mut self, text: &Styled) {
        if !self.closed {
            // A closed pipe ends the printing, not the run; other errors are as rare
            // and as harmless to the run.
            self.closed = !matches!(output::data_styled(text), Ok(true));
        }
    }

    /// Ends the live line, if any, so what follows starts on a line of its own.
    pub fn end_live(&mut self) {
        if self.live.take().is_some() {
            self.print(&Styled::plain("\n"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(chunks: &[&[u8]]) -> Vec<Piece> {
        let mut s = Splitter::default();
        let mut out = Vec::new();
        for c in chunks {
            s.push(c, &mut out);
        }
        out.extend(s.finish());
        out
    }

    fn line(text: &str) -> Piece {
        Piece::Line(text.as_bytes().to_vec())
    }

    fn redraw(text: &str) -> Piece {
        Piece::Redraw(text.as_bytes().to_vec())
    }

    #[test]
    fn lines_end_at_newlines_across_reads_and_crlf_is_one_end() {
        assert_eq!(
            split(&[b"a\nb", b"c\r", b"\nlast"]),
            [line("a"), redraw("bc"), line("bc"), line("last")]
        );
        assert_eq!(split(&[b"a\r\nb\n"]), [line("a"), line("b")]);
    }

    #[test]
    fn a_long_line_ended_in_the_same_read_is_cut_too() {
        let mut text = vec![b'x'; MAX_LINE + 10];
        text.extend_from_slice(b"\nok\n");
        let out = split(&[&text]);
        assert_eq!(out.len(), 3);
        assert!(matches!(&out[0], Piece::Line(l) if l.len() == MAX_LINE));
        assert!(matches!(&out[1], Piece::Line(l) if l.len() == 10));
        assert_eq!(out[2], line("ok"));
    }

    #[test]
    fn a_progress_bar_shows_each_state_then_the_last_as_the_line() {
        assert_eq!(
            split(&[b"\r 10%", b"\r 50%", b"\r100%\n"]),
            [redraw(" 10%"), redraw(" 50%"), line("100%")]
        );
        assert_eq!(
            split(&[b"1/3\r2/3\r", b"3/3\r"]),
            [redraw("2/3"), redraw("3/3"), line("3/3")]
        );
    }

    #[test]
    fn a_long_line_comes_in_pieces_and_memory_stays_bounded() {
        let mut s = Splitter::default();
        let mut out = Vec::new();
        for _ in 0..1000 {
            s.push(&[b'x'; CHUNK], &mut out);
            assert!(s.pending.len() <= MAX_LINE);
        }
        // 8000 KiB: 499 pieces of 16 KiB, and the last one at the end of the stream.
        assert_eq!(out.len(), 499);
        assert!(
            out.iter()
                .all(|p| matches!(p, Piece::Line(l) if l.len() == MAX_LINE))
        );
        assert!(matches!(s.finish(), Some(Piece::Line(l)) if l.len() == MAX_LINE));
    }
}
