//! One state of a line of a task's output → what it says about the training (pure).
//!
//! Recognised (escape codes and control characters removed first):
//! - Keras' epoch line, `Epoch 3/10` (every version, verbose 1 and 2).
//! - Keras' progress bar, each state it draws: tf-keras 2.x
//!   `2/5 [=====>....] - ETA: 0s - loss: 0.8063 - accuracy: 0.4531`, its last state
//!   `5/5 [======] - 1s 64ms/step - loss: 0.7592 - accuracy: 0.5000`; Keras 3
//!   `2/5 ━━━━━━━━━━━━ 0s 65ms/step - accuracy: 0.4844 - loss: 0.7074`.
//! - Keras' line per epoch (verbose 2): tf-keras
//!   `5/5 - 1s - loss: 0.7217 - accuracy: 0.4812 - 918ms/epoch - 184ms/step`, Keras 3
//!   `5/5 - 1s - 227ms/step - accuracy: 0.5500 - loss: 0.6996`; `12/Unknown` steps too.
//! - Our own line for custom training loops (docs/progress.md):
//!   `tf-spawner: epoch=3/10 step=120/500 loss=0.23 accuracy=0.91`.

/// The most metrics kept from one line.
pub const MAX_METRICS: usize = 12;
/// The longest metric name kept.
const MAX_NAME: usize = 48;
/// Where our own line starts.
pub const OWN_PREFIX: &str = "tf-spawner:";

/// What one line says.
#[derive(Debug, Clone, PartialEq)]
pub enum Mark {
    /// `Epoch k/of`: epoch `k` (from 1) of `of` begins.
    Epoch { k: u32, of: u32 },
    /// A step line: Keras' bar or epoch line, or ours.
    Step(Step),
}

/// A step line's content.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Step {
    /// Our line's `epoch=k/of` (`of` optional); Keras' step lines name no epoch.
    pub epoch: Option<(u32, Option<u32>)>,
    pub step: u64,
    /// The steps of an epoch, when known (`Unknown` in Keras' first epoch of a dataset of
    /// unknown size).
    pub steps: Option<u64>,
    /// Keras' `ETA:` (tf-keras' bar until the epoch's last step).
    pub eta: bool,
    /// Keras' `64ms/step`: its mean time per step so far in the epoch.
    pub secs_per_step: Option<f64>,
    pub metrics: Vec<(String, f64)>,
    /// Ours (`tf-spawner: …`), not Keras'.
    pub own: bool,
}

/// What `text` (one state of a line, as printed) says, if anything.
pub fn parse(text: &str) -> Option<Mark> {
    let text = text.trim();
    if let Some(rest) = text.strip_prefix(OWN_PREFIX) {
        return own(rest).map(Mark::Step);
    }
    if let Some(rest) = text.strip_prefix("Epoch ") {
        let (k, of) = fraction(rest.trim())?;
        return Some(Mark::Epoch {
            k: u32::try_from(k).ok()?,
            of: u32::try_from(of?).ok()?,
        });
    }
    keras_step(text).map(Mark::Step)
}

/// `12/500` → (12, Some(500)); `12/Unknown` → (12, None); `12` alone is none of them.
fn fraction(text: &str) -> Option<(u64, Option<u64>)> {
    let (a, b) = text.split_once('/')?;
    let a = a.parse().ok()?;
    if b == "Unknown" {
        return Some((a, None));
    }
    Some((a, Some(b.parse().ok()?)))
}

/// A Keras step line: `S/T` first, then at least one of a step time, `ETA:`, a metric.
fn keras_step(text: &str) -> Option<Step> {
    let head_end = text.find([' ', '\t']).unwrap_or(text.len());
    let (step, steps) = fraction(&text[..head_end])?;
    let mut out = Step {
        step,
        steps,
        ..Step::default()
    };
    for segment in text[head_end..].split(" - ") {
        let segment = segment.trim();
        if segment.starts_with("ETA:") {
            out.eta = true;
            continue;
        }
        for token in segment.split_whitespace() {
            if let Some(time) = token.strip_suffix("/step") {
                out.secs_per_step = out.secs_per_step.or_else(|| seconds(time));
            }
        }
        if let Some((name, value)) = segment.split_once(": ") {
            push_metric(&mut out.metrics, name, value);
        }
    }
    (out.eta || out.secs_per_step.is_some() || !out.metrics.is_empty()).then_some(out)
}

/// Our line: `key=value` words; `epoch=K[/N]`, `step=S[/T]`, any other a metric.
fn own(rest: &str) -> Option<Step> {
    let mut out = Step {
        own: true,
        ..Step::default()
    };
    let mut step = None;
    for word in rest.split_whitespace() {
        let Some((key, value)) = word.split_once('=') else {
            continue;
        };
        match key {
            "epoch" => {
                let (k, of) = fraction(value).or_else(|| Some((value.parse().ok()?, None)))?;
                out.epoch = Some((u32::try_from(k).ok()?, of.and_then(|n| n.try_into().ok())));
            }
            "step" => step = fraction(value).or_else(|| Some((value.parse().ok()?, None))),
            _ => push_metric(&mut out.metrics, key, value),
        }
    }
    if let Some((s, steps)) = step {
        out.step = s;
        out.steps = steps;
    }
    (out.epoch.is_some() || step.is_some() || !out.metrics.is_empty()).then_some(out)
}

/// Adds `name: value` if the name is an identifier and the value starts with a number.
fn push_metric(metrics: &mut Vec<(String, f64)>, name: &str, value: &str) {
    let name = name.trim();
    let ident = !name.is_empty()
        && name.len() <= MAX_NAME
        && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.'));
    if !ident || metrics.len() >= MAX_METRICS || metrics.iter().any(|(n, _)| n == name) {
        return;
    }
    if let Some(v) = number_prefix(value.trim()).filter(|v| v.is_finite()) {
        metrics.push((name.to_string(), v));
    }
}

/// The number at the start of `text` (`0.5625` of `0.5625WARNING…`, `1e-05`, `nan`).
fn number_prefix(text: &str) -> Option<f64> {
    let end = text
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit()
                || c == '.'
                || (i == 0 && c == '-')
                || ((c == 'e' || c == 'E') && i > 0)
                || ((c == '-' || c == '+') && i > 0 && text[..i].ends_with(['e', 'E'])))
        })
        .map_or(text.len(), |(i, _)| i);
    text[..end].parse().ok()
}

/// `64ms` → 0.064, `2s` → 2, `120us` → 0.00012 (Keras' `_format_time` units).
fn seconds(text: &str) -> Option<f64> {
    let (number, scale) = if let Some(n) = text.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = text.strip_suffix("us") {
        (n, 1e-6)
    } else {
        (text.strip_suffix('s')?, 1.0)
    };
    let value: f64 = number.parse().ok()?;
    (value.is_finite() && value >= 0.0).then_some(value * scale)
}

/// `text` without terminal escape sequences and control characters (`\x08`
/// backspaces, a stray `\r`), as a terminal would show it: a CSI sequence (`\x1b[1m`,
/// `\u{9b}…`) to its final byte; an OSC, DCS, SOS, PM or APC string (a title, a
/// clipboard write `\x1b]52;c;…`, a hyperlink) to its BEL or ST, so that none of its
/// text reads as a metric (`loss: 0.3\x1b]52;…` is loss 0.3, not 0.352); any other
/// escape with its intermediate and final bytes (`\x1b(B`).
pub fn clean(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let introducer = match c {
            '\x1b' => chars.next_if(|c| "[]PX^_".contains(*c)),
            '\u{9b}' => Some('['),
            '\u{9d}' => Some(']'),
            '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => Some('P'),
            c if c == '\t' || !c.is_control() => {
                out.push(c);
                continue;
            }
            _ => continue,
        };
        match introducer {
            // CSI: parameters and intermediates, then a final byte in @..~.
            Some('[') => while chars.next().is_some_and(|c| !('@'..='~').contains(&c)) {},
            // A string: to BEL, ST (ESC \ or U+009C), or the end of the text.
            Some(_) => {
                while let Some(c) = chars.next() {
                    if c == '\x07'
                        || c == '\u{9c}'
                        || (c == '\x1b' && chars.next_if_eq(&'\\').is_some())
                    {
                        break;
                    }
                }
            }
            // ESC, intermediates (space to /), a final byte.
            None => {
                while chars.next_if(|c| (' '..='/').contains(c)).is_some() {}
                chars.next();
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(text: &str) -> Step {
        match parse(text) {
            Some(Mark::Step(s)) => s,
            other => panic!("{text}: {other:?}"),
        }
    }

    fn metrics(pairs: &[(&str, f64)]) -> Vec<(String, f64)> {
        pairs.iter().map(|(n, v)| (n.to_string(), *v)).collect()
    }

    #[test]
    fn epoch_lines() {
        assert_eq!(parse("Epoch 3/10"), Some(Mark::Epoch { k: 3, of: 10 }));
        assert_eq!(parse("Epoch 3"), None);
        assert_eq!(parse("Epoch of the night"), None);
    }

    #[test]
    fn tf_keras_bar_and_its_last_state() {
        let s = step(
            "2/5 [===========>..................] - ETA: 0s - loss: 0.8063 - accuracy: 0.4531",
        );
        assert_eq!((s.step, s.steps, s.eta), (2, Some(5), true));
        assert_eq!(
            s.metrics,
            metrics(&[("loss", 0.8063), ("accuracy", 0.4531)])
        );
        let s = step(
            "5/5 [==============================] - 1s 64ms/step - loss: 0.7592 - accuracy: 0.5000",
        );
        assert_eq!((s.step, s.eta, s.secs_per_step), (5, false, Some(0.064)));
        assert_eq!(s.metrics.len(), 2);
    }

    #[test]
    fn verbose_2_lines_of_both_kerases() {
        let s = step("5/5 - 1s - loss: 0.7217 - accuracy: 0.4812 - 918ms/epoch - 184ms/step");
        assert_eq!((s.step, s.steps, s.eta), (5, Some(5), false));
        assert_eq!(s.secs_per_step, Some(0.184));
        assert_eq!(
            s.metrics,
            metrics(&[("loss", 0.7217), ("accuracy", 0.4812)])
        );
        let s =
            step("100/100 - 12s - 120ms/step - accuracy: 0.9310 - loss: 0.2310 - val_loss: 0.3");
        assert_eq!(s.metrics.len(), 3);
        assert_eq!(s.secs_per_step, Some(0.12));
        let s = step("12/Unknown - 3s 20ms/step - loss: 0.5");
        assert_eq!((s.step, s.steps), (12, None));
    }

    #[test]
    fn escape_strings_are_no_part_of_a_metric() {
        for raw in [
            &b"5/5 - 1s - loss: 0.3\x1b]52;c;aGVsbG8=\x07 - accuracy: 0.9"[..],
            b"5/5 - 1s - loss: 0.3\x1b]52;c;aGVsbG8=\x1b\\ - accuracy: 0.9",
            b"5/5 - 1s - loss: 0.3\x1b]8;;http://x/\x1b\\ - accuracy: 0.9",
            b"5/5 - 1s - loss: 0.3\xc2\x9d0;title\x07 - accuracy: 0.9",
            b"5/5 - 1s - loss: 0.3\x1bP1$r\x1b\\\x1b(B\x1b[2J - accuracy: 0.9",
        ] {
            let text = clean(raw);
            assert!(!text.contains(['\x1b', '\x07']), "{text:?}");
            assert_eq!(
                step(&text).metrics,
                metrics(&[("loss", 0.3), ("accuracy", 0.9)]),
                "{text:?}"
            );
        }
    }

    #[test]
    fn keras_3_bar_after_cleaning() {
        let raw = b"\x1b[1m2/5\x1b[0m \x1b[32m\xe2\x94\x81\xe2\x94\x81\x1b[0m\x1b[37m\xe2\x94\x81\x1b[0m \x1b[1m0s\x1b[0m 65ms/step - accuracy: 0.4844 - loss: 0.7074\x08\x08";
        let s = step(&clean(raw));
        assert_eq!((s.step, s.steps, s.eta), (2, Some(5), false));
        assert_eq!(s.secs_per_step, Some(0.065));
        assert_eq!(
            s.metrics,
            metrics(&[("accuracy", 0.4844), ("loss", 0.7074)])
        );
    }

    #[test]
    fn our_own_line() {
        let s = step("tf-spawner: epoch=3/10 step=120/500 loss=0.23 lr=1e-05 note=x");
        assert_eq!(s.epoch, Some((3, Some(10))));
        assert_eq!((s.step, s.steps, s.own), (120, Some(500), true));
        assert_eq!(s.metrics, metrics(&[("loss", 0.23), ("lr", 1e-5)]));
        let s = step("tf-spawner: step=7 loss=nan");
        assert_eq!((s.epoch, s.step, s.steps), (None, 7, None));
        // NaN is no value to show or estimate from.
        assert!(s.metrics.is_empty());
        assert_eq!(parse("tf-spawner: hello"), None);
    }

    #[test]
    fn lines_that_only_look_like_progress_are_not() {
        for text in [
            "3/5 files copied",
            "worker-0: 2 replicas in sync, global batch 128",
            "1/2",
            "",
            "loss: 0.3",
        ] {
            assert_eq!(parse(text), None, "{text}");
        }
        // A warning printed into the bar's line: the numbers before it still count.
        let s = step("2/5 [====>...] - ETA: 0s - accuracy: 0.5625WARNING:tensorflow:slow");
        assert_eq!(s.metrics, metrics(&[("accuracy", 0.5625)]));
    }
}
