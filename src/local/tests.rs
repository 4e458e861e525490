//! The local run's unit tests: the tasks' setup (ports, `TF_CONFIG`, variables) and the
//! verdict rule over processes.

use std::collections::BTreeMap;
use std::path::Path;

use super::Outcome;
use super::outcome::{Ended, decide};
use super::setup::{LocalTask, SCRIPT_DIR_VAR, free_ports, tasks};
use crate::plan::{SpawnRequest, Templates};
use crate::roles::{Role, Roles, Task};

fn request(roles: Roles) -> SpawnRequest {
    SpawnRequest {
        tag: "t".into(),
        namespace: "ns".into(),
        port: 1999,
        image: None,
        roles,
        framework: crate::framework::Framework::Tensorflow,
        templates: Templates {
            worker: Default::default(),
            by_role: BTreeMap::new(),
        },
        script: b"print(1)\n".to_vec(),
        entrypoint: None,
        script_args: Vec::new(),
        bundle: None,
        env: [("A".to_string(), "1".to_string())].into(),
        invocation: "0".into(),
        scheduling: Default::default(),
        volume: None,
        resources: Default::default(),
        hardening: Default::default(),
        experiment: None,
    }
}

fn worker(index: u32) -> Task {
    Task {
        role: Role::Worker,
        index,
    }
}

#[test]
fn free_ports_are_distinct() {
    let ports = free_ports(5).unwrap();
    let mut sorted = ports.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), 5);
    assert!(ports.iter().all(|p| *p > 0));
}

#[test]
fn tasks_share_the_cluster_and_the_evaluator_is_outside() {
    let roles = Roles::new(None, true, 1, 2, true).unwrap();
    let req = request(roles);
    let tasks = tasks(&req, &[1001, 1002, 1003, 1004], Path::new("/tmp/d"));
    let ids: Vec<String> = tasks.iter().map(|t| t.task.id()).collect();
    assert_eq!(
        ids,
        ["chief-0", "ps-0", "worker-0", "worker-1", "evaluator-0"]
    );
    assert_eq!(tasks[0].address.as_deref(), Some("127.0.0.1:1001"));
    assert_eq!(tasks[4].address, None);
    let env = |t: &LocalTask, k: &str| t.env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let w1 = &tasks[3];
    assert_eq!(
        env(w1, "TF_CONFIG").unwrap(),
        r#"{"cluster":{"chief":["127.0.0.1:1001"],"ps":["127.0.0.1:1002"],"worker":["127.0.0.1:1003","127.0.0.1:1004"]},"task":{"type":"worker","index":1}}"#
    );
    assert_eq!(env(w1, "WORKER_NUMBER").as_deref(), Some("1"));
    assert_eq!(env(&tasks[0], "WORKER_NUMBER"), None);
    assert_eq!(env(&tasks[4], "TOT_WORKERS").as_deref(), Some("2"));
    assert_eq!(env(&tasks[4], "A").as_deref(), Some("1"));
    assert_eq!(env(&tasks[4], SCRIPT_DIR_VAR).as_deref(), Some("/tmp/d"));
}

#[test]
fn the_verdict_rule_is_the_cluster_one() {
    let ps = Task {
        role: Role::Ps,
        index: 0,
    };
    let chief = Task {
        role: Role::Chief,
        index: 0,
    };
    // Worker 0 decides without a chief.
    let s = [(worker(0), Some(Ended::Code(0))), (worker(1), None)];
    assert_eq!(
        decide("t", &s),
        Some(Outcome::Succeeded {
            deciding: worker(0),
            stopped: vec![worker(1)]
        })
    );
    assert_eq!(
        decide("t", &[(worker(0), None), (worker(1), Some(Ended::Code(0)))]),
        None
    );
    // Any failure fails the run, a signal too.
    let s = [(worker(0), None), (worker(1), Some(Ended::Signal(9)))];
    assert_eq!(
        decide("t", &s),
        Some(Outcome::Failed {
            task: Some(worker(1)),
            ended: Some(Ended::Signal(9)),
            stopped: vec![worker(0)]
        })
    );
    // The chief decides; parameter servers never end on their own.
    let s = [
        (chief, Some(Ended::Code(0))),
        (ps, None),
        (worker(0), Some(Ended::Code(0))),
    ];
    assert!(matches!(
        decide("t", &s),
        Some(Outcome::Succeeded { deciding, .. }) if deciding == chief
    ));
    assert_eq!(
        decide("t", &[(chief, None), (worker(0), Some(Ended::Code(0)))]),
        None
    );
    assert_eq!(
        Ended::Signal(15).to_string(),
        "was killed by signal 15 (SIGTERM)"
    );
    assert_eq!(Ended::Code(3).to_string(), "exited with code 3");
}

/// `--framework jax` with `--local`: worker 0 on this machine is the coordinator.
#[test]
fn jax_tasks_get_the_coordinator_on_this_machine_and_their_index() {
    let mut req = request(Roles::workers(2).unwrap());
    req.framework = crate::framework::Framework::Jax;
    let tasks = tasks(&req, &[1001, 1002], Path::new("/tmp/d"));
    let env = |t: &LocalTask, k: &str| t.env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    for (i, t) in tasks.iter().enumerate() {
        assert_eq!(
            env(t, "JAX_COORDINATOR_ADDRESS").as_deref(),
            Some("127.0.0.1:1001")
        );
        assert_eq!(env(t, "JAX_NUM_PROCESSES").as_deref(), Some("2"));
        assert_eq!(env(t, "JAX_PROCESS_ID"), Some(i.to_string()));
        assert_eq!(env(t, "TF_CONFIG"), None);
    }
}
