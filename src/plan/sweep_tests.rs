use super::*;

fn params(texts: &[&str]) -> Vec<Param> {
    texts.iter().map(|t| parse_param(t).unwrap()).collect()
}

fn words(args: &[&str]) -> Vec<String> {
    args.iter().map(ToString::to_string).collect()
}

#[test]
fn the_forms_of_a_parameter_are_read() {
    assert_eq!(
        parse_param("lr=0.1, 0.01").unwrap().values,
        Values::List(vec!["0.1".into(), "0.01".into()])
    );
    assert_eq!(
        parse_param("lr=log:1e-4..1e-1").unwrap().values,
        Values::Range {
            log: true,
            lo: 1e-4,
            hi: 1e-1
        }
    );
    assert_eq!(
        parse_param("dropout=0.1..0.5").unwrap().values,
        Values::Range {
            log: false,
            lo: 0.1,
            hi: 0.5
        }
    );
    assert_eq!(
        parse_param("layers=int:1..4").unwrap().values,
        Values::Int { lo: 1, hi: 4 }
    );
    assert_eq!(
        parse_param("opt=adam").unwrap().values,
        Values::List(vec!["adam".into()])
    );
}

#[test]
fn bad_parameters_are_one_line_naming_the_fix() {
    let e = |t: &str| parse_param(t).unwrap_err();
    assert_eq!(
        e("lr="),
        "lr=: no values (give NAME=V1,V2,… or a range NAME=LO..HI)"
    );
    assert!(
        e("lr=0.1,,0.2").contains("an empty value"),
        "{}",
        e("lr=0.1,,0.2")
    );
    assert!(e("1lr=0.1").contains("'1lr' is not an identifier"));
    assert!(e("learning-rate=0.1").contains("is not an identifier"));
    assert!(e("lr").starts_with("'lr': expected NAME=V1,V2,…"));
    assert!(e("lr=log:0..1").contains("a log range needs LO above 0"));
    assert!(e("lr=0.5..0.1").contains("the range is empty"));
    assert!(e("n=int:1..x").contains("'x' is not an integer"));
    for text in ["lr=", "1lr=0.1", "lr=log:0..1"] {
        assert!(!e(text).contains('\n'));
    }
    let twice = check_names(&params(&["lr=1", "LR=2"])).unwrap_err();
    assert!(twice.contains("given twice"), "{twice}");
}

#[test]
fn a_grid_is_every_combination_the_last_parameter_fastest() {
    let p = params(&["lr=0.1,0.01", "bs=32,64,128"]);
    assert_eq!(count(&p, Method::Grid), Ok(6));
    let points = expand(&p, Method::Grid);
    let shown: Vec<String> = points.iter().map(point_text).collect();
    assert_eq!(
        shown,
        [
            "lr=0.1 bs=32",
            "lr=0.1 bs=64",
            "lr=0.1 bs=128",
            "lr=0.01 bs=32",
            "lr=0.01 bs=64",
            "lr=0.01 bs=128"
        ]
    );
    let ints = params(&["layers=int:1..3"]);
    assert_eq!(expand(&ints, Method::Grid).len(), 3);
}

#[test]
fn a_grid_refuses_a_range_and_counts_without_expanding() {
    let e = count(&params(&["dropout=0.1..0.5"]), Method::Grid).unwrap_err();
    assert!(e.contains("add --samples K"), "{e}");
    let big = params(&[
        "a=1,2,3,4,5,6,7,8,9,10",
        "b=1,2,3,4,5,6,7,8,9,10",
        "c=1,2,3,4,5,6,7,8,9,10",
        "d=1,2,3,4,5,6,7,8,9,10",
    ]);
    assert_eq!(count(&big, Method::Grid), Ok(10_000));
    assert!(count(&[], Method::Grid).is_err());
}

#[test]
fn a_random_search_is_the_seeds_and_within_its_ranges() {
    let p = params(&[
        "lr=log:1e-4..1e-1",
        "dropout=0.1..0.5",
        "layers=int:1..4",
        "opt=adam,sgd",
    ]);
    let method = Method::Random {
        samples: 50,
        seed: 7,
    };
    let points = expand(&p, method);
    assert_eq!(points.len(), 50);
    assert_eq!(points, expand(&p, method), "the same seed, the same points");
    assert_ne!(
        points,
        expand(
            &p,
            Method::Random {
                samples: 50,
                seed: 8
            }
        )
    );
    for point in &points {
        let v = |i: usize| point[i].1.parse::<f64>().unwrap();
        assert!((1e-4..=1e-1).contains(&v(0)), "{point:?}");
        assert!((0.1..=0.5).contains(&v(1)), "{point:?}");
        assert!([1.0, 2.0, 3.0, 4.0].contains(&v(2)), "{point:?}");
        assert!(["adam", "sgd"].contains(&point[3].1.as_str()));
        assert!(point[0].1.len() <= 12, "short text: {}", point[0].1);
    }
    // Log-uniform: about as many draws below 1e-3 as between 1e-3 and 1e-2.
    let low = points
        .iter()
        .filter(|p| p[0].1.parse::<f64>().unwrap() < 1e-3)
        .count();
    assert!((5..30).contains(&low), "{low} of 50 below 1e-3");
}

#[test]
fn placeholders_are_filled_and_checked_both_ways() {
    let p = params(&["lr=0.1,0.01", "bs=32"]);
    let args = words(&["--lr", "{lr}", "--batch={bs}", "{\"a\": 1}"]);
    assert_eq!(placeholders(&args), ["lr", "bs"]);
    assert_eq!(check_placeholders(&p, &args), Ok(()));
    let point = vec![("lr".into(), "0.1".into()), ("bs".into(), "32".into())];
    assert_eq!(
        fill(&args, &point),
        ["--lr", "0.1", "--batch=32", "{\"a\": 1}"]
    );
    let e = check_placeholders(&p, &words(&["--lr", "{lr}", "--x", "{x}"])).unwrap_err();
    assert_eq!(
        e,
        "the placeholder {x} in the script's arguments names no parameter (the parameters: lr, bs); add --param x=… or correct it"
    );
    let e = check_placeholders(&p, &words(&["--lr", "{lr}"])).unwrap_err();
    assert!(e.starts_with("--param bs is in no placeholder"), "{e}");
    // No placeholder at all: the variables carry every parameter.
    assert_eq!(check_placeholders(&p, &words(&["--epochs", "3"])), Ok(()));
    assert_eq!(param_var("lr"), "TF_SPAWNER_PARAM_LR");
}

/// Issue 57: placeholders are filled in one pass: a value holding `{b}` stays as it is.
#[test]
fn a_value_is_never_filled_again() {
    let args = words(&["--a={a}", "{b}{a}", "{a}{b}", "{", "}{a", "{zz}"]);
    let point = vec![("a".into(), "{b}".into()), ("b".into(), "$(SECRET)".into())];
    assert_eq!(
        fill(&args, &point),
        [
            "--a={b}",
            "$(SECRET){b}",
            "{b}$(SECRET)",
            "{",
            "}{a",
            "{zz}"
        ]
    );
}

#[test]
fn runs_are_tagged_and_carry_their_parameters() {
    assert_eq!(run_tag("exp", 0), "exp-1");
    let point = vec![("lr".into(), "0.1".into()), ("bs".into(), "32".into())];
    assert_eq!(params_json(&point), r#"{"bs":"32","lr":"0.1"}"#);
    let runs = ExperimentRecord::planned(&[point], "exp");
    assert_eq!(runs[0].tag, "exp-1");
    assert_eq!(runs[0].params["lr"], "0.1");
}
