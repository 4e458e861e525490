use super::*;
use crate::metrics::early::Rule;
use crate::ops::sweep::definition::Asked;

fn definition(params: &[&str], samples: Option<u32>, seed: Option<u64>) -> Definition {
    searched(params, (samples, seed), None)
}

fn searched(
    params: &[&str],
    (samples, seed): (Option<u32>, Option<u64>),
    search: Option<crate::plan::sweep::Search>,
) -> Definition {
    let params: Vec<String> = params.iter().map(|p| p.to_string()).collect();
    Definition::parse(&Asked {
        name: "ex",
        params: &params,
        samples,
        seed,
        search,
        parallel: None,
        args: &[],
        yes: false,
        objective: search.map(|_| crate::metrics::early::Objective::parse("loss").unwrap()),
        stopping: Stopping {
            rule: Rule::Off,
            eta: 3,
            min_epochs: 1,
        },
    })
    .unwrap()
}

fn digests(script: &str) -> Digests {
    Digests {
        script: script.to_string(),
        dir: None,
    }
}

fn place() -> Place {
    Place {
        what: "configmap ex-experiment".into(),
        remove: "tf-spawner -d --experiment ex".into(),
    }
}

fn take(
    stored: ExperimentRecord,
    def: &Definition,
    now: &Digests,
    allow: bool,
) -> Result<ExperimentRecord, String> {
    let taking = Taking {
        definition: def,
        digests: now,
        allow_changed: allow,
        script: "train.py",
        dir: None,
    };
    take_up(stored, &taking, &place()).map_err(|e| e.to_string())
}

#[test]
fn a_record_the_sweep_made_is_taken_up_with_its_seed_and_only_its_own_verdicts() {
    let made = definition(&["lr=log:0.0001..0.1", "k=int:1..4"], Some(5), Some(7));
    let mut stored = made.record(digests("sha256:a"));
    stored.ended = [
        ("ex-1", "Succeeded"),
        ("ex-2", "Failed: worker-0 exit 1"),
        ("ex-3", "Running"),
        ("other", "Succeeded"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    // --resume without --seed: the record's.
    let again = definition(&["lr=log:0.0001..0.1", "k=int:1..4"], Some(5), None);
    let taken = take(stored.clone(), &again, &digests("sha256:a"), false).unwrap();
    assert_eq!(
        taken.method,
        Method::Random {
            samples: 5,
            seed: 7
        }
    );
    assert_eq!(taken.runs, stored.runs);
    assert_eq!(
        taken.ended.keys().collect::<Vec<_>>(),
        ["ex-1", "ex-2"],
        "a verdict of its own runs, Succeeded or Failed"
    );
}

#[test]
fn a_sampled_value_outside_the_range_or_another_seed_is_refused() {
    let made = definition(&["lr=0.1..0.5"], Some(2), Some(1));
    let mut stored = made.record(digests("sha256:a"));
    stored.runs[1].params.insert("lr".into(), "0.9".into());
    let err = take(stored.clone(), &made, &digests("sha256:a"), false).unwrap_err();
    assert!(
        err.contains("run ex-2's parameters (lr=0.9) are not a point of the sweep's"),
        "{err}"
    );
    // The rounding of a sample to 4 digits is inside.
    stored.runs[1]
        .params
        .insert("lr".into(), "0.5000001".into());
    take(stored.clone(), &made, &digests("sha256:a"), false).unwrap();
    let other_seed = definition(&["lr=0.1..0.5"], Some(2), Some(2));
    let err = take(stored, &other_seed, &digests("sha256:a"), false).unwrap_err();
    assert!(
        err.contains("was started with --samples 2 --seed 1, not --samples 2 --seed 2"),
        "{err}"
    );
}

#[test]
fn a_changed_or_missing_digest_is_refused_unless_allowed() {
    let made = definition(&["lr=1,2"], None, None);
    let stored = made.record(digests("sha256:a"));
    let err = take(stored.clone(), &made, &digests("sha256:b"), false).unwrap_err();
    assert!(
        err.contains("the training script train.py changed since it began"),
        "{err}"
    );
    assert!(err.contains("--allow-changed"), "{err}");
    take(stored.clone(), &made, &digests("sha256:b"), true).unwrap();
    let mut old = stored;
    old.digests = None;
    let err = take(old, &made, &digests("sha256:a"), false).unwrap_err();
    assert!(err.contains("holds no digest"), "{err}");
}

#[test]
fn another_objective_or_rule_is_refused_and_only_sound_observations_are_taken() {
    let mut made = definition(&["lr=1,2,3"], None, None);
    made.objective = Some(Objective::parse("val_loss").unwrap());
    made.stopping = Some(Stopping {
        rule: Rule::Asha,
        eta: 3,
        min_epochs: 1,
    });
    let mut stored = made.record(digests("sha256:a"));
    stored
        .observed
        .insert("ex-1".into(), [(1, 0.5), (0, 0.1), (3, f64::NAN)].into());
    stored.observed.insert("other".into(), [(1, 0.5)].into());
    stored.ended.insert(
        "ex-2".into(),
        "StoppedEarly: ex-2 stopped at epoch 1".into(),
    );
    let taken = take(stored.clone(), &made, &digests("sha256:a"), false).unwrap();
    assert_eq!(taken.observed.len(), 1, "its own runs only");
    assert_eq!(
        taken.observed["ex-1"],
        [(1, 0.5)].into(),
        "epochs from 1, finite"
    );
    assert!(taken.ended["ex-2"].starts_with("StoppedEarly"));
    let plain = definition(&["lr=1,2,3"], None, None);
    let err = take(stored.clone(), &plain, &digests("sha256:a"), false).unwrap_err();
    assert!(
        err.contains("--objective val_loss:min, not no --objective"),
        "{err}"
    );
    let mut median = made;
    median.stopping = Some(Stopping {
        rule: Rule::Median,
        eta: 3,
        min_epochs: 1,
    });
    let err = take(stored, &median, &digests("sha256:a"), false).unwrap_err();
    assert!(
        err.contains("--early-stop asha --eta 3 --min-epochs 1, not --early-stop median"),
        "{err}"
    );
}

#[test]
fn a_tpe_record_holds_up_to_its_budget_and_another_method_is_refused() {
    use crate::plan::sweep::{PlannedRun, Search};
    let made = searched(&["lr=0.1..0.5"], (Some(6), Some(3)), Some(Search::Tpe));
    let mut stored = made.record(digests("sha256:a"));
    assert_eq!(
        stored.method,
        Method::Tpe {
            samples: 6,
            seed: 3,
            startup: 3
        }
    );
    assert_eq!(stored.runs.len(), 3, "the random points alone");
    stored.values.insert("ex-1".into(), 0.5);
    stored.values.insert("ex-9".into(), 0.5);
    stored.ended.insert("ex-1".into(), "Succeeded".into());
    let taken = take(stored.clone(), &made, &digests("sha256:a"), false).unwrap();
    assert_eq!(taken.values.keys().collect::<Vec<_>>(), ["ex-1"]);
    // A point proposed: still one of the sweep's; more than the budget is not.
    let point = |tag: &str| PlannedRun {
        tag: tag.into(),
        params: [("lr".to_string(), "0.2".to_string())].into(),
    };
    stored.runs.extend(["ex-4", "ex-5", "ex-6"].map(point));
    take(stored.clone(), &made, &digests("sha256:a"), false).unwrap();
    stored.runs.push(point("ex-7"));
    let err = take(stored.clone(), &made, &digests("sha256:a"), false).unwrap_err();
    assert!(err.contains("7 runs, where the parameters make 6"), "{err}");
    stored.runs.pop();
    let random = searched(&["lr=0.1..0.5"], (Some(6), None), None);
    let err = take(stored, &random, &digests("sha256:a"), false).unwrap_err();
    assert!(
        err.contains("was started with --method tpe --samples 6 --seed 3, not --samples 6"),
        "{err}"
    );
}
