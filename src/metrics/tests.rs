use std::collections::BTreeMap;

use super::chart::{self, Series, Size};
use super::table::{self, Compared, SortBy};
use super::*;
use crate::trainlog::Feed;

fn training_of(bytes: &[u8]) -> Training {
    let mut feed = Feed::new(false);
    let mut t = Training::default();
    for (n, chunk) in bytes.chunks(100).enumerate() {
        feed.push(chunk, n as i64 * 10, &mut |_| true, &mut t);
    }
    feed.finish(bytes.len() as i64 * 10, &mut t);
    t
}

/// A training of `epochs` epochs whose metrics are `f(epoch)`.
fn trained(epochs: u32, f: impl Fn(u32) -> Vec<(String, f64)>) -> Training {
    let mut t = Training::default();
    for e in 1..=epochs {
        let at = i64::from(e) * 1000;
        t.read(at, &format!("Epoch {e}/{epochs}"), true);
        let metrics: Vec<String> = f(e).iter().map(|(n, v)| format!("{n}: {v:.4}")).collect();
        t.read(
            at + 900,
            &format!("5/5 - 1s 63ms/step - {}", metrics.join(" - ")),
            true,
        );
    }
    t
}

fn losses(loss: f64, acc: f64) -> Vec<(String, f64)> {
    vec![("loss".into(), loss), ("accuracy".into(), acc)]
}

#[test]
fn a_keras_run_keeps_its_final_best_and_curve() {
    let t = training_of(include_bytes!("../trainlog/fixtures/keras-3-pipe.txt"));
    let m = RunMetrics::of(&t, Some(12), 0).expect("metrics");
    assert_eq!(m.epochs_done, 2);
    assert_eq!(m.epochs, Some(2));
    assert_eq!(m.curve.epoch, vec![1, 2]);
    assert_eq!(m.curve.metrics["loss"].len(), 2);
    assert_eq!(m.last["loss"], m.curve.metrics["loss"][1].unwrap());
    assert!(m.best["loss"] <= m.last["loss"]);
    assert!(m.best["accuracy"] >= m.last["accuracy"]);
    let back = RunMetrics::parse(&m.to_text()).expect("parsed");
    assert_eq!(back, m);
}

#[test]
fn nothing_printed_is_no_record() {
    assert_eq!(RunMetrics::of(&Training::default(), Some(3), 0), None);
}

#[test]
fn the_record_stays_within_its_bound_whatever_the_run() {
    let names: Vec<String> = (0..40)
        .map(|i| format!("{}_{i}", "m".repeat(150)))
        .collect();
    let mut t = Training::default();
    for e in 1..=5_000u32 {
        let metrics: Vec<(String, f64)> = names
            .iter()
            .map(|n| (n.clone(), 1.0 / f64::from(e) + 0.123_456_789))
            .collect();
        t.read(i64::from(e), &format!("Epoch {e}/5000"), true);
        let line: Vec<String> = metrics.iter().map(|(n, v)| format!("{n}: {v}")).collect();
        if line.join(" - ").len() < 4000 {
            t.read(i64::from(e), &format!("1/1 - {}", line.join(" - ")), true);
        }
        // The parser keeps lines under 4 KiB: feed the history directly too.
        t.history.push(e, &metrics);
    }
    let m = RunMetrics::of(&t, None, 0).expect("metrics");
    let text = m.to_text();
    assert!(text.len() <= MAX_BYTES, "{}", text.len());
    let back = RunMetrics::parse(&text).expect("parsed");
    assert!(back.curve.metrics.len() <= HISTORY_METRICS);
    assert!(
        back.curve
            .metrics
            .keys()
            .all(|n| n.chars().count() <= NAME_CHARS)
    );
    assert!(back.curve.epoch.len() >= 100, "{}", back.curve.epoch.len());
    assert_eq!(back.curve.epoch[0], 1);
}

#[test]
fn a_restart_continues_the_curve_and_the_best() {
    let first = RunMetrics::of(
        &trained(3, |e| losses(1.0 / f64::from(e), 0.5)),
        Some(30),
        0,
    );
    // The restarted attempt resumes at epoch 3 (BackupAndRestore) and ends at 5.
    let mut t = Training::default();
    for e in 3..=5 {
        t.read(i64::from(e) * 1000, &format!("Epoch {e}/5"), true);
        t.read(
            i64::from(e) * 1000 + 900,
            "5/5 - 1s 63ms/step - loss: 0.5000 - accuracy: 0.6000",
            true,
        );
    }
    let second = RunMetrics::of(&t, Some(20), 1).unwrap();
    let both = first.unwrap().then(&second);
    assert_eq!(both.curve.epoch, vec![1, 2, 3, 4, 5]);
    assert_eq!(both.curve.metrics["loss"][0], Some(1.0));
    assert_eq!(both.epochs_done, 5);
    assert_eq!(both.best["loss"], 0.3333);
    assert_eq!(both.best["accuracy"], 0.6);
    assert_eq!(both.restarts, 1);
    assert_eq!(both.secs, Some(50));
}

#[test]
fn numbers_read_well() {
    assert_eq!(number(0.031_234_5), "0.03123");
    assert_eq!(number(1.5), "1.5");
    assert_eq!(number(1234.567), "1235");
    assert_eq!(number(0.0), "0");
    assert_eq!(number(2.5e-6), "2.500e-6");
}

fn run(tag: &str, lr: &str, verdict: &str, f: impl Fn(u32) -> (f64, f64)) -> Compared {
    let t = trained(8, |e| {
        let (l, a) = f(e);
        losses(l, a)
    });
    let mut params = BTreeMap::new();
    params.insert("lr".to_string(), lr.to_string());
    params.insert("batch".to_string(), "64".to_string());
    Compared {
        tag: tag.into(),
        experiment: Some("lrs".into()),
        params,
        verdict: Some(verdict.into()),
        metrics: RunMetrics::of(&t, Some(95), 0),
        followed_by: None,
    }
}

fn three() -> Vec<Compared> {
    vec![
        run(
            "lrs-1",
            "0.1",
            "Failed: pod lrs-1-worker-0 exited with code 1",
            |e| (0.2 / f64::from(e), 0.9),
        ),
        run("lrs-2", "0.01", "Succeeded", |e| {
            (1.0 / f64::from(e), 0.5 + 0.06 * f64::from(e))
        }),
        run("lrs-3", "0.001", "Succeeded", |e| {
            (2.0 - 0.1 * f64::from(e), 0.4)
        }),
    ]
}

#[test]
fn sorting_follows_the_metrics_direction_and_marks_the_best_succeeded_run() {
    let mut runs = three();
    let by = SortBy::default_for(&runs).unwrap();
    assert_eq!(
        by,
        SortBy {
            metric: "loss".into(),
            lower_first: true
        }
    );
    let best = table::sort(&mut runs, Some(&by));
    let tags: Vec<&str> = runs.iter().map(|r| r.tag.as_str()).collect();
    assert_eq!(tags, ["lrs-1", "lrs-2", "lrs-3"]);
    // lrs-1 failed: the best is the best run that succeeded.
    assert_eq!(best.as_deref(), Some("lrs-2"));

    let by = SortBy::parse("accuracy").unwrap();
    assert!(!by.lower_first);
    table::sort(&mut runs, Some(&by));
    let tags: Vec<&str> = runs.iter().map(|r| r.tag.as_str()).collect();
    assert_eq!(tags, ["lrs-2", "lrs-1", "lrs-3"]);

    let by = SortBy::parse("-loss").unwrap();
    assert!(!by.lower_first);
    assert!(SortBy::parse("+accuracy").unwrap().lower_first);
    assert!(SortBy::parse("-").is_err());
    assert!(SortBy::parse("a b").is_err());
}

#[test]
fn the_table_shows_the_differing_parameters_and_marks_the_best() {
    let mut runs = three();
    let by = SortBy::parse("loss").unwrap();
    let best = table::sort(&mut runs, Some(&by));
    insta::assert_snapshot!(table::render(&runs, Some(&by), best.as_deref()));
}

#[test]
fn csv_and_json_for_notebooks() {
    let mut runs = three();
    let by = SortBy::parse("loss").unwrap();
    let best = table::sort(&mut runs, Some(&by));
    insta::assert_snapshot!(table::to_csv(&runs, best.as_deref()));
    let json = serde_json::to_value(table::to_json(
        &runs,
        Some("lrs"),
        Some(&by),
        best.as_deref(),
    ))
    .unwrap();
    assert_eq!(json["best"], "lrs-2");
    assert_eq!(json["sort"]["order"], "ascending");
    assert_eq!(json["runs"][1]["params"]["lr"], "0.01");
    assert_eq!(
        json["runs"][1]["curve"]["epoch"].as_array().unwrap().len(),
        8
    );
    assert_eq!(json["runs"][1]["final"]["loss"], 0.125);
}

#[test]
fn a_csv_field_with_a_comma_is_quoted() {
    let mut r = three().remove(0);
    r.params.insert("layers".into(), "64,32".into());
    let csv = table::to_csv(&[r], None);
    assert!(csv.lines().nth(1).unwrap().contains("\"64,32\""), "{csv}");
}

/// OWASP's CSV injection advice: a field a spreadsheet would run is prefixed with `'`,
/// a parameter from the cluster and a metric's name alike; a negative number is kept.
#[test]
fn a_csv_field_that_a_spreadsheet_would_run_is_neutralised() {
    let mut r = three().remove(0);
    r.params
        .insert("link".into(), "=HYPERLINK(\"http://e/\",\"x\")".into());
    r.params.insert("cmd".into(), "=cmd|' /C calc'!A0".into());
    for (name, value) in [
        ("plus", "+1+1"),
        ("at", "@SUM(A1)"),
        ("tab", "\t=1"),
        ("neg", "-0.5"),
    ] {
        r.params.insert(name.into(), value.into());
    }
    let m = r.metrics.as_mut().unwrap();
    m.last.insert("-2+3".into(), 1.0);
    let csv = table::to_csv(&[r], None);
    let (header, row) = (csv.lines().next().unwrap(), csv.lines().nth(1).unwrap());
    assert!(
        header.contains(",final_-2+3,"),
        "a header field starts with f: {csv}"
    );
    assert!(
        row.contains(",\"'=HYPERLINK(\"\"http://e/\"\",\"\"x\"\")\","),
        "{csv}"
    );
    assert!(row.contains(",'=cmd|' /C calc'!A0,"), "{csv}");
    assert!(
        row.contains(",'+1+1,") && row.contains(",'@SUM(A1),"),
        "{csv}"
    );
    assert!(row.contains(",'\t=1,") && row.contains(",-0.5,"), "{csv}");
    assert_eq!(table::inert("-x"), "'-x");
    assert_eq!(table::inert("\r=1"), "'\r=1");
    assert_eq!(table::inert("lrs-1"), "lrs-1");
}

#[test]
fn the_chart_draws_every_run_with_its_mark() {
    let runs = three();
    let series: Vec<Series> = runs
        .iter()
        .map(|r| Series {
            label: format!("{} (lr={})", r.tag, r.params["lr"]),
            points: r.metrics.as_ref().unwrap().curve.series("loss"),
        })
        .collect();
    let text = chart::draw(
        "loss",
        &series,
        Size {
            width: 40,
            height: 10,
        },
        false,
    )
    .unwrap();
    insta::assert_snapshot!(text.codes());
    let coloured = chart::draw(
        "loss",
        &series,
        Size {
            width: 40,
            height: 10,
        },
        true,
    )
    .unwrap();
    assert!(coloured.codes().contains("\x1b[31m*\x1b[0m"));
}

#[test]
fn a_chart_of_one_point_or_no_point() {
    let one = [Series {
        label: "a".into(),
        points: vec![(1, 0.5)],
    }];
    let text = chart::draw(
        "loss",
        &one,
        Size {
            width: 10,
            height: 4,
        },
        false,
    )
    .unwrap();
    assert_eq!(text.codes().matches('*').count(), 2, "{text:?}");
    let none = [Series {
        label: "a".into(),
        points: vec![],
    }];
    assert_eq!(
        chart::draw(
            "loss",
            &none,
            Size {
                width: 10,
                height: 4
            },
            false
        ),
        None
    );
}

#[test]
fn control_characters_from_the_cluster_are_escaped() {
    let mut r = three().remove(0);
    r.params.insert("x\x1b[31m".into(), "v\x07".into());
    let text = table::render(&[r.clone(), three().remove(1)], None, None);
    assert!(!text.contains('\x1b') && !text.contains('\x07'), "{text:?}");
}

/// Issue 57: a record read back is bounded as the writer bounds it: a forged one over
/// the bound is none, one within it is cut to the writer's counts and lengths.
#[test]
fn a_record_read_back_is_bounded_as_written() {
    let huge = format!(
        r#"{{"epochs_done":1,"verdict":"{}"}}"#,
        "x".repeat(MAX_READ)
    );
    assert_eq!(RunMetrics::parse(&huge), None);
    let many: Vec<String> = (0..100)
        .map(|i| format!(r#""{i}{}":1.0"#, "m".repeat(300)))
        .collect();
    let epochs: Vec<String> = (0..3000).map(|i| i.to_string()).collect();
    let text = format!(
        r#"{{"epochs_done":1,"final":{{{m}}},"best":{{{m}}},"curve":{{"epoch":[{e}],"metrics":{{{c}}}}},"verdict":"Failed\nforged"}}"#,
        m = many.join(","),
        e = epochs.join(","),
        c = (0..100)
            .map(|i| format!(r#""n{i}":[1.0]"#))
            .collect::<Vec<_>>()
            .join(","),
    );
    assert!(text.len() <= MAX_READ, "{}", text.len());
    let m = RunMetrics::parse(&text).expect("parsed");
    assert_eq!(
        (m.last.len(), m.best.len()),
        (HISTORY_METRICS, HISTORY_METRICS)
    );
    assert!(m.last.keys().all(|n| n.chars().count() <= NAME_CHARS));
    assert_eq!(m.curve.epoch.len(), HISTORY_POINTS);
    assert_eq!(m.curve.metrics.len(), HISTORY_METRICS);
    assert!(m.curve.metrics.values().all(|c| c.len() == HISTORY_POINTS));
    assert_eq!(m.verdict.as_deref(), Some("Failed"));
}
