//! `compare`'s picture (pure): one metric per epoch for every run, as a small line
//! chart of text, a mark per run (`*`, `o`, `+`…) and, on a terminal, a colour too.
//! Between two epochs of a run the line is drawn column by column (linear), so a curve
//! of a few points still reads as a line; a later run's mark covers an earlier one's.

use super::number;
use crate::output::{Styled, escape_controls};

/// The marks of the runs, in order (then again, from the first).
pub const MARKS: [char; 10] = ['*', 'o', '+', 'x', '#', '@', '%', '&', '=', '~'];
/// ANSI colours of the marks on a terminal.
const COLOURS: [u8; 6] = [31, 32, 34, 33, 35, 36];

/// The plot's size in characters (the area inside the axes).
#[derive(Debug, Clone, Copy)]
pub struct Size {
    pub width: usize,
    pub height: usize,
}

pub const DEFAULT_SIZE: Size = Size {
    width: 60,
    height: 12,
};

/// One run's curve: its name in the legend, and its points (epoch, value).
pub struct Series {
    pub label: String,
    pub points: Vec<(u32, f64)>,
}

fn mark(i: usize, colour: bool) -> Styled {
    let m = MARKS[i % MARKS.len()].to_string();
    if colour {
        Styled::painted(&m, COLOURS[i % COLOURS.len()])
    } else {
        Styled::plain(&m)
    }
}

/// The epochs and values the chart spans: `((first, last), (lowest, highest))`, the
/// values apart (a flat curve padded); `None` without a point.
fn span(series: &[Series]) -> Option<((u32, u32), (f64, f64))> {
    let all = series.iter().flat_map(|s| s.points.iter());
    let (x0, x1) = all
        .clone()
        .fold((u32::MAX, 0), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let (mut y0, mut y1) = all.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
        (a.min(p.1), b.max(p.1))
    });
    if x0 > x1 || !y0.is_finite() || !y1.is_finite() {
        return None;
    }
    if y0 == y1 {
        let pad = if y0 == 0.0 { 1.0 } else { y0.abs() / 10.0 };
        (y0, y1) = (y0 - pad, y1 + pad);
    }
    Some(((x0, x1), (y0, y1)))
}

/// The plot's cells (`h` rows of `w`): the index of the run whose line passes there.
type Grid = Vec<Vec<Option<usize>>>;

fn plot(
    series: &[Series],
    ((x0, x1), (y0, y1)): ((u32, u32), (f64, f64)),
    w: usize,
    h: usize,
) -> Grid {
    let col = |e: u32| (f64::from(e - x0) / f64::from((x1 - x0).max(1)) * (w - 1) as f64).round();
    let row = |v: f64| (((y1 - v) / (y1 - y0) * (h - 1) as f64).round() as usize).min(h - 1);
    let mut grid: Grid = vec![vec![None; w]; h];
    for (i, s) in series.iter().enumerate() {
        let mut points = s.points.clone();
        points.sort_by_key(|p| p.0);
        for pair in points.windows(2) {
            let ((e0, v0), (e1, v1)) = (pair[0], pair[1]);
            let (c0, c1) = (col(e0), col(e1));
            for c in (c0 as usize)..=(c1 as usize) {
                let t = if c1 > c0 {
                    (c as f64 - c0) / (c1 - c0)
                } else {
                    0.0
                };
                grid[row(v0 + (v1 - v0) * t)][c.min(w - 1)] = Some(i);
            }
        }
        if let [(e, v)] = points[..] {
            grid[row(v)][(col(e) as usize).min(w - 1)] = Some(i);
        }
    }
    grid
}

/// The chart of `metric`, or `None` when no run has a point of it; the marks coloured
/// when `colour` (a [`Styled`]: our colours reach the terminal, the names escaped).
pub fn draw(metric: &str, series: &[Series], size: Size, colour: bool) -> Option<Styled> {
    let ((x0, x1), (y0, y1)) = span(series)?;
    let (w, h) = (size.width.max(2), size.height.max(2));
    let grid = plot(series, ((x0, x1), (y0, y1)), w, h);
    let labels = [number(y1), number((y0 + y1) / 2.0), number(y0)];
    let lw = labels.iter().map(String::len).max().unwrap_or(0);
    let mut out = Styled::plain(&format!("{} per epoch\n", escape_controls(metric)));
    for (r, cells) in grid.iter().enumerate() {
        let label = match r {
            0 => &labels[0],
            r if r == (h - 1) / 2 => &labels[1],
            r if r == h - 1 => &labels[2],
            _ => "",
        };
        out.push_plain(&format!("{label:>lw$} |"));
        // No trailing spaces: the row ends at its last mark.
        let end = cells.iter().rposition(Option::is_some).map_or(0, |e| e + 1);
        for cell in &cells[..end] {
            match cell {
                Some(i) => out.push(&mark(*i, colour)),
                None => out.push_plain(" "),
            }
        }
        out.push_plain("\n");
    }
    out.push_plain(&format!("{:>lw$} +{}\n", "", "-".repeat(w)));
    let (first, last) = (x0.to_string(), format!("{x1} (epoch)"));
    let gap = w.saturating_sub(first.len() + last.len()).max(1);
    out.push_plain(&format!("{:>lw$}  {first}{}{last}\n", "", " ".repeat(gap)));
    for (i, s) in series.iter().enumerate() {
        out.push_plain(&format!("{:>lw$}  ", ""));
        out.push(&mark(i, colour));
        out.push_plain(&format!(" {}\n", escape_controls(&s.label)));
    }
    Some(out)
}
