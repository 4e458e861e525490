//! Printing for the follow-a-run verbs: aligned tables, task prefixes with optional
//! colour, and stdout writes that treat a closed pipe (`| head`) as the end, not an error.

use std::io::{self, Write};

/// Columns separated by three spaces, each as wide as its widest cell; no trailing space.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if i < widths.len() {
                widths[i] = widths[i].max(cell.chars().count());
            }
        }
    }
    let mut out = String::new();
    let header: Vec<String> = headers.iter().map(|h| h.to_string()).collect();
    for row in std::iter::once(&header).chain(rows) {
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
pub fn prefix(label: &str, width: usize, colour: Option<usize>) -> String {
    let padded = format!("{label:<width$}");
    match colour {
        Some(n) => format!("\x1b[{}m{padded}\x1b[0m | ", PALETTE[n % PALETTE.len()]),
        None => format!("{padded} | "),
    }
}

/// Whether a write failed because the reader went away.
pub fn is_broken_pipe(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::BrokenPipe
}

/// Writes `text` to stdout and flushes. `Ok(false)` when the pipe was closed: the
/// caller stops quietly (exit 0), the way `cat` does under `| head`.
pub fn print(text: &str) -> io::Result<bool> {
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(true),
        Err(e) if is_broken_pipe(&e) => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(prefix("ps-0", 8, None), "ps-0     | ");
        assert_eq!(prefix("worker-1", 8, None), "worker-1 | ");
        assert_eq!(prefix("ps-0", 4, Some(1)), "\x1b[33mps-0\x1b[0m | ");
        assert_eq!(prefix("ps-0", 4, Some(13)), "\x1b[33mps-0\x1b[0m | ");
    }
}
