//! Every byte tf-spawner prints goes through this module: data on stdout, notes and
//! errors on stderr, aligned tables, task prefixes with optional colour.
//!
//! `--quiet` is honoured here: [`print`] and [`stream`] drop their text, [`data`] (what
//! a script asked for, a new run's tag) still goes out, stderr is untouched. A summary
//! that must stay parseable (`spawn --wait -o json`) calls [`silence`] after printing it.
//! Whether stdout and stderr may get escape codes (colours, redrawing) is decided here
//! too ([`fancy_stdout`], [`fancy_stderr`]); only then does `progress.rs` let indicatif
//! redraw its bars on the terminal.
//!
//! A closed stdout (`| head`) is the end of the output, never an error and never a
//! panic: [`print`] says so (`Ok(false)`) and the command finishes its work quietly. A
//! closed stderr is ignored. Nothing else in the crate uses the print macros
//! (`clippy::print_stdout` and `clippy::print_stderr` are denied at the crate root).

use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set by `-q`, or by [`silence`].
static QUIET: AtomicBool = AtomicBool::new(false);
/// Nothing on stderr either: a shell completion's answer (its words are the output).
static MUTE: AtomicBool = AtomicBool::new(false);

/// How the user runs us (`tf-spawner`, or `kubectl tf-spawner` as a kubectl plugin),
/// set once by `lib.rs::main`: the commands we suggest start with it.
static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();

pub fn set_name(name: &str) {
    let _ = NAME.set(name.to_string());
}

/// The command that runs tf-spawner, for the commands we suggest.
pub fn name() -> &'static str {
    NAME.get().map_or("tf-spawner", String::as_str)
}

/// A block redrawn in place below everything else on the terminal (a sweep's table,
/// `ops/sweep/view.rs`): while one is shown, what [`print`], [`print_styled`], [`data`] and
/// [`eprint`] write goes above it (indicatif clears it, the text is written, it is
/// drawn again).
static LIVE: std::sync::Mutex<Option<indicatif::ProgressBar>> = std::sync::Mutex::new(None);

/// Shows `bar` as the live block (`None`: no more; the caller leaves or clears it).
pub fn live(bar: Option<indicatif::ProgressBar>) {
    if let Ok(mut live) = LIVE.lock() {
        *live = bar;
    }
}

/// `write` with the live block, if any, out of its way.
fn around_live<R>(write: impl FnOnce() -> R) -> R {
    let bar = LIVE.lock().ok().and_then(|live| live.clone());
    match bar {
        Some(bar) => bar.suspend(write),
        None => write(),
    }
}

/// Set by [`progress_to_stderr`].
static TO_STDERR: AtomicBool = AtomicBool::new(false);

/// What [`print`] writes goes to stderr from now on, leaving stdout to [`data`] alone
/// (`wait -o json`: the verdict document is the only thing on stdout).
pub fn progress_to_stderr() {
    TO_STDERR.store(true, Ordering::Relaxed);
}

/// Set by [`errors_as_json`]; [`DATA_WRITTEN`]: [`data`] wrote to stdout.
static JSON_ERRORS: AtomicBool = AtomicBool::new(false);
static DATA_WRITTEN: AtomicBool = AtomicBool::new(false);

/// Whether `-o json` was asked (`lib.rs` reads it once, whatever the verb): then
/// [`failed`] also writes the error as a JSON object on stdout.
pub fn errors_as_json(asked: bool) {
    JSON_ERRORS.store(asked, Ordering::Relaxed);
}

/// The end of a failed command: its one `error:` line on stderr, and with `-o json`
/// (see [`errors_as_json`]) `{"error": TEXT, "exit_code": CODE}` on stdout, unless the
/// command wrote its own document there already (`wait`'s verdict of a failed run:
/// stdout stays one JSON document).
pub fn failed(text: &str, exit_code: u8) {
    error(text);
    if JSON_ERRORS.load(Ordering::Relaxed) && !DATA_WRITTEN.load(Ordering::Relaxed) {
        let object = serde_json::json!({ "error": text, "exit_code": exit_code });
        if let Ok(text) = json(&object) {
            let _ = data(&text);
        }
    }
}

/// Nothing on stdout from now on but [`data`].
pub fn silence() {
    QUIET.store(true, Ordering::Relaxed);
}

/// Nothing on stderr from now on: a completion must not write over the prompt.
pub fn mute() {
    MUTE.store(true, Ordering::Relaxed);
}

/// Whether stdout is silenced (`-q`).
pub fn is_quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// Whether escape codes are welcome: not with `NO_COLOR` (set to anything non-empty)
/// or `TERM=dumb`.
fn colour_allowed() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::env::var_os("TERM").is_none_or(|t| t != "dumb")
}

/// Whether stdout is a terminal that may get escape codes (colours, redrawn progress
/// bars); never while silenced.
pub fn fancy_stdout() -> bool {
    !is_quiet()
        && !TO_STDERR.load(Ordering::Relaxed)
        && io::stdout().is_terminal()
        && colour_allowed()
}

/// Whether stderr is a terminal that may get escape codes (`-v` logs).
pub fn fancy_stderr() -> bool {
    io::stderr().is_terminal() && colour_allowed()
}

/// `-o` of the reports (`status`, `list`, `config`): the table, or the same document
/// as JSON or YAML (the rule of every `-o`: docs/reference.md, "One rule for every verb").
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    Table,
    Json,
    Yaml,
}

/// Columns separated by three spaces, each as wide as its widest cell; no trailing space.
/// A cell that came from a pod or an annotation has its control characters escaped
/// ([`escape_controls`]) before it is measured: one line, and never an escape code.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|row| row.iter().map(|cell| escape_controls(cell)).collect())
        .collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (i, cell) in row.iter().enumerate() {
            if i < widths.len() {
                widths[i] = widths[i].max(cell.chars().count());
            }
        }
    }
    let mut out = String::new();
    let header: Vec<String> = headers.iter().map(|h| h.to_string()).collect();
    for row in std::iter::once(&header).chain(&rows) {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i > 0 {
                line.push_str("   ");
            }
            line.push_str(cell);
            if i + 1 < row.len() {
                let pad = widths[i].saturating_sub(cell.chars().count());
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Foreground colours for task prefixes (cyan, yellow, green, magenta, blue, red,
/// then their bright variants), as stern and kubetail do.
const PALETTE: [u8; 12] = [36, 33, 32, 35, 34, 31, 96, 93, 92, 95, 94, 91];

/// `worker-1  | ` padded to `width`, coloured with colour number `colour` when asked.
pub fn prefix(label: &str, width: usize, colour: Option<usize>) -> Styled {
    let padded = format!("{label:<width$}");
    let mut out = match colour {
        Some(n) => Styled::painted(&padded, PALETTE[n % PALETTE.len()]),
        None => Styled::plain(&padded),
    };
    out.push_plain(" | ");
    out
}

/// Text for a terminal: our own escape codes (a colour, a line erased) around text
/// made safe. The one rule of what reaches a terminal: our escape codes only through
/// a `Styled` ([`print_styled`], [`data_styled`]), text from outside never as it is:
/// [`Styled::plain`] and [`Styled::painted`] escape it on the way in ([`terminal_text`]),
/// and [`print`], [`data`] and [`eprint`] escape all they are given, so a colour passed
/// there as a `String` would show as `\u{1b}[32m`: a `Styled` is not a `str`, and only
/// these functions print one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Styled(String);

impl Styled {
    pub fn new() -> Styled {
        Styled::default()
    }

    /// Text from anywhere, its control characters but newline and tab escaped.
    pub fn plain(text: &str) -> Styled {
        Styled(terminal_text(text).into_owned())
    }

    /// `text` (escaped, one line: [`escape_controls`]) in the SGR colour `sgr` (31: red…).
    pub fn painted(text: &str, sgr: u8) -> Styled {
        Styled(format!("\x1b[{sgr}m{}\x1b[0m", escape_controls(text)))
    }

    /// Text passed to the terminal as it is, for two uses only: what the user asked to
    /// see unaltered (`logs --raw`; a `--local` task's own output, the user's program on
    /// the user's machine, as a terminal shows it) and our own generated text (the
    /// completion scripts).
    pub fn unaltered(text: &str) -> Styled {
        Styled(text.to_string())
    }

    /// Back to the start of the line, and erase it (a line redrawn in place).
    pub fn erase_line() -> Styled {
        Styled("\r\x1b[K".to_string())
    }

    pub fn push(&mut self, more: &Styled) {
        self.0.push_str(&more.0);
    }

    /// [`Styled::push`] of [`Styled::plain`]`(text)`.
    pub fn push_plain(&mut self, text: &str) {
        self.0.push_str(&terminal_text(text));
    }

    /// Its length in bytes, escape codes counted.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The text with its escape codes, as the terminal gets it (tests).
    #[cfg(test)]
    pub fn codes(&self) -> &str {
        &self.0
    }
}

/// Whether a write failed because the reader went away.
pub fn is_broken_pipe(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::BrokenPipe
}

/// `Ok(false)` for a closed pipe, other errors as they are.
fn pipe_open(result: io::Result<()>) -> io::Result<bool> {
    match result {
        Ok(()) => Ok(true),
        Err(e) if is_broken_pipe(&e) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Writes `text` ([`terminal_text`]) to stdout and flushes. `Ok(false)` when the pipe was closed: the
/// caller stops printing and carries on (exit 0), the way `cat` does under `| head`.
pub fn print(text: &str) -> io::Result<bool> {
    write_stdout(&terminal_text(text))
}

/// [`print`] of text with our own escape codes ([`Styled`]): coloured task prefixes,
/// `compare`'s chart, a redrawn line.
pub fn print_styled(text: &Styled) -> io::Result<bool> {
    write_stdout(&text.0)
}

fn write_stdout(text: &str) -> io::Result<bool> {
    if is_quiet() {
        return Ok(true);
    }
    if TO_STDERR.load(Ordering::Relaxed) {
        let text = text.to_string();
        return around_live(|| {
            let mut err = io::stderr().lock();
            let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
            Ok(true)
        });
    }
    around_live(|| {
        let mut out = io::stdout().lock();
        pipe_open(out.write_all(text.as_bytes()).and_then(|()| out.flush()))
    })
}

/// [`print_styled`] for what the user's own program wrote (a `--local` task's lines):
/// the work's output, printed with `--quiet` too, as [`data`] is.
pub fn data_styled(text: &Styled) -> io::Result<bool> {
    let mut out = io::stdout().lock();
    pipe_open(out.write_all(text.0.as_bytes()).and_then(|()| out.flush()))
}

/// Streams output that is written piece by piece (`--dry-run` of a large run) through
/// a buffer on stdout. `Ok(false)` when the pipe was closed: what `write` still had
/// to say is dropped.
pub fn stream(
    write: impl FnOnce(&mut io::BufWriter<io::StdoutLock<'static>>) -> anyhow::Result<()>,
) -> anyhow::Result<bool> {
    if is_quiet() {
        return Ok(true);
    }
    let mut out = io::BufWriter::new(io::stdout().lock());
    match write(&mut out).and_then(|()| Ok(out.flush()?)) {
        Ok(()) => Ok(true),
        Err(e) if e.downcast_ref::<io::Error>().is_some_and(is_broken_pipe) => {
            // Whatever is still buffered has nowhere to go.
            let _ = out.into_parts();
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// What a script asked for even with `--quiet` (a new run's tag). A closed pipe is not
/// an error.
pub fn data(text: &str) -> io::Result<()> {
    DATA_WRITTEN.store(true, Ordering::Relaxed);
    let text = terminal_text(text);
    around_live(|| {
        let mut out = io::stdout().lock();
        pipe_open(out.write_all(text.as_bytes()).and_then(|()| out.flush())).map(|_| ())
    })
}

/// Writes `text` to stderr ([`terminal_text`]). A closed stderr is ignored: there is nowhere
/// left to complain to, and the command's work and exit code must not depend on it.
pub fn eprint(text: &str) {
    if MUTE.load(Ordering::Relaxed) {
        return;
    }
    let text = terminal_text(text);
    around_live(|| {
        let mut err = io::stderr().lock();
        let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
    });
}

/// `note: TEXT` on a line of its own on stderr; nothing with `-q` (a note is advice,
/// not an error: warnings and errors stay).
pub fn note(text: &str) {
    if is_quiet() {
        return;
    }
    eprint(&format!("note: {}\n", escape_controls(text)));
}

/// `warning: TEXT` on a line of its own on stderr.
pub fn warning(text: &str) {
    eprint(&format!("warning: {}\n", escape_controls(text)));
}

/// The one line of a failed command: `error: TEXT` on stderr.
pub fn error(text: &str) {
    eprint(&format!("error: {}\n", escape_controls(text)));
}

/// A path as messages show it (a control character in it is escaped by [`error`],
/// [`note`] and [`warning`]).
pub fn shown_path(path: &std::path::Path) -> String {
    path.display().to_string()
}

/// Whether `c` could drive a terminal rather than show as text: a C0 or C1 control
/// character (ESC, which starts colour, title, clipboard-write (OSC 52), hyperlink and
/// clear-screen sequences; BEL; a carriage return; a backspace; U+009B, a one-byte
/// CSI…), DEL, or a bidirectional override that reorders what follows.
fn drives_terminal(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Control characters (an ESC, a newline, a carriage return in a tag, a path or a
/// file's text) as `\u{1b}`, so that a message is one line and never drives the
/// terminal. For a single line (a table's cell, a note, a progress bar's message).
pub fn escape_controls(text: &str) -> String {
    escaped(text, |_| false).into_owned()
}

/// Text that came from outside (a pod's log or termination message, an annotation, a
/// file's name or text) made safe for a terminal, lines kept: every character that
/// could drive the terminal but newline and tab shown escaped (`\u{1b}]52;…`), the
/// rule of [`escape_controls`]; a carriage return right before a newline is dropped.
/// [`print`], [`data`] and [`eprint`] apply it to everything they write; what must
/// reach the terminal as it is (the task prefixes' colours, `logs --raw`) is a
/// [`Styled`], printed by [`print_styled`].
pub fn terminal_text(text: &str) -> std::borrow::Cow<'_, str> {
    if !text
        .chars()
        .any(|c| drives_terminal(c) && c != '\n' && c != '\t')
    {
        return std::borrow::Cow::Borrowed(text);
    }
    let text = text.replace("\r\n", "\n");
    std::borrow::Cow::Owned(escaped(&text, |c| c == '\n' || c == '\t').into_owned())
}

/// A report's document as `-o json` or `-o yaml` asked ([`json`], [`yaml`]); `Table`
/// is each report's own rendering, never this.
pub fn document(value: &impl serde::Serialize, format: ReportFormat) -> anyhow::Result<String> {
    match format {
        ReportFormat::Yaml => yaml(value),
        ReportFormat::Json | ReportFormat::Table => Ok(json(value)?),
    }
}

/// `value` as YAML, the same document as [`json`]'s (its keys in the same order); a string that could drive the terminal is written
/// double-quoted with YAML's escapes, so the text stays YAML and inert.
pub fn yaml(value: &impl serde::Serialize) -> anyhow::Result<String> {
    let text =
        serde_saphyr::to_string(value).map_err(|e| anyhow::anyhow!("cannot write YAML: {e}"))?;
    let mut out = String::with_capacity(text.len() + 1);
    for c in text.chars() {
        if drives_terminal(c) && c != '\n' {
            // Only reached inside a quoted scalar if the emitter left it raw.
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Ok(out)
}

/// `value` as pretty JSON ending with a newline, safe for a terminal and still JSON:
/// what serde leaves raw and [`drives_terminal`] (a C1 control such as U+009B, DEL, a
/// bidirectional override) is written as a JSON escape (`\u009b`), so [`print`] finds
/// nothing to escape its way (which would make the text no JSON).
pub fn json(value: &impl serde::Serialize) -> serde_json::Result<String> {
    let text = serde_json::to_string_pretty(value)?;
    let mut out = String::with_capacity(text.len() + 1);
    for c in text.chars() {
        if drives_terminal(c) && c != '\n' {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out.push('\n');
    Ok(out)
}

/// `text` with every character that [`drives_terminal`] escaped, but those `keep`s.
fn escaped(text: &str, keep: impl Fn(char) -> bool) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(|c| drives_terminal(c) && !keep(c)) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if drives_terminal(c) && !keep(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_stays_json_with_nothing_for_the_terminal() {
        let text =
            json(&serde_json::json!({"m": "a\x1b]0;t\x07 \u{9b}31m \u{202e}x \x7f\nb"})).unwrap();
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["m"], "a\x1b]0;t\x07 \u{9b}31m \u{202e}x \x7f\nb");
        assert_eq!(terminal_text(&text), text, "nothing left to escape: {text}");
    }

    #[test]
    fn yaml_is_the_json_document_with_nothing_for_the_terminal() {
        let value = serde_json::json!({"tag": "t", "n": 3, "pods": [{"m": "a\x1b]0;t\x07 \u{9b}31m \u{202e}x \x7f\nb"}], "none": null});
        let text = yaml(&value).unwrap();
        let back: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(back, value, "{text}");
        assert_eq!(terminal_text(&text), text, "nothing left to escape: {text}");
        assert!(text.contains("\ntag: t\n"), "{text}");
    }

    #[test]
    fn tables_align_columns() {
        let rows = vec![
            vec!["t-worker-0".into(), "Running".into(), "".into()],
            vec!["t-chief-0".into(), "Succeeded".into(), "0".into()],
        ];
        assert_eq!(
            table(&["NAME", "PHASE", "EXIT"], &rows),
            "NAME         PHASE       EXIT\nt-worker-0   Running\nt-chief-0    Succeeded   0\n"
        );
    }

    #[test]
    fn prefixes_pad_and_colour_only_when_asked() {
        assert_eq!(prefix("ps-0", 8, None).codes(), "ps-0     | ");
        assert_eq!(prefix("worker-1", 8, None).codes(), "worker-1 | ");
        assert_eq!(prefix("ps-0", 4, Some(1)).codes(), "\x1b[33mps-0\x1b[0m | ");
        assert_eq!(
            prefix("ps-0", 4, Some(13)).codes(),
            "\x1b[33mps-0\x1b[0m | "
        );
        // Text from outside is escaped on the way into a `Styled`, colour or none.
        assert_eq!(
            Styled::painted("a\x1b]0;t\x07", 31).codes(),
            "\x1b[31ma\\u{1b}]0;t\\u{7}\x1b[0m"
        );
        assert_eq!(Styled::plain("a\x1b[2J\nb").codes(), "a\\u{1b}[2J\nb");
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(escape_controls("a\x1b[31mb\nc"), "a\\u{1b}[31mb\\u{a}c");
        assert_eq!(escape_controls("plain é"), "plain é");
    }
}
