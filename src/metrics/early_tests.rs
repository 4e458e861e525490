use super::*;

fn asha(eta: u32, min_epochs: u32) -> Stopping {
    Stopping {
        rule: Rule::Asha,
        eta,
        min_epochs,
    }
}

fn median(min_epochs: u32) -> Stopping {
    Stopping {
        rule: Rule::Median,
        eta: DEFAULT_ETA,
        min_epochs,
    }
}

fn loss() -> Objective {
    Objective::parse("val_loss").unwrap()
}

#[test]
fn rungs_sit_at_min_epochs_times_powers_of_eta_below_the_epoch_count() {
    let s = asha(3, 1);
    let at: Vec<u32> = (1..=30).filter(|e| s.rung_of(*e).is_some()).collect();
    assert_eq!(at, [1, 3, 9, 27]);
    assert_eq!(s.rung_of(9), Some(3));
    assert_eq!(s.rung_of(10), None);
    let s = asha(2, 4);
    let at: Vec<u32> = (1..=40).filter(|e| s.rung_of(*e).is_some()).collect();
    assert_eq!(at, [4, 8, 16, 32]);
    // Below the run's epoch count: a rung at the last epoch decides nothing.
    assert_eq!(asha(3, 1).rungs(27), 3);
    assert_eq!(asha(3, 1).rungs(28), 4);
    assert_eq!(asha(3, 1).rungs(1), 0);
    assert!(
        !Stopping {
            rule: Rule::Off,
            ..asha(3, 1)
        }
        .checks(1)
    );
}

#[test]
fn objective_direction_comes_from_the_name_unless_given() {
    assert!(Objective::parse("val_loss").unwrap().lower);
    assert!(!Objective::parse("val_accuracy").unwrap().lower);
    assert!(!Objective::parse("val_loss:max").unwrap().lower);
    assert!(Objective::parse("accuracy:min").unwrap().lower);
    assert_eq!(Objective::parse("acc").unwrap().text(), "acc:max");
    assert!(
        Objective::parse("val_loss:down")
            .unwrap_err()
            .contains("min or max")
    );
    assert!(Objective::parse(":min").is_err());
    assert!(Objective::parse("a b").is_err());
}

#[test]
fn fewer_than_eta_runs_at_a_rung_stop_nobody() {
    let mut b = Board::new(asha(3, 1), loss());
    assert_eq!(b.observe("r-1", (1, Some(10)), 0.5), None);
    assert_eq!(b.observe("r-2", (1, Some(10)), 0.9), None);
    // Third at the rung: ⌈3/3⌉ = 1st best is the cut-off, 0.95 is worse.
    let d = b.observe("r-3", (1, Some(10)), 0.95).expect("stopped");
    assert_eq!(d.cutoff, 0.5);
    assert!(b.is_stopped("r-3"));
}

/// A rung at a run's last epoch (27 of 27 with η 3) is not one of its rungs: its value
/// counts for the others, the run itself finishes (found by benches/adaptive.rs). The
/// median rule likewise.
#[test]
fn a_run_at_its_last_epoch_is_observed_never_stopped() {
    for rule in [asha(3, 1), median(1)] {
        let mut b = Board::new(rule, loss());
        for (i, v) in [0.3, 0.4, 0.5].iter().enumerate() {
            b.restore(&format!("r-{}", i + 1), 27, *v);
        }
        assert_eq!(b.observe("last", (27, Some(27)), 0.9), None, "{rule:?}");
        assert!(!b.is_stopped("last"));
        // Its value is there for the next run at that epoch, which still has epochs left.
        let d = b.observe("next", (27, Some(81)), 0.95).expect("stopped");
        assert!(d.cutoff < 0.9, "{rule:?}: {}", d.cutoff);
    }
}

#[test]
fn the_cutoff_is_the_ceil_n_over_eta_th_best() {
    let mut b = Board::new(asha(3, 1), loss());
    for (i, v) in [0.3, 0.62, 0.7, 0.8, 0.5].iter().enumerate() {
        b.restore(&format!("r-{}", i + 1), 3, *v);
    }
    // n = 6, ⌈6/3⌉ = 2: the 2nd best of 0.3, 0.5, 0.62, 0.7, 0.8, 0.91 is 0.5.
    let d = b.observe("lr-4", (3, Some(30)), 0.91).expect("stopped");
    assert_eq!(d.cutoff, 0.5);
    assert_eq!(
        d.line("val_loss"),
        "lr-4 stopped at epoch 3 (rung 2 of 4): val_loss 0.91, worse than 0.5, the 2nd best of 6 runs at epoch 3"
    );
    // n = 7: ⌈7/3⌉ = 3rd best, 0.62; 0.6 is better: it survives.
    assert_eq!(b.observe("r-7", (3, None), 0.6), None);
    // n = 8: 3rd best is 0.6 now; 0.65 is worse, and the line without an epoch count.
    let d = b.observe("r-8", (3, None), 0.65).expect("stopped");
    assert_eq!(d.cutoff, 0.6);
    assert!(
        d.line("val_loss").contains("(rung 2):"),
        "{}",
        d.line("val_loss")
    );
}

#[test]
fn a_tie_with_the_cutoff_survives() {
    let mut b = Board::new(asha(3, 1), loss());
    b.restore("a", 1, 0.4);
    b.restore("b", 1, 0.5);
    assert_eq!(b.observe("c", (1, None), 0.4), None);
    // n = 4: the 2nd best of 0.4, 0.4, 0.4, 0.5 is 0.4, d's own value.
    assert_eq!(b.observe("d", (1, None), 0.4), None);
    assert!(b.observe("e", (1, None), 0.41).is_some());
}

#[test]
fn higher_is_better_for_a_max_objective() {
    let mut b = Board::new(asha(3, 1), Objective::parse("accuracy").unwrap());
    b.restore("a", 1, 0.9);
    b.restore("b", 1, 0.8);
    assert_eq!(b.observe("c", (1, None), 0.95), None);
    let d = b.observe("d", (1, None), 0.7).expect("stopped");
    // n = 4: ⌈4/3⌉ = 2nd best of 0.95, 0.9, 0.8, 0.7.
    assert_eq!(d.cutoff, 0.9);
}

#[test]
fn a_run_is_judged_once_per_rung_and_never_after_a_stop() {
    let mut b = Board::new(asha(3, 1), loss());
    b.restore("a", 1, 0.1);
    b.restore("b", 1, 0.2);
    assert!(b.observe("c", (1, None), 0.9).is_some());
    assert!(!b.wants("c", 3, 0.9));
    assert_eq!(b.observe("c", (3, None), 5.0), None);
    // Not a rung, not finite, or seen already: not read.
    assert!(!b.wants("a", 2, 0.1));
    assert!(!b.wants("a", 1, 0.1));
    assert!(!b.wants("z", 1, f64::NAN));
    // A run stopped before a --resume is never judged again.
    let mut again = Board::new(asha(3, 1), loss());
    again.stopped("c");
    assert!(!again.wants("c", 3, 0.9));
}

#[test]
fn median_of_the_others_odd_and_even() {
    let mut b = Board::new(median(2), loss());
    assert!(!b.wants("a", 1, 0.1), "before --min-epochs");
    for (t, v) in [("a", 0.1), ("b", 0.2), ("c", 0.9)] {
        b.restore(t, 2, v);
    }
    // Others 0.1, 0.2, 0.9: the median 0.2 (Katib's mean would be 0.4).
    let d = b.observe("d", (2, None), 0.3).expect("stopped");
    assert_eq!(d.cutoff, 0.2);
    assert_eq!(
        d.line("val_loss"),
        "d stopped at epoch 2: val_loss 0.3, worse than 0.2, the median of 3 other runs at epoch 2"
    );
    // Others 0.1, 0.2, 0.9, 0.3: the median (0.2 + 0.3) / 2 = 0.25; 0.25 ties, survives.
    assert_eq!(b.observe("e", (2, None), 0.25), None);
    let mut c = Board::new(median(1), loss());
    for (t, v) in [("a", 0.1), ("b", 0.2), ("c", 0.3), ("d", 0.4)] {
        c.restore(t, 1, v);
    }
    assert_eq!(c.observe("e", (1, None), 0.26).unwrap().cutoff, 0.25);
}

#[test]
fn median_needs_three_others() {
    let mut b = Board::new(median(1), loss());
    b.restore("a", 1, 0.1);
    b.restore("b", 1, 0.2);
    assert_eq!(b.observe("c", (1, None), 9.0), None);
}

#[test]
fn ordinals() {
    let words: Vec<String> = [1, 2, 3, 4, 11, 12, 13, 21, 22, 101].map(ordinal).into();
    assert_eq!(
        words,
        [
            "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st"
        ]
    );
}
