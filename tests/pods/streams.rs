//! What reaches the process and what comes out of it: the env file through the Secret,
//! the entrypoint run by bash, `logs -f` while containers run, `--save-logs`.

use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, BufReader};

use crate::support::{Cluster, RUN_TIMEOUT, phase, tag};

#[tokio::test]
async fn env_file_values_reach_the_process_and_the_entrypoint_runs_with_bash() {
    let Some(c) = Cluster::new("envfile").await else {
        return;
    };
    let t = tag("env");
    let env = c.write(
        "env",
        "# credentials\nexport S3_ENDPOINT = https://s3.example.org\nS3_KEY=\"quoted secret value\"\n",
    );
    let entrypoint = c.write(
        "entry.sh",
        "#!/usr/bin/env bash\n\
         # bash, not sh: [[ ]], arrays and comments must work\n\
         words=(from the entrypoint)\n\
         if [[ -n \"${S3_KEY:-}\" ]]; then echo \"entrypoint: ${words[*]}, bash $BASH_VERSION\"; fi\n\
         exec python /script/training-script.py\n",
    );
    let script = c.write(
        "train.py",
        "import os\nprint('endpoint=%s key=%s' % (os.environ['S3_ENDPOINT'], os.environ['S3_KEY']))\n",
    );
    c.spawn(
        &t,
        &script,
        &[
            "-w",
            "1",
            "-e",
            env.to_str().unwrap(),
            "-c",
            entrypoint.to_str().unwrap(),
        ],
    )
    .await;
    c.run(&["wait", "-t", &t, "--timeout", RUN_TIMEOUT])
        .await
        .success();
    let logs = c.run(&["logs", "-t", &t]).await;
    logs.success()
        .stdout_has("worker-0 | entrypoint: from the entrypoint, bash 5.")
        .stdout_has("worker-0 | endpoint=https://s3.example.org key=quoted secret value");
}

#[tokio::test]
async fn logs_follow_streams_while_containers_run_and_ends_with_them() {
    let Some(c) = Cluster::new("follow").await else {
        return;
    };
    let t = tag("follow");
    let script = c.write(
        "ticks.py",
        "import os, time\n\
         for i in range(8):\n\
         \x20   print('tick %d of worker %s' % (i, os.environ['WORKER_NUMBER']), flush=True)\n\
         \x20   time.sleep(1)\n",
    );
    c.spawn(&t, &script, &["-w", "2"]).await;

    let mut child = c.start(&["logs", "-f", "-t", &t]);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let started = Instant::now();
    let mut seen = Vec::new();
    let mut running_at_first_line = None;
    loop {
        let next = tokio::time::timeout(Duration::from_secs(120), lines.next_line())
            .await
            .expect("logs -f produced nothing for 2 minutes");
        let Some(line) = next.expect("read logs -f") else {
            break;
        };
        if running_at_first_line.is_none() && line.contains("tick 0 of worker 0") {
            // The line arrived while its container still runs: streamed, not read after the end.
            let pods = c.pods(&t).await;
            running_at_first_line = Some(phase(&pods[0]));
        }
        seen.push(line);
    }
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("logs -f ends when the containers end")
        .expect("wait for logs -f");
    assert!(status.success(), "{status:?}");
    assert_eq!(
        running_at_first_line.as_deref(),
        Some("Running"),
        "{seen:?}"
    );
    for w in 0..2 {
        for i in 0..8 {
            let expected = format!("worker-{w} | tick {i} of worker {w}");
            assert!(seen.contains(&expected), "missing {expected:?} in {seen:?}");
        }
    }
    assert!(
        started.elapsed() >= Duration::from_secs(5),
        "it followed the whole run"
    );
}

#[tokio::test]
async fn save_logs_writes_each_pods_full_log() {
    let Some(c) = Cluster::new("savelogs").await else {
        return;
    };
    let t = tag("save");
    let script = c.write(
        "lines.py",
        "import os\nfor i in range(500):\n    print('worker %s line %03d' % (os.environ['WORKER_NUMBER'], i))\n",
    );
    c.spawn(&t, &script, &["-w", "2"]).await;
    let dir = c.dir.path().join("saved");
    c.run(&[
        "wait",
        "-t",
        &t,
        "--all-workers",
        "--timeout",
        RUN_TIMEOUT,
        "--save-logs",
        dir.to_str().unwrap(),
    ])
    .await
    .success();
    for w in 0..2 {
        let text = std::fs::read_to_string(dir.join(format!("{t}-worker-{w}.log")))
            .unwrap_or_else(|e| panic!("log of worker {w}: {e}"));
        let expected: String = (0..500)
            .map(|i| format!("worker {w} line {i:03}\n"))
            .collect();
        assert_eq!(text, expected, "worker {w}");
    }
}
