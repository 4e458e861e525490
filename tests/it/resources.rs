//! Resources and quotas (docs/resources.md): a namespace's ResourceQuotas are read before
//! the first create, and a run they cannot hold is refused in one line naming the quota,
//! what the run needs and what is left; the API server stays the judge (the test server
//! models quota admission as `testserver/src/quota.rs` cites). A pod no node could
//! hold is a warning. GPU tasks get a memory-backed /dev/shm and TensorFlow's GPU image.

use kube_testserver::{Options, User};
use serde_json::{Value, json};

use crate::support::Env;

const NS: &str = "default";

fn quota(env: &Env, name: &str, hard: Value) {
    env.server.insert(
        "resourcequotas",
        NS,
        json!({ "metadata": { "name": name }, "spec": { "hard": hard } }),
    );
}

fn creates(env: &Env) -> usize {
    env.server
        .requests()
        .iter()
        .filter(|r| r.method == "POST")
        .count()
}

fn node(env: &Env, name: &str, allocatable: Value) {
    env.server.insert(
        "nodes",
        "",
        json!({ "metadata": { "name": name }, "status": { "capacity": allocatable, "allocatable": allocatable } }),
    );
}

const GPU_TEMPLATE: &str = "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: tensorflow\n    resources:\n      limits: {nvidia.com/gpu: 1, cpu: \"2\", memory: 4Gi}\n";

#[test]
fn a_pod_count_quota_too_small_refuses_the_run_before_any_create() {
    let env = Env::new();
    quota(&env, "q", json!({ "pods": "2" }));
    let out = env.spawn(&["-t", "pq", "-w", "3"]);
    out.failure(1).stderr_has(
        "error: resource quota 'q' in namespace 'default' leaves too little for this run: pods: the run needs 3, 2 left (2 hard, 0 used); nothing was created (kubectl describe resourcequota q -n default)",
    );
    assert_eq!(creates(&env), 0, "refused before the first create");
    assert!(env.names(NS).is_empty());
    // What fits goes through, and the quota's status counts it, as the controller does.
    env.spawn(&["-t", "pq", "-w", "2"]).success();
    let q = env.server.get("resourcequotas", NS, "q").unwrap();
    assert_eq!(q["status"]["used"]["pods"], "2", "{q:#}");
}

#[test]
fn a_gpu_quota_counts_every_pod_of_a_gpu_template() {
    let env = Env::new();
    quota(&env, "gpus", json!({ "requests.nvidia.com/gpu": "4" }));
    let template = env.write("gpu.yaml", GPU_TEMPLATE);
    let out = env.spawn(&[
        "-t",
        "gq",
        "-w",
        "4",
        "--chief",
        "--pod-file",
        template.to_str().unwrap(),
    ]);
    out.failure(1).stderr_has(
        "resource quota 'gpus' in namespace 'default' leaves too little for this run: requests.nvidia.com/gpu: the run needs 5, 4 left (4 hard, 0 used)",
    );
    assert_eq!(creates(&env), 0);
}

#[test]
fn a_quota_on_limits_says_which_container_sets_none() {
    let env = Env::new();
    quota(
        &env,
        "lim",
        json!({ "limits.cpu": "8", "limits.memory": "16Gi" }),
    );
    let out = env.spawn(&["-t", "lq", "-w", "2"]);
    out.failure(1).stderr_has(
        "error: resource quota 'lim' in namespace 'default' requires limits.cpu and limits.memory on every container, and the worker pods' container tensorflow does not set them: give --cpu and --memory (they set requests and limits); nothing was created",
    );
    assert_eq!(creates(&env), 0);
    let template = env.write("gpu.yaml", GPU_TEMPLATE);
    env.spawn(&[
        "-t",
        "lq",
        "-w",
        "2",
        "--pod-file",
        template.to_str().unwrap(),
    ])
    .success();
    let q = env.server.get("resourcequotas", NS, "lim").unwrap();
    // Each pod asks for 2 CPUs and 4Gi, plus the /dev/shm of a GPU task: none, as the
    // template sets its memory itself (the flags add it).
    assert_eq!(q["status"]["used"]["limits.cpu"], "4", "{q:#}");
}

/// Credentials that may not read the quotas skip the check (said under -v); the API
/// server refuses the pod that does not fit, and the run is rolled back, in one line.
#[test]
fn without_the_right_to_read_quotas_the_server_judges_and_the_run_is_rolled_back() {
    let mut user = User::namespaced("team", NS);
    user.denied_resources = vec!["resourcequotas".into()];
    let env = Env::with(Options {
        users: vec![user],
        ..Options::default()
    });
    quota(&env, "q", json!({ "pods": "2" }));
    let kubeconfig = env
        .server
        .write_kubeconfig(env.dir.path(), "team", Some(NS));
    let script = env.script();
    let out = env.run_as(
        &kubeconfig,
        &["-t", "sj", "-w", "3", script.to_str().unwrap()],
    );
    out.failure(1)
        .stderr_has("exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2");
    assert!(env.names(NS).is_empty(), "{:?}", env.names(NS));
    let verbose = env.run_as(
        &kubeconfig,
        &["-v", "-t", "sj", "-w", "1", script.to_str().unwrap()],
    );
    verbose.success();
    assert!(
        verbose
            .stderr
            .contains("may not list resourcequotas: the quota check is skipped"),
        "{verbose:#?}"
    );
}

#[test]
fn a_pod_no_node_could_hold_is_a_warning_naming_the_largest_node() {
    let env = Env::new();
    node(
        &env,
        "small",
        json!({ "cpu": "4", "memory": "8Gi", "pods": "110" }),
    );
    node(
        &env,
        "gpu-1",
        // As a kubelet reports it: in Ki, shown as a reader reads it (23.5Gi).
        json!({ "cpu": "8", "memory": "24629308Ki", "nvidia.com/gpu": "1", "pods": "110" }),
    );
    let template = env.write(
        "big.yaml",
        GPU_TEMPLATE.replace("cpu: \"2\"", "cpu: \"16\""),
    );
    let out = env.spawn(&[
        "-t",
        "nw",
        "-w",
        "2",
        "--pod-file",
        template.to_str().unwrap(),
    ]);
    out.success();
    assert!(
        out.stderr.contains("warning: no node can hold one of the worker pods (each asks for cpu 16, memory 4Gi, nvidia.com/gpu 1); the largest, gpu-1, has cpu 8, memory 23.5Gi, nvidia.com/gpu 1 allocatable"),
        "{out:#?}"
    );
    // One that fits: no warning.
    let fits = env.write("fits.yaml", GPU_TEMPLATE);
    let out = env.spawn(&["-t", "nf", "-w", "1", "--pod-file", fits.to_str().unwrap()]);
    assert!(!out.success().stderr.contains("warning"), "{out:#?}");
}

#[test]
fn credentials_that_may_not_list_nodes_get_no_warning_and_no_error() {
    let env = Env::with(Options {
        users: vec![User::namespaced("team", NS)],
        ..Options::default()
    });
    node(&env, "small", json!({ "cpu": "1", "memory": "1Gi" }));
    let kubeconfig = env
        .server
        .write_kubeconfig(env.dir.path(), "team", Some(NS));
    let template = env.write("gpu.yaml", GPU_TEMPLATE);
    let script = env.script();
    let args = [
        "-t",
        "nn",
        "-w",
        "1",
        "--pod-file",
        template.to_str().unwrap(),
        script.to_str().unwrap(),
    ];
    let out = env.run_as(&kubeconfig, &args);
    assert_eq!(out.success().stderr, "", "{out:#?}");
    let denied = env
        .server
        .requests()
        .iter()
        .filter(|r| r.path == "/api/v1/nodes" && r.status == 403)
        .count();
    assert_eq!(denied, 1, "the nodes were asked for, once");
}

#[test]
fn a_gpu_task_gets_a_memory_backed_dev_shm_and_the_gpu_image() {
    let env = Env::new();
    let template = env.write("gpu.yaml", GPU_TEMPLATE);
    let out = env.spawn(&[
        "-t",
        "shm",
        "-w",
        "1",
        "--ps",
        "1",
        "--strategy",
        "parameter-server",
        "--chief",
        "--pod-file",
        template.to_str().unwrap(),
        "--ps-pod-file",
        env.write(
            "cpu.yaml",
            "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: tensorflow\n",
        )
        .to_str()
        .unwrap(),
    ]);
    out.success();
    let worker = env.server.get("pods", NS, "shm-worker-0").unwrap();
    let volume = worker["spec"]["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "tf-spawner-shm")
        .cloned();
    assert_eq!(
        volume,
        Some(
            json!({ "name": "tf-spawner-shm", "emptyDir": { "medium": "Memory", "sizeLimit": "2Gi" } })
        )
    );
    let tf = &worker["spec"]["containers"][0];
    assert!(
        tf["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["mountPath"] == "/dev/shm"),
        "{tf:#}"
    );
    assert_eq!(tf["image"], "tensorflow/tensorflow:2.15.0-gpu");
    let ps = env.server.get("pods", NS, "shm-ps-0").unwrap();
    assert_eq!(
        ps["spec"]["containers"][0]["image"],
        "tensorflow/tensorflow:2.15.0"
    );
    assert!(
        !ps.to_string().contains("tf-spawner-shm"),
        "no GPU, no /dev/shm volume"
    );
}

/// The flags, as `--dry-run -o json` shows them: CPU and memory as requests and limits of
/// each task's TF container, GPUs as limits, /dev/shm's size added to a GPU task's memory,
/// the parameter servers their own (and --cpu/--memory where they have none), the GPU
/// image on GPU tasks only.
#[test]
fn the_flags_set_each_roles_requests_and_limits_as_dry_run_shows() {
    let env = Env::new();
    let out = env.spawn(&[
        "--dry-run",
        "-o",
        "json",
        "-t",
        "fl",
        "--strategy",
        "parameter-server",
        "--ps",
        "1",
        "-w",
        "2",
        "--cpu",
        "4",
        "--memory",
        "16Gi",
        "--gpus",
        "1",
        "--ps-memory",
        "8Gi",
        "--shm-size",
        "4Gi",
    ]);
    out.success();
    let list: Value = serde_json::from_str(&out.stdout).unwrap();
    let pod = |name: &str| {
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["kind"] == "Pod" && o["metadata"]["name"] == name)
            .cloned()
            .unwrap()
    };
    let worker = pod("fl-worker-1");
    let tf = &worker["spec"]["containers"][0];
    assert_eq!(
        tf["resources"]["requests"],
        json!({ "cpu": "4", "memory": "20Gi" })
    );
    assert_eq!(
        tf["resources"]["limits"],
        json!({ "cpu": "4", "memory": "20Gi", "nvidia.com/gpu": "1" })
    );
    assert_eq!(tf["image"], "tensorflow/tensorflow:2.15.0-gpu");
    assert!(
        worker["spec"]["volumes"]
            .to_string()
            .contains(r#""sizeLimit":"4Gi""#),
        "{worker:#}"
    );
    let chief = pod("fl-chief-0");
    assert_eq!(
        chief["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"],
        "1"
    );
    let ps = &pod("fl-ps-0")["spec"]["containers"][0];
    assert_eq!(
        ps["resources"]["limits"],
        json!({ "cpu": "4", "memory": "8Gi" })
    );
    assert_eq!(ps["image"], "tensorflow/tensorflow:2.15.0");
}

#[test]
fn a_limits_quota_is_met_by_the_flags_and_a_gpu_quota_counts_gpus() {
    let env = Env::new();
    quota(
        &env,
        "lim",
        json!({ "limits.cpu": "4", "limits.memory": "8Gi", "requests.nvidia.com/gpu": "2" }),
    );
    env.spawn(&["-t", "bare", "-w", "2"]).failure(1).stderr_has(
        "the worker pods' container tensorflow does not set them: give --cpu and --memory (they set requests and limits); nothing was created",
    );
    env.spawn(&[
        "-t",
        "ps",
        "-w",
        "1",
        "--ps",
        "1",
        "--strategy",
        "parameter-server",
        "--cpu",
        "1",
        "--memory",
        "1Gi",
        "--ps-cpu",
        "500m",
    ])
    .success();
    let out = env.spawn(&[
        "-t",
        "g",
        "-w",
        "3",
        "--gpus",
        "1",
        "--cpu",
        "500m",
        "--memory",
        "512Mi",
        "--shm-size",
        "0",
    ]);
    out.failure(1).stderr_has(
        "resource quota 'lim' in namespace 'default' leaves too little for this run: requests.nvidia.com/gpu: the run needs 3, 2 left (2 hard, 0 used)",
    );
    assert_eq!(
        env.server.list("pods", NS).len(),
        3,
        "the chief, ps and worker of 'ps', nothing of 'g'"
    );
    let q = env.server.get("resourcequotas", NS, "lim").unwrap();
    assert_eq!(q["status"]["used"]["limits.cpu"], "2500m", "{q:#}");
}

#[test]
fn bad_resource_values_are_usage_errors_naming_the_flag_or_the_key() {
    let env = Env::new();
    for (args, says) in [
        (vec!["--memory", "16"], "give a unit: 16Gi, 16Mi"),
        (vec!["--cpu", "0"], "is not a number of CPUs"),
        (vec!["--gpus", "-1"], "--gpus"),
        (
            vec!["--gpu-resource", "gpu"],
            "is not an extended resource name (DOMAIN/NAME: nvidia.com/gpu",
        ),
        (vec!["--shm-size", "lots"], "is not a size of at least 1Mi"),
    ] {
        let mut all = vec!["-t", "bad"];
        all.extend(args);
        env.spawn(&all).failure(2).stderr_has(says);
    }
    let file = env.write("config.yaml", "memory: 16\n");
    let script = env.script();
    let out = crate::support::run(env.cmd().env("TF_SPAWNER_CONFIG", &file).args([
        "-t",
        "bad",
        script.to_str().unwrap(),
    ]));
    out.failure(2)
        .stderr_has("key 'memory'")
        .stderr_has("give a unit");
    assert!(env.names(NS).is_empty());
    let out = env.run(&["--local", "--cpu", "2", script.to_str().unwrap()]);
    assert_eq!(out.code, 2, "{out:#?}");
    assert!(out.stderr.contains("--cpu"), "{out:#?}");
}

#[test]
fn the_defaults_file_sets_them_and_config_shows_where_from() {
    let env = Env::new();
    let file = env.write(
        "config.yaml",
        "gpus: 2\ngpu_resource: amd.com/gpu\ncpu: 8\nshm_size: 0\n",
    );
    let script = env.script();
    let run =
        |args: &[&str]| crate::support::run(env.cmd().env("TF_SPAWNER_CONFIG", &file).args(args));
    let out = run(&[
        "--dry-run",
        "-o",
        "json",
        "-t",
        "df",
        "-w",
        "1",
        "--cpu",
        "2",
        script.to_str().unwrap(),
    ]);
    out.success();
    let list: Value = serde_json::from_str(&out.stdout).unwrap();
    let pod = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "Pod")
        .unwrap();
    let tf = &pod["spec"]["containers"][0];
    assert_eq!(
        tf["resources"]["limits"],
        json!({ "cpu": "2", "amd.com/gpu": "2" }),
        "the flag beats the file"
    );
    assert!(!pod.to_string().contains("tf-spawner-shm"), "shm_size: 0");
    let config = run(&["config"]);
    config.success();
    let line = |key: &str| {
        config
            .stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(key))
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        line("gpu_resource").contains("amd.com/gpu") && line("gpu_resource").contains("file"),
        "{config:#?}"
    );
    assert!(line("ps_memory").contains("(--memory)"), "{config:#?}");
}
