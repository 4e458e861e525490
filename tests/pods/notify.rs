//! `--notify` on running pods (issue 48 item 3): a run restarted once is told once, at
//! its last verdict, with its restart and what each attempt held (item 4), counted from
//! the pods' own times as the kubelet wrote them.

use crate::support::{Cluster, restarting, tag};

/// Exits 42 (retryable) on the first attempt, then succeeds.
const ONCE_42: &str = "\
import os, sys, time
print('attempt', os.environ.get('TF_SPAWNER_ATTEMPT'), flush=True)
time.sleep(2)
sys.exit(42 if os.environ.get('TF_SPAWNER_ATTEMPT', '0') == '0' else 0)
";

#[tokio::test]
async fn a_restarted_run_is_told_once_with_what_it_held() {
    let Some(c) = Cluster::new("notify-once").await else {
        return;
    };
    let t = tag("told");
    let script = c.write("once42.py", ONCE_42);
    let told = c.write("notices.jsonl", "");
    let out = c
        .spawn(
            &t,
            &script,
            &[
                &["-w", "1", "--wait"][..],
                &restarting("1"),
                &["--notify", "cat >> notices.jsonl && echo >> notices.jsonl"],
            ]
            .concat(),
        )
        .await;
    out.stdout_has(&format!("run {t}: Succeeded"))
        .stdout_has("in restarts, ");
    let text = std::fs::read_to_string(&told).unwrap();
    let notices: Vec<serde_json::Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(notices.len(), 1, "{text}\n{out:#?}");
    let n = &notices[0];
    assert_eq!(n["verdict"], "Succeeded", "{n}");
    assert_eq!(n["tag"], t.as_str());
    assert_eq!(n["restarts"], 1, "{n}");
    let cost = &n["cost"];
    assert!(cost["restarts"]["task_seconds"].as_u64() >= Some(2), "{n}");
    assert!(cost["training"]["task_seconds"].as_u64() >= Some(1), "{n}");
    assert_eq!(cost["total"]["gpu_seconds"], 0, "{n}");
}
