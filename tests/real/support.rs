//! Plumbing of the real-server suite: the server named by `TF_SPAWNER_TEST_KUBECONFIG`
//! (an admin kubeconfig), the two limited credentials (`TF_SPAWNER_TEST_KUBECONFIG_TEAM_A`
//! and `TF_SPAWNER_TEST_KUBECONFIG_TEAM_A_NOSECRETS`, by default `kubeconfig-team-a` and
//! `kubeconfig-team-a-nosecrets` beside the admin one, and `bin/kubectl` beside them, as
//! `../shared/tools/kube-apiserver/start.sh` lays them out), the binary run as a user
//! would run it, and an admin client to read what the server stored and to drive pod
//! status.
//!
//! Every test gets its own namespace (or, in the shared `team-a`, its own tag); both are
//! removed when the [`Real`] is dropped, also when the test panics.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Secret, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::io::AsyncWriteExt;

pub const BIN: &str = env!("CARGO_BIN_EXE_tf-spawner");
/// The admin kubeconfig of the server under test.
pub const VAR: &str = "TF_SPAWNER_TEST_KUBECONFIG";
/// Optional: the kubectl to use (default: `bin/kubectl` beside the kubeconfig, else PATH).
pub const KUBECTL_VAR: &str = "TF_SPAWNER_TEST_KUBECTL";
/// The namespace the limited credentials may use when their kubeconfig names none.
pub const TEAM_NS_DEFAULT: &str = "team-a";
/// Label on every namespace this suite creates, so leftovers can be found.
pub const TEST_NS_LABEL: &str = "tf-spawner-test";

pub const SCRIPT: &str = "import json, os\nprint(json.loads(os.environ['TF_CONFIG']))\n";

pub const RUN_LABEL: &str = "training_attempt";
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
pub const ROLE_LABEL: &str = "tf-spawner/replica-type";
pub const INDEX_LABEL: &str = "tf-spawner/replica-index";

/// Which kubeconfig the binary runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cred {
    Admin,
    /// `team-a`: pods, services, configmaps, secrets in namespace `team-a` only.
    TeamA,
    /// `team-a-nosecrets`: the same without secrets.
    TeamANoSecrets,
}

impl Cred {
    /// The environment variable that names this credential's kubeconfig.
    pub fn var(self) -> &'static str {
        match self {
            Cred::Admin => VAR,
            Cred::TeamA => "TF_SPAWNER_TEST_KUBECONFIG_TEAM_A",
            Cred::TeamANoSecrets => "TF_SPAWNER_TEST_KUBECONFIG_TEAM_A_NOSECRETS",
        }
    }

    /// Its file beside the admin kubeconfig when the variable is not set.
    fn file(self) -> &'static str {
        match self {
            Cred::Admin => "kubeconfig",
            Cred::TeamA => "kubeconfig-team-a",
            Cred::TeamANoSecrets => "kubeconfig-team-a-nosecrets",
        }
    }
}

/// Where a limited credential's kubeconfig is: the file its variable names (see
/// [`Cred::var`]; an empty value counts as unset), else its file beside the admin
/// kubeconfig. `var` reads the environment.
pub fn credential_path(
    admin: &Path,
    cred: Cred,
    var: impl Fn(&str) -> Option<OsString>,
) -> PathBuf {
    if cred == Cred::Admin {
        return admin.to_path_buf();
    }
    match var(cred.var()).filter(|v| !v.is_empty()) {
        Some(path) => PathBuf::from(path),
        None => admin.parent().unwrap_or(Path::new(".")).join(cred.file()),
    }
}

#[path = "../common/output.rs"]
mod output;

#[path = "../common/env_expansion.rs"]
mod env_expansion;
use env_expansion::expand;
pub use output::Output;

enum Cleanup {
    Namespace(String),
    Run { namespace: String, tag: String },
}

/// The server under test, as admin, and a temp dir used as the binary's HOME and
/// working directory.
pub struct Real {
    pub admin_kubeconfig: PathBuf,
    pub client: Client,
    pub dir: TempDir,
    config: Config,
    cleanups: Mutex<Vec<Cleanup>>,
}

impl Real {
    /// The server, or `None` (with a visible notice) when `TF_SPAWNER_TEST_KUBECONFIG`
    /// is not set.
    pub async fn new(test: &str) -> Option<Real> {
        let Some(path) = std::env::var_os(VAR).filter(|v| !v.is_empty()) else {
            // Straight to the process's stderr: libtest captures `eprintln!` of passing
            // tests, and this notice must be seen.
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test}: {VAR} not set (the real kube-apiserver suite; see .ci/run)"
            );
            return None;
        };
        let admin_kubeconfig = PathBuf::from(path);
        let file = Kubeconfig::read_from(&admin_kubeconfig).unwrap_or_else(|e| {
            panic!("{VAR}={}: cannot read it: {e}", admin_kubeconfig.display())
        });
        let config = Config::from_custom_kubeconfig(file, &KubeConfigOptions::default())
            .await
            .expect("admin kubeconfig");
        let client = Client::try_from(config.clone()).expect("admin client");
        Some(Real {
            admin_kubeconfig,
            client,
            dir: tempfile::tempdir().expect("temp dir"),
            config,
            cleanups: Mutex::default(),
        })
    }

    /// The server's minor version (`20` for v1.20.2, `36` for v1.36.2), from `/version`.
    pub async fn server_minor(&self) -> u32 {
        let info = self.client.apiserver_version().await.expect("GET /version");
        info.minor
            .trim_end_matches('+')
            .parse()
            .unwrap_or_else(|e| panic!("server minor version {:?}: {e}", info.minor))
    }

    pub fn kubeconfig(&self, cred: Cred) -> PathBuf {
        let path = credential_path(&self.admin_kubeconfig, cred, |v| std::env::var_os(v));
        assert!(
            path.is_file(),
            "{} is missing: set {} to the kubeconfig of that credential, or point {VAR} at the admin kubeconfig written by start.sh, with the team-a ones beside it",
            path.display(),
            cred.var(),
        );
        path
    }

    /// The namespace the limited credentials may use: their kubeconfig context's (the
    /// tests run them without `-n`, as a user would), else `team-a`.
    pub fn team_ns(&self) -> String {
        let path = self.kubeconfig(Cred::TeamA);
        let file = Kubeconfig::read_from(&path)
            .unwrap_or_else(|e| panic!("{}: cannot read it: {e}", path.display()));
        let current = file.current_context.clone().unwrap_or_default();
        file.contexts
            .iter()
            .find(|c| c.name == current)
            .and_then(|c| c.context.as_ref())
            .and_then(|c| c.namespace.clone())
            .unwrap_or_else(|| TEAM_NS_DEFAULT.to_string())
    }

    /// Writes a file in the temp dir and returns its path.
    pub fn write(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, contents).expect("write test file");
        path
    }

    /// The training script, written once.
    pub fn script(&self) -> PathBuf {
        self.write("train.py", SCRIPT)
    }

    /// Runs `tf-spawner --kubeconfig CRED ARGS...`, with HOME and the working directory
    /// in the temp dir, no KUBECONFIG and stdin not a terminal.
    pub async fn run(&self, cred: Cred, args: &[&str]) -> Output {
        let mut full: Vec<OsString> = vec!["--kubeconfig".into(), self.kubeconfig(cred).into()];
        full.extend(args.iter().map(OsString::from));
        self.run_raw(&full, &[]).await
    }

    /// Spawns run `tag` of `workers` workers in `namespace` as admin, with the built-in
    /// template and [`SCRIPT`], and asserts it worked: the starting point of tests of
    /// the verbs that follow a run (drive its pods with [`Real::set_running`] and
    /// [`Real::set_terminated`]; pod logs here are always empty, 204).
    pub async fn spawn_run(&self, namespace: &str, tag: &str, workers: u32) -> Output {
        let script = self.script();
        let workers = workers.to_string();
        let out = self
            .run(
                Cred::Admin,
                &[
                    "-n",
                    namespace,
                    "-t",
                    tag,
                    "-w",
                    &workers,
                    script.to_str().unwrap(),
                ],
            )
            .await;
        out.success();
        out
    }

    /// Runs the binary with exactly these arguments and extra environment variables.
    pub async fn run_raw(&self, args: &[OsString], env: &[(&str, OsString)]) -> Output {
        let mut cmd = tokio::process::Command::new(BIN);
        cmd.args(args)
            .env_clear()
            .env("HOME", self.dir.path())
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .current_dir(self.dir.path())
            .stdin(Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().await.expect("run tf-spawner");
        Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// The 1.20 kubectl that comes with the server.
    pub fn kubectl_path(&self) -> PathBuf {
        if let Some(p) = std::env::var_os(KUBECTL_VAR).filter(|v| !v.is_empty()) {
            return PathBuf::from(p);
        }
        let beside = self
            .admin_kubeconfig
            .parent()
            .unwrap_or(Path::new("."))
            .join("bin/kubectl");
        if beside.is_file() {
            beside
        } else {
            PathBuf::from("kubectl")
        }
    }

    /// Runs kubectl with `cred`, feeding `stdin`.
    pub async fn kubectl(&self, cred: Cred, args: &[&str], stdin: &str) -> Output {
        let mut child = tokio::process::Command::new(self.kubectl_path())
            .arg("--kubeconfig")
            .arg(self.kubeconfig(cred))
            .args(args)
            .env("HOME", self.dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot run {} (set {KUBECTL_VAR}): {e}",
                    self.kubectl_path().display()
                )
            });
        let mut input = child.stdin.take().expect("kubectl stdin");
        input
            .write_all(stdin.as_bytes())
            .await
            .expect("feed kubectl");
        drop(input);
        let out = child.wait_with_output().await.expect("kubectl");
        Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// A fresh namespace `tfs-NAME-XXXXXX`, deleted when `self` is dropped.
    pub async fn namespace(&self, name: &str) -> String {
        let ns = unique(&format!("tfs-{name}"));
        let object = Namespace {
            metadata: ObjectMeta {
                name: Some(ns.clone()),
                labels: Some(BTreeMap::from([(
                    TEST_NS_LABEL.to_string(),
                    "real".to_string(),
                )])),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        Api::<Namespace>::all(self.client.clone())
            .create(&PostParams::default(), &object)
            .await
            .unwrap_or_else(|e| panic!("create namespace {ns}: {e}"));
        self.cleanups
            .lock()
            .unwrap()
            .push(Cleanup::Namespace(ns.clone()));
        ns
    }

    /// A fresh tag `PREFIX-XXXXXX` for a run in a shared namespace; whatever carries it
    /// there is deleted (as admin) when `self` is dropped.
    pub fn tag_in(&self, namespace: &str, prefix: &str) -> String {
        let tag = unique(prefix);
        self.cleanups.lock().unwrap().push(Cleanup::Run {
            namespace: namespace.to_string(),
            tag: tag.clone(),
        });
        tag
    }

    pub fn api<K>(&self, namespace: &str) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), namespace)
    }

    /// The objects of one kind matching `selector`, sorted by name.
    pub async fn list<K>(&self, namespace: &str, selector: &str) -> Vec<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + std::fmt::Debug,
        K::DynamicType: Default,
    {
        let mut items = self
            .api::<K>(namespace)
            .list(&ListParams::default().labels(selector))
            .await
            .unwrap_or_else(|e| panic!("list in {namespace} -l {selector}: {e}"))
            .items;
        items.sort_by_key(|o| o.name_any());
        items
    }

    pub async fn pods(&self, namespace: &str, tag: &str) -> Vec<Pod> {
        self.list(namespace, &selector(tag)).await
    }

    pub async fn services(&self, namespace: &str, tag: &str) -> Vec<Service> {
        self.list(namespace, &selector(tag)).await
    }

    pub async fn config_maps(&self, namespace: &str, tag: &str) -> Vec<ConfigMap> {
        self.list(namespace, &selector(tag)).await
    }

    pub async fn secrets(&self, namespace: &str, tag: &str) -> Vec<Secret> {
        self.list(namespace, &selector(tag)).await
    }

    /// Every object of run `tag` as `kind/name`, sorted.
    pub async fn run_objects(&self, namespace: &str, tag: &str) -> Vec<String> {
        self.snapshot(namespace, tag)
            .await
            .into_iter()
            .map(|(name, _, _)| name)
            .collect()
    }

    /// Every object of run `tag`: `kind/name`, uid, resourceVersion; sorted. Equal
    /// snapshots mean nothing was created, deleted or changed.
    pub async fn snapshot(&self, namespace: &str, tag: &str) -> Vec<(String, String, String)> {
        fn rows<K: Resource>(kind: &str, items: Vec<K>) -> Vec<(String, String, String)> {
            items
                .into_iter()
                .map(|o| {
                    let m = o.meta();
                    (
                        format!("{kind}/{}", m.name.clone().unwrap_or_default()),
                        m.uid.clone().unwrap_or_default(),
                        m.resource_version.clone().unwrap_or_default(),
                    )
                })
                .collect()
        }
        let mut all = rows("pod", self.pods(namespace, tag).await);
        all.extend(rows("service", self.services(namespace, tag).await));
        all.extend(rows("configmap", self.config_maps(namespace, tag).await));
        all.extend(rows("secret", self.secrets(namespace, tag).await));
        all.sort();
        all
    }

    pub async fn namespace_exists(&self, namespace: &str) -> bool {
        Api::<Namespace>::all(self.client.clone())
            .get_opt(namespace)
            .await
            .expect("get namespace")
            .is_some()
    }

    /// Merge-patches `pods/NAME/status` as admin (the only way a phase changes here: no
    /// scheduler, no kubelet). A merge patch replaces the whole `containerStatuses` list.
    pub async fn patch_pod_status(&self, namespace: &str, name: &str, status: Value) -> Pod {
        self.api::<Pod>(namespace)
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": status })),
            )
            .await
            .unwrap_or_else(|e| panic!("patch status of pod {namespace}/{name}: {e}"))
    }

    /// Binds the pod to node `node` (`pods/NAME/binding`, as the scheduler does): it gets
    /// `spec.nodeName`. The server does not check that the node exists.
    pub async fn bind(&self, namespace: &str, name: &str, node: &str) {
        let binding = json!({
            "apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": name},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        });
        self.api::<Pod>(namespace)
            .create_subresource::<Value, Value>("binding", name, &PostParams::default(), &binding)
            .await
            .unwrap_or_else(|e| panic!("bind pod {namespace}/{name}: {e}"));
    }

    /// Marks the pod Running, its container `container` ready and running.
    pub async fn set_running(&self, namespace: &str, name: &str, container: &str) -> Pod {
        self.patch_pod_status(
            namespace,
            name,
            json!({
                "phase": "Running",
                "containerStatuses": [container_status(container, true, json!({
                    "running": {"startedAt": "2026-01-01T00:00:00Z"}
                }))],
            }),
        )
        .await
    }

    /// Marks the pod Succeeded (exit 0) or Failed (other codes), its container terminated.
    pub async fn set_terminated(
        &self,
        namespace: &str,
        name: &str,
        container: &str,
        exit_code: i32,
    ) -> Pod {
        let phase = if exit_code == 0 {
            "Succeeded"
        } else {
            "Failed"
        };
        self.patch_pod_status(
            namespace,
            name,
            json!({
                "phase": phase,
                "containerStatuses": [container_status(container, false, json!({
                    "terminated": {
                        "exitCode": exit_code,
                        "reason": if exit_code == 0 { "Completed" } else { "Error" },
                        "startedAt": "2026-01-01T00:00:00Z",
                        "finishedAt": "2026-01-01T00:01:00Z",
                    }
                }))],
            }),
        )
        .await
    }
}

impl Real {
    /// TF_CONFIG of a stored pod as its process will see it: `$(VAR)` references expanded
    /// as the kubelet does, from the variables before it (config map keys read as admin).
    pub async fn tf_config(&self, pod: &Pod) -> String {
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();
        let mut defined: Vec<(String, String)> = Vec::new();
        for var in tf_container(pod).env.iter().flatten() {
            let value = if let Some(v) = &var.value {
                expand(v, &defined)
            } else if let Some(r) = var
                .value_from
                .as_ref()
                .and_then(|f| f.config_map_key_ref.as_ref())
            {
                let cm = self
                    .api::<ConfigMap>(&namespace)
                    .get(&r.name)
                    .await
                    .unwrap_or_else(|e| panic!("config map {}: {e}", r.name));
                cm.data
                    .unwrap_or_default()
                    .remove(&r.key)
                    .expect("the referenced key")
            } else {
                continue;
            };
            defined.push((var.name.clone(), value));
        }
        defined
            .into_iter()
            .rev()
            .find(|(k, _)| k == "TF_CONFIG")
            .map(|(_, v)| v)
            .expect("TF_CONFIG set")
    }
}

/// One entry of `status.containerStatuses`.
pub fn container_status(name: &str, ready: bool, state: Value) -> Value {
    json!({
        "name": name,
        "ready": ready,
        "restartCount": 0,
        "image": "tensorflow/tensorflow:2.15.0",
        "imageID": "",
        "state": state,
    })
}

impl Drop for Real {
    fn drop(&mut self) {
        let cleanups =
            std::mem::take(&mut *self.cleanups.lock().unwrap_or_else(|e| e.into_inner()));
        if cleanups.is_empty() {
            return;
        }
        let config = self.config.clone();
        // A thread of its own: Drop may run inside the test's runtime, or while unwinding.
        let done = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("cleanup runtime");
            runtime.block_on(async move {
                let Ok(client) = Client::try_from(config) else {
                    return;
                };
                for cleanup in cleanups {
                    match cleanup {
                        Cleanup::Namespace(ns) => {
                            let _ = Api::<Namespace>::all(client.clone())
                                .delete(&ns, &DeleteParams::default())
                                .await;
                        }
                        Cleanup::Run { namespace, tag } => {
                            delete_run_as_admin(&client, &namespace, &tag).await;
                        }
                    }
                }
            });
        });
        let _ = done.join();
    }
}

async fn delete_run_as_admin(client: &Client, namespace: &str, tag: &str) {
    async fn one_by_one<K>(client: &Client, namespace: &str, tag: &str)
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + std::fmt::Debug,
        K::DynamicType: Default,
    {
        let api: Api<K> = Api::namespaced(client.clone(), namespace);
        if let Ok(list) = api
            .list(&ListParams::default().labels(&selector(tag)))
            .await
        {
            for o in list.items {
                let _ = api.delete(&o.name_any(), &DeleteParams::default()).await;
            }
        }
    }
    one_by_one::<Pod>(client, namespace, tag).await;
    one_by_one::<Service>(client, namespace, tag).await;
    one_by_one::<ConfigMap>(client, namespace, tag).await;
    one_by_one::<Secret>(client, namespace, tag).await;
}

pub fn selector(tag: &str) -> String {
    format!("{RUN_LABEL}={tag}")
}

/// `PREFIX-XXXXXX`, random hex: unique across parallel tests and re-runs on a
/// persisting etcd.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{:06x}", rand::random::<u32>() & 0xff_ffff)
}

pub fn label<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.labels.as_ref()?.get(key).map(String::as_str)
}

/// The container that got the TF variables: `tensorflow`, else the first.
pub fn tf_container(pod: &Pod) -> &k8s_openapi::api::core::v1::Container {
    let containers = &pod.spec.as_ref().expect("pod spec").containers;
    containers
        .iter()
        .find(|c| c.name == "tensorflow")
        .unwrap_or(&containers[0])
}

/// The values of env var `name` in a container (all of them: it must appear once).
pub fn env_values(c: &k8s_openapi::api::core::v1::Container, name: &str) -> Vec<String> {
    c.env
        .iter()
        .flatten()
        .filter(|e| e.name == name)
        .map(|e| e.value.clone().unwrap_or_default())
        .collect()
}

/// The one value of env var `name`.
#[track_caller]
pub fn env_value(c: &k8s_openapi::api::core::v1::Container, name: &str) -> String {
    let values = env_values(c, name);
    assert_eq!(
        values.len(),
        1,
        "{name} must be set exactly once: {:?}",
        c.env
    );
    values.into_iter().next().unwrap()
}
