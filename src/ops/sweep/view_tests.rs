use super::*;

fn runs(n: usize) -> Vec<(String, Point)> {
    (1..=n)
        .map(|k| {
            let lr = format!("1e-{k}");
            (format!("ex-{k}"), vec![("lr".to_string(), lr)])
        })
        .collect()
}

/// A training at epoch `k` of `n`, its last step line's loss and accuracy.
fn at_epoch(k: u32, n: u32, loss: f64, accuracy: f64) -> Box<Training> {
    let mut t = Training::default();
    t.read(1000, &format!("Epoch {k}/{n}"), true);
    t.read(
        1900,
        &format!("3/5 - 1s 63ms/step - loss: {loss:.4} - accuracy: {accuracy:.4}"),
        true,
    );
    Box::new(t)
}

fn state(tag: &str, state: &str) -> Seen {
    Seen::State {
        tag: tag.into(),
        state: state.into(),
    }
}

fn training(tag: &str, training: Box<Training>) -> Seen {
    Seen::Training {
        tag: tag.into(),
        training,
    }
}

/// Four runs: one succeeded, one failed, one running, one waiting.
fn busy_board() -> Board {
    let mut b = Board::new("ex", &runs(4));
    for i in 0..3 {
        b.starting(i);
    }
    b.seen(state("ex-1", "Running"));
    b.seen(training("ex-1", at_epoch(3, 3, 0.1234, 0.97)));
    b.ended("ex-1", "Succeeded", "Succeeded");
    b.seen(state("ex-2", "Running"));
    b.ended("ex-2", "Failed", "Failed: exit code 1");
    b.seen(state("ex-3", "Running"));
    b.seen(training("ex-3", at_epoch(2, 3, 0.31, 0.9)));
    b
}

#[test]
fn the_table_has_a_row_per_run_with_its_state_epoch_and_last_metrics() {
    insta::assert_snapshot!(busy_board().render(100, 40));
}

#[test]
fn a_narrow_terminal_cuts_each_line_and_a_short_one_keeps_the_runs_under_way() {
    let board = busy_board();
    let narrow = board.render(40, 40);
    assert!(narrow.lines().all(|l| l.chars().count() < 40), "{narrow}");
    // Room for two rows: the one running, then the failed one; the rest counted.
    insta::assert_snapshot!(board.render(100, 5));
}

#[test]
fn a_pipe_gets_a_line_per_change_of_state_or_epoch_not_per_step() {
    let mut b = Board::new("ex", &runs(2));
    b.starting(0);
    assert_eq!(
        b.seen(state("ex-1", "Pending")).as_deref(),
        Some("ex-1  Pending\n")
    );
    assert_eq!(b.seen(state("ex-1", "Pending")), None);
    assert_eq!(
        b.seen(training("ex-1", at_epoch(1, 3, 0.5, 0.8)))
            .as_deref(),
        Some("ex-1  Pending  epoch 1/3, loss 0.5, accuracy 0.8\n")
    );
    // Another step of the same epoch: no line.
    assert_eq!(b.seen(training("ex-1", at_epoch(1, 3, 0.4, 0.85))), None);
    assert_eq!(
        b.seen(state("ex-1", "Running")).as_deref(),
        Some("ex-1  Running  epoch 1/3, loss 0.4, accuracy 0.85\n")
    );
    // The verdict's line is the end's, with its reason.
    assert_eq!(b.seen(state("ex-1", "Failed")), None);
    assert_eq!(
        b.ended("ex-1", "Failed", "Failed: exit code 1"),
        "ex-1  Failed: exit code 1\n"
    );
    // A run that ended stays so.
    assert_eq!(b.seen(state("ex-1", "Running")), None);
    assert!(b.render(80, 24).contains("ex-1   1e-1   Failed"));
}

/// Keras' `verbose=2`: an epoch's metrics (val_loss among them) at its end only. The
/// metric the experiment is judged by comes first; at the next epoch's start, the
/// metrics shown say they are the last epoch's.
#[test]
fn the_objective_comes_first_and_an_earlier_epochs_metrics_say_so() {
    let mut t = Training::default();
    t.read(1000, "Epoch 1/2", true);
    t.read(
        1900,
        "3/3 - 1s - loss: 0.5000 - accuracy: 0.7000 - val_loss: 0.6000 - val_accuracy: 0.6500",
        true,
    );
    let mut b = Board::new("ex", &runs(1));
    b.starting(0);
    b.seen(state("ex-1", "Running"));
    assert_eq!(
        b.seen(training("ex-1", Box::new(t.clone()))).as_deref(),
        Some("ex-1  Running  epoch 1/2, val_loss 0.6, loss 0.5\n")
    );
    t.read(2000, "Epoch 2/2", true);
    assert_eq!(
        b.seen(training("ex-1", Box::new(t.clone()))).as_deref(),
        Some("ex-1  Running  epoch 2/2, val_loss 0.6, loss 0.5 (epoch 1)\n")
    );
    assert!(
        b.render(100, 10)
            .contains("Running   2/2     val_loss 0.6, loss 0.5 (epoch 1)"),
        "{}",
        b.render(100, 10)
    );
    t.read(
        2900,
        "3/3 - 1s - loss: 0.3000 - accuracy: 0.8000 - val_loss: 0.4000 - val_accuracy: 0.7500",
        true,
    );
    b.seen(training("ex-1", Box::new(t)));
    assert!(
        b.render(100, 10)
            .contains("Running   2/2     val_loss 0.4, loss 0.3\n"),
        "{}",
        b.render(100, 10)
    );
}

/// `--method tpe`: a run whose point is not chosen yet shows `…`, then its point.
#[test]
fn a_proposed_point_replaces_the_unchosen_one_in_the_table() {
    let mut given = runs(2);
    given[1].1 = vec![("lr".to_string(), "…".to_string())];
    let mut b = Board::new("ex", &given);
    let table = b.render(100, 20);
    let row = table.lines().find(|l| l.starts_with("ex-2")).unwrap();
    assert!(row.contains('…') && row.contains("waiting"), "{table}");
    b.proposed(1, &vec![("lr".to_string(), "0.003162".to_string())]);
    b.starting(1);
    let table = b.render(100, 20);
    let row = table.lines().find(|l| l.starts_with("ex-2")).unwrap();
    assert!(
        row.contains("0.003162") && row.contains("starting"),
        "{table}"
    );
}
