//! A sweep's plan and its end (docs/experiments.md): `--dry-run`'s table of the runs,
//! the runs at a time without a quota, the winner named at the end and in the notice,
//! and what the live view shows of each run.

use crate::support::Env;

const NS: &str = "default";

/// `--dry-run` prints a table of the runs and their parameters (not every object of
/// every run: a 4-sample search was ~950 lines of YAML); `-o yaml|json` the objects.
#[test]
fn dry_run_prints_a_table_of_the_runs_and_their_parameters() {
    let env = Env::new();
    let script = env.script();
    let out = env.run(&[
        "sweep",
        "--dry-run",
        "-t",
        "dt",
        "--param",
        "lr=0.1,0.01",
        "--param",
        "bs=8,16",
        script.to_str().unwrap(),
        "--",
        "--lr",
        "{lr}",
        "--bs={bs}",
    ]);
    out.success();
    assert_eq!(
        out.stdout,
        "RUN    lr     bs   ARGS\n\
         dt-1   0.1    8    --lr 0.1 --bs=8\n\
         dt-2   0.1    16   --lr 0.1 --bs=16\n\
         dt-3   0.01   8    --lr 0.01 --bs=8\n\
         dt-4   0.01   16   --lr 0.01 --bs=16\n\
         experiment dt: 4 runs planned; nothing created (--dry-run; their objects: -o yaml or -o json)\n"
    );
    assert!(env.names(NS).is_empty());
    assert!(env.server.requests().is_empty(), "a dry run asks the cluster nothing");
    let yaml = env.run(&[
        "sweep",
        "--dry-run",
        "-o",
        "yaml",
        "-t",
        "dt",
        "--param",
        "lr=1,2",
        script.to_str().unwrap(),
    ]);
    yaml.success().stdout_has("name: dt-2-script");
}
