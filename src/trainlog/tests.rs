//! The fixtures are real Keras output (tools/progress-fixtures/capture.sh): 2 epochs of
//! 5 steps, each step slowed to 60 ms, with the pinned TensorFlow 2.21.

use super::*;

/// Feeds `bytes` in chunks of `size`, a millisecond apart; returns the training and
/// every distinct (epoch, step) it went through.
/// (epoch, step) as a training went through them.
type Seen = Vec<(Option<u32>, Option<u64>)>;

fn feed(bytes: &[u8], size: usize) -> (Training, Seen) {
    let mut feed = Feed::new(false);
    let mut t = Training::default();
    let mut seen = Vec::new();
    for (n, chunk) in bytes.chunks(size).enumerate() {
        feed.push(chunk, n as Millis, &mut |_| true, &mut t);
        let now = (t.epoch, t.step);
        if seen.last() != Some(&now) {
            seen.push(now);
        }
    }
    feed.finish(bytes.len() as Millis, &mut t);
    (t, seen)
}

fn metrics(pairs: &[(&str, f64)]) -> Vec<(String, f64)> {
    pairs.iter().map(|(n, v)| (n.to_string(), *v)).collect()
}

/// (epoch, step) from epoch 1's start to epoch 2's last step, drawn step by step.
fn every_step() -> Seen {
    let mut all = vec![(None, None)];
    for epoch in 1..=2 {
        all.push((Some(epoch), None));
        all.extend((1..=5).map(|s| (Some(epoch), Some(s))));
    }
    all
}

fn check_end(t: &Training, secs_per_step: f64, end: &[(&str, f64)]) {
    assert_eq!(
        (t.epoch, t.epochs, t.step, t.steps),
        (Some(2), Some(2), Some(5), Some(5))
    );
    assert_eq!(t.epochs_done, 2);
    assert!(t.finished());
    assert_eq!(t.secs_left(), Some(0.0));
    assert_eq!(t.secs_per_step, Some(secs_per_step));
    assert_eq!(t.epoch_metrics, metrics(end));
    assert_eq!(t.metrics, metrics(end));
}

#[test]
fn tf_keras_2_21_bar_into_a_pipe_and_a_terminal() {
    for (bytes, per_step, end) in [
        (
            &include_bytes!("fixtures/tf-keras-2.21-pipe.txt")[..],
            0.064,
            [("loss", 0.7362), ("accuracy", 0.4750)],
        ),
        (
            &include_bytes!("fixtures/tf-keras-2.21-pty.txt")[..],
            0.063,
            [("loss", 0.6823), ("accuracy", 0.5375)],
        ),
    ] {
        for size in [1, 7, 4096] {
            let (t, seen) = feed(bytes, size);
            check_end(&t, per_step, &end);
            if size < 64 {
                assert_eq!(seen, every_step(), "chunks of {size}");
            }
        }
    }
}

#[test]
fn keras_3_bar_into_a_pipe_and_a_terminal() {
    for (bytes, per_step, end) in [
        (
            &include_bytes!("fixtures/keras-3-pipe.txt")[..],
            0.065,
            [("accuracy", 0.4938), ("loss", 0.7509)],
        ),
        (
            &include_bytes!("fixtures/keras-3-pty.txt")[..],
            0.065,
            [("accuracy", 0.5312), ("loss", 0.6850)],
        ),
    ] {
        for size in [1, 5, 4096] {
            let (t, seen) = feed(bytes, size);
            check_end(&t, per_step, &end);
            if size < 64 {
                assert_eq!(seen, every_step(), "chunks of {size}");
            }
        }
    }
}

#[test]
// tf-keras' loss happened to be 0.7071, close to 1/√2.
#[allow(clippy::approx_constant)]
fn one_line_per_epoch_of_both_kerases() {
    let (t, _) = feed(include_bytes!("fixtures/tf-keras-2.21-verbose2.txt"), 3);
    check_end(&t, 0.064, &[("loss", 0.7071), ("accuracy", 0.5063)]);
    let (t, _) = feed(include_bytes!("fixtures/keras-3-verbose2.txt"), 3);
    check_end(&t, 0.068, &[("accuracy", 0.5437), ("loss", 0.6997)]);
}

const T0: &str = "2026-11-25T21:00:00.000000000Z";

fn at(secs: u32) -> String {
    format!("2026-11-25T21:{:02}:{:02}.500000000Z", secs / 60, secs % 60)
}

#[test]
fn timestamps_time_the_epochs_and_estimate_what_is_left() {
    let log = format!(
        "{T0} starting\n{} Epoch 1/10\n{} 100/100 - 60s - loss: 0.5 - 600ms/step\n{} Epoch 2/10\n{} 100/100 - 61s - loss: 0.4 - 610ms/step\n{} Epoch 3/10\n",
        at(1),
        at(61),
        at(62),
        at(122),
        at(123),
    );
    for size in [1, 13, log.len()] {
        let mut feed = Feed::new(true);
        let mut t = Training::default();
        for chunk in log.as_bytes().chunks(size) {
            feed.push(chunk, 0, &mut |_| true, &mut t);
        }
        assert_eq!((t.epoch, t.epochs, t.epochs_done), (Some(3), Some(10), 2));
        assert_eq!(t.secs_per_epoch(), Some(60.0));
        assert_eq!(t.epoch_metrics, metrics(&[("loss", 0.4)]));
        // Epoch 3 just began: all of it and 7 more.
        assert_eq!(t.secs_left(), Some(480.0));
        assert_eq!(
            t.last_at,
            Some(at(123).parse::<Timestamp>().unwrap().as_millisecond())
        );
    }
}

#[test]
fn lines_sent_again_by_a_resumed_stream_are_skipped() {
    let mut feed = Feed::new(true);
    let mut t = Training::default();
    let first = format!(
        "{} Epoch 1/3\n{} 5/5 - 1s - loss: 0.5 - 1s/step\n",
        at(1),
        at(5)
    );
    let again = format!(
        "{} 5/5 - 1s - loss: 0.5 - 1s/step\n{} Epoch 2/3\n",
        at(5),
        at(6)
    );
    let seen = at(5).parse::<Timestamp>().unwrap();
    feed.push(first.as_bytes(), 0, &mut |_| true, &mut t);
    assert_eq!(t.epochs_done, 1);
    feed.push(again.as_bytes(), 0, &mut |ts| ts > seen, &mut t);
    assert_eq!((t.epoch, t.epochs_done), (Some(2), 1));
}

#[test]
fn our_own_line_measures_its_speed() {
    let mut feed = Feed::new(false);
    let mut t = Training::default();
    for (ms, step) in [(0, 100), (10_000, 200), (20_000, 300)] {
        let line = format!("tf-spawner: epoch=2/4 step={step}/500 loss=0.3\n");
        feed.push(line.as_bytes(), ms, &mut |_| true, &mut t);
    }
    assert_eq!(
        (t.epoch, t.epochs, t.step, t.steps),
        (Some(2), Some(4), Some(300), Some(500))
    );
    assert_eq!(t.steps_per_second(), Some(10.0));
    // 200 steps of this epoch (20 s) and 2 epochs of 500 steps (100 s).
    assert_eq!(t.secs_left(), Some(120.0));
    let line = "tf-spawner: epoch=2/4 step=500/500 loss=0.25\n";
    feed.push(line.as_bytes(), 40_000, &mut |_| true, &mut t);
    assert_eq!(t.epochs_done, 1);
    assert_eq!(t.epoch_metrics, metrics(&[("loss", 0.25)]));
}

#[test]
fn memory_stays_bounded_whatever_the_lines() {
    let mut feed = Feed::new(true);
    let mut t = Training::default();
    // 10 MB without a newline, then a progress line.
    let chunk = vec![b'x'; 64 * 1024];
    for _ in 0..160 {
        feed.push(&chunk, 0, &mut |_| true, &mut t);
        assert!(feed.state.len() <= MAX_STATE && feed.head.len() <= MAX_TIMESTAMP);
    }
    feed.push(b"\nEpoch 1/2\n", 7, &mut |_| true, &mut t);
    assert_eq!((t.epoch, t.last_at), (Some(1), Some(7)));
    // 100,000 redraws of a long line.
    let redraw = format!("\r{}", "y".repeat(300));
    for _ in 0..100_000 {
        feed.push(redraw.as_bytes(), 8, &mut |_| true, &mut t);
    }
    assert!(feed.state.len() <= MAX_STATE);
    feed.push(
        b"\r3/5 [==>...] - ETA: 1s - loss: 0.5\x08\x08",
        9,
        &mut |_| true,
        &mut t,
    );
    feed.push(b"\r", 9, &mut |_| true, &mut t);
    assert_eq!(t.step, Some(3));
    assert!(!t.is_empty() && feed.state.is_empty());
}

#[test]
fn output_without_progress_says_nothing() {
    let mut feed = Feed::new(false);
    let mut t = Training::default();
    let text = b"worker-0: 2 replicas in sync\nhello\r\n\x1b[1mbold\x1b[0m\n3/5 files\n";
    feed.push(text, 0, &mut |_| true, &mut t);
    feed.finish(1, &mut t);
    assert!(t.is_empty());
    assert_eq!(t, Training::default());
}

#[test]
fn the_longest_gap_is_kept_between_progress_lines_only() {
    let mut t = Training::default();
    assert_eq!(t.longest_gap, None);
    t.read(1_000, "Epoch 1/3", true);
    // One line: no gap yet.
    assert_eq!(t.longest_gap, None);
    t.read(4_000, "100/100 - 3s - loss: 0.5", true);
    // A line that is no progress does not count.
    t.read(60_000, "saving the model", true);
    t.read(9_000, "Epoch 2/3", true);
    t.read(10_000, "100/100 - 1s - loss: 0.4", true);
    assert_eq!(t.longest_gap, Some(5_000));
    // A clock that goes back never makes a negative gap.
    t.read(2_000, "Epoch 3/3", true);
    assert_eq!(t.longest_gap, Some(5_000));
}
