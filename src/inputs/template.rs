//! Pod templates: the built-in one (embedded, so the tool works from any directory) or
//! a user's YAML file holding one `v1` Pod.

use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// `templates/pod.yaml`, compiled into the binary.
pub const DEFAULT_TEMPLATE: &str = include_str!("../../templates/pod.yaml");

/// Larger than any sensible pod spec; a bigger file is almost certainly the wrong file.
pub const MAX_TEMPLATE_BYTES: usize = 1024 * 1024;

/// Parses a pod template. `origin` names the file in error messages.
pub fn parse(origin: &str, bytes: &[u8]) -> Result<Pod, String> {
    parse_with_unknown(origin, bytes).map(|(pod, _)| pod)
}

/// Parses a pod template, with the paths of the fields a Pod does not have
/// (`spec.containres`, `spec.containers.0.imagee`): Kubernetes would drop them without
/// a word, so the caller warns about each.
pub fn parse_with_unknown(origin: &str, bytes: &[u8]) -> Result<(Pod, Vec<String>), String> {
    if bytes.len() > MAX_TEMPLATE_BYTES {
        return Err(format!(
            "pod template {origin} is {} bytes; a pod template is at most {MAX_TEMPLATE_BYTES} bytes",
            bytes.len()
        ));
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|_| format!("pod template {origin} is not valid UTF-8"))?;
    let doc = crate::yaml::to_value(text)
        .map_err(|e| format!("pod template {origin} is not valid YAML: {e}"))?;
    let kind = doc.get("kind").and_then(|k| k.as_str());
    let api_version = doc.get("apiVersion").and_then(|k| k.as_str());
    if kind != Some("Pod") || api_version != Some("v1") {
        return Err(format!(
            "pod template {origin} must be a Pod (apiVersion: v1, kind: Pod), found {}",
            match (api_version, kind) {
                (Some(a), Some(k)) => format!("apiVersion: {a}, kind: {k}"),
                _ => "no apiVersion/kind".to_string(),
            }
        ));
    }
    let mut unknown = Vec::new();
    let mut note = |path: serde_ignored::Path| unknown.push(field_path(&path));
    let tracked = serde_ignored::Deserializer::new(doc, &mut note);
    let pod: Pod = serde_path_to_error::deserialize(tracked).map_err(|e| {
        format!(
            "pod template {origin} is not a valid Pod: {}: {}",
            e.path(),
            first_line(&e.inner().to_string())
        )
    })?;
    let containers = pod.spec.as_ref().map_or(0, |s| s.containers.len());
    if containers == 0 {
        return Err(no_containers(origin, &unknown));
    }
    if let Some(problem) = api_problem(&pod).or_else(|| restart_problem(&pod)) {
        return Err(format!("pod template {origin}: {problem}"));
    }
    unknown.sort();
    unknown.dedup();
    Ok((pod, unknown))
}

/// A template without containers; when a field of the spec it ignored is a near miss
/// (`spec.contaners`), the misspelling is named, since that is why there are none.
fn no_containers(origin: &str, unknown: &[String]) -> String {
    let near_miss = unknown.iter().find(|field| {
        field
            .strip_prefix("spec.")
            .is_some_and(|key| strsim::damerau_levenshtein(key, "containers") <= 3)
    });
    match near_miss {
        Some(field) => format!(
            "pod template {origin} has no containers: {field} is not a field of a Pod; did you mean `spec.containers`?"
        ),
        None => {
            format!("pod template {origin} has no containers (spec.containers needs at least one)")
        }
    }
}

/// A `restartPolicy` other than `Never`, refused rather than overridden (the user wrote
/// it on purpose, and a silent change would surprise): with `Always` a task that exits 0
/// is started again and again, with `OnFailure` a failed one, so the pod never ends and
/// `wait` never reaches a verdict. A failed run is restarted whole with `--restarts N`.
fn restart_problem(pod: &Pod) -> Option<String> {
    let policy = pod.spec.as_ref()?.restart_policy.as_deref()?;
    (policy != "Never").then(|| {
        format!(
            "spec.restartPolicy is {policy}; tf-spawner needs Never (remove the line): a task that ends must stay ended for `wait` to reach a verdict (to restart a failed run: --restarts N)"
        )
    })
}

/// What the API server would refuse in a template, found before any request: container
/// names, ports, env variable names, label keys and values.
fn api_problem(pod: &Pod) -> Option<String> {
    if let Some(problem) = metadata_problem(&pod.metadata) {
        return Some(problem);
    }
    let spec = pod.spec.as_ref()?;
    let mut names = std::collections::BTreeSet::new();
    let lists = [
        (
            "initContainers",
            spec.init_containers.as_deref().unwrap_or_default(),
        ),
        ("containers", &spec.containers[..]),
    ];
    let all = lists
        .into_iter()
        .flat_map(|(list, cs)| cs.iter().enumerate().map(move |(at, c)| (list, at, c)));
    for (list, at, c) in all {
        let field = format!("spec.{list}[{at}]");
        if let Some(problem) = container_problem(&field, c) {
            return Some(problem);
        }
        if !names.insert(c.name.as_str()) {
            return Some(format!("{field}.name {:?} is used twice", c.name));
        }
    }
    None
}

/// The template's label keys and values and its annotation keys, as the API server
/// checks them.
fn metadata_problem(meta: &ObjectMeta) -> Option<String> {
    for (key, value) in meta.labels.iter().flatten() {
        if !is_label_key(key) {
            return Some(format!("metadata.labels: {key:?} is not a valid label key"));
        }
        if !is_label_value(value) {
            return Some(format!(
                "metadata.labels.{key}: {value:?} is not a valid label value (at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)"
            ));
        }
    }
    let key = meta
        .annotations
        .iter()
        .flatten()
        .map(|(k, _)| k)
        .find(|k| !is_label_key(k))?;
    Some(format!(
        "metadata.annotations: {key:?} is not a valid annotation key"
    ))
}

/// One container's name, ports and env variable names, as the API server checks them;
/// `field` is where it is (`spec.containers[0]`).
fn container_problem(field: &str, c: &Container) -> Option<String> {
    if crate::labels::name_problem(&c.name, 63).is_some() || c.name.contains('.') {
        return Some(format!(
            "{field}.name {:?} is not a valid container name (lowercase letters, digits and '-', at most 63 characters)",
            c.name
        ));
    }
    if let Some(p) = c
        .ports
        .iter()
        .flatten()
        .find(|p| !(1..=65535).contains(&p.container_port))
    {
        return Some(format!(
            "{field}: containerPort {} is not a port number (1 to 65535)",
            p.container_port
        ));
    }
    let e = c
        .env
        .iter()
        .flatten()
        .find(|e| !crate::inputs::envfile::is_env_name(&e.name))?;
    Some(format!(
        "{field}.env: {:?} is not a valid variable name",
        e.name
    ))
}

/// `[prefix/]name`: the prefix a DNS subdomain, the name at most 63 letters, digits,
/// `-`, `_` or `.`, starting and ending with a letter or digit.
fn is_label_key(key: &str) -> bool {
    let (prefix, name) = key
        .rsplit_once('/')
        .map_or((None, key), |(p, n)| (Some(p), n));
    prefix.is_none_or(|p| crate::labels::name_problem(p, 253).is_none())
        && !name.is_empty()
        && is_label_value(name)
}

fn is_label_value(value: &str) -> bool {
    let ends = |c: Option<char>| c.is_none_or(|c| c.is_ascii_alphanumeric());
    value.len() <= 63
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && ends(value.chars().next())
        && ends(value.chars().last())
}

/// `spec.containers[0].imagee`, as the API server and `serde_path_to_error` write paths.
fn field_path(path: &serde_ignored::Path) -> String {
    use serde_ignored::Path;
    match path {
        Path::Root => String::new(),
        Path::Seq { parent, index } => format!("{}[{index}]", field_path(parent)),
        Path::Map { parent, key } => match field_path(parent) {
            p if p.is_empty() => key.clone(),
            p => format!("{p}.{key}"),
        },
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => field_path(parent),
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

/// The containers of `pod` (init containers too) that run privileged
/// (`securityContext.privileged: true`: every device and capability of the node, the
/// host's root a `mount` away), as `spec.containers[0] (tensorflow)`. tf-spawner keeps
/// what the template asks; the user is told.
pub fn privileged(pod: &Pod) -> Vec<String> {
    let Some(spec) = &pod.spec else {
        return Vec::new();
    };
    let lists = [
        ("containers", Some(&spec.containers)),
        ("initContainers", spec.init_containers.as_ref()),
    ];
    lists
        .into_iter()
        .flat_map(|(field, list)| {
            list.into_iter()
                .flatten()
                .enumerate()
                .filter_map(move |(i, c)| {
                    c.security_context
                        .as_ref()
                        .and_then(|sc| sc.privileged)
                        .filter(|p| *p)
                        .map(|_| format!("spec.{field}[{i}] ({})", c.name))
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_templates_parse() {
        let pod = parse("templates/pod.yaml", DEFAULT_TEMPLATE.as_bytes()).unwrap();
        assert_eq!(pod.spec.unwrap().containers[0].name, "tensorflow");
        let gpu = include_str!("../../templates/pod-gpu.yaml");
        let pod = parse("templates/pod-gpu.yaml", gpu.as_bytes()).unwrap();
        let c = &pod.spec.unwrap().containers[0];
        assert!(c.image.as_deref().unwrap().contains("gpu"));
    }

    #[test]
    fn refuses_what_is_not_a_pod() {
        let e = parse(
            "t.yaml",
            b"apiVersion: v1\nkind: Service\nmetadata: {name: x}\n",
        )
        .unwrap_err();
        assert_eq!(
            e,
            "pod template t.yaml must be a Pod (apiVersion: v1, kind: Pod), found apiVersion: v1, kind: Service"
        );
        let e = parse("t.yaml", b"- a\n- b\n").unwrap_err();
        assert!(e.contains("found no apiVersion/kind"), "{e}");
    }

    #[test]
    fn refuses_invalid_yaml_and_empty_pods() {
        let e = parse("t.yaml", b"apiVersion: v1\nkind: Pod\n  spec: [\n").unwrap_err();
        assert!(
            e.starts_with("pod template t.yaml is not valid YAML"),
            "{e}"
        );
        let e = parse(
            "t.yaml",
            b"apiVersion: v1\nkind: Pod\nspec:\n  containers: []\n",
        )
        .unwrap_err();
        assert!(e.contains("has no containers"), "{e}");
        let e = parse(
            "t.yaml",
            b"apiVersion: v1\nkind: Pod\nspec:\n  containers: 3\n",
        )
        .unwrap_err();
        assert!(
            e.starts_with("pod template t.yaml is not a valid Pod: spec.containers: invalid type"),
            "{e}"
        );
        let e = parse(
            "t.yaml",
            b"apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: a\n    ports:\n    - containerPort: x\n",
        )
        .unwrap_err();
        assert!(
            e.contains(": spec.containers[0].ports[0].containerPort: invalid type"),
            "{e}"
        );
    }

    #[test]
    fn what_the_api_server_would_refuse_is_refused() {
        let pod = |body: &str| {
            parse(
                "t.yaml",
                format!("apiVersion: v1\nkind: Pod\n{body}").as_bytes(),
            )
            .unwrap_err()
        };
        assert_eq!(
            pod("spec:\n  containers:\n  - name: Tensor Flow\n"),
            "pod template t.yaml: spec.containers[0].name \"Tensor Flow\" is not a valid container name (lowercase letters, digits and '-', at most 63 characters)"
        );
        assert!(
            pod("spec:\n  containers:\n  - name: a\n  - name: a\n")
                .ends_with("\"a\" is used twice")
        );
        assert!(
            pod("spec:\n  containers:\n  - name: a\n    ports: [{containerPort: 70000}]\n")
                .contains("containerPort 70000")
        );
        assert!(
            pod("spec:\n  containers:\n  - name: a\n    env: [{name: 1A}]\n")
                .contains("\"1A\" is not a valid variable name")
        );
        assert!(
            pod("metadata: {labels: {team: a b}}\nspec: {containers: [{name: a}]}\n")
                .contains("metadata.labels.team")
        );
        assert!(
            pod("metadata: {labels: {'a b': x}}\nspec: {containers: [{name: a}]}\n")
                .contains("not a valid label key")
        );
        let ok = "metadata: {labels: {example.org/team: a_b.c, x: ''}}\nspec: {containers: [{name: a, ports: [{containerPort: 80}], env: [{name: A.b}]}]}\n";
        parse(
            "t.yaml",
            format!("apiVersion: v1\nkind: Pod\n{ok}").as_bytes(),
        )
        .unwrap();
    }

    #[test]
    fn misspelled_fields_are_named() {
        let (_, unknown) = parse_with_unknown(
            "t.yaml",
            b"apiVersion: v1\nkind: Pod\nmetadata: {labelz: {}}\nspec:\n  containres: []\n  containers:\n  - name: a\n    imagee: x\n",
        )
        .unwrap();
        assert_eq!(
            unknown,
            [
                "metadata.labelz",
                "spec.containers[0].imagee",
                "spec.containres"
            ]
        );
    }

    #[test]
    fn a_misspelled_containers_is_named() {
        let e = parse(
            "t.yaml",
            b"apiVersion: v1\nkind: Pod\nspec:\n  contaners:\n  - name: a\n",
        )
        .unwrap_err();
        assert_eq!(
            e,
            "pod template t.yaml has no containers: spec.contaners is not a field of a Pod; did you mean `spec.containers`?"
        );
        let e = parse(
            "t.yaml",
            b"apiVersion: v1\nkind: Pod\nspec:\n  tolerations: []\n",
        )
        .unwrap_err();
        assert!(e.ends_with("(spec.containers needs at least one)"), "{e}");
    }

    #[test]
    fn a_restart_policy_other_than_never_is_refused() {
        let pod = |policy: &str| {
            parse(
                "t.yaml",
                format!("apiVersion: v1\nkind: Pod\nspec:\n  restartPolicy: {policy}\n  containers: [{{name: a}}]\n").as_bytes(),
            )
        };
        for policy in ["Always", "OnFailure"] {
            let e = pod(policy).unwrap_err();
            assert!(
                e.starts_with(&format!(
                    "pod template t.yaml: spec.restartPolicy is {policy}; tf-spawner needs Never"
                )),
                "{e}"
            );
        }
        pod("Never").unwrap();
    }

    #[test]
    fn refuses_huge_files() {
        let big = vec![b'#'; MAX_TEMPLATE_BYTES + 1];
        assert!(parse("t.yaml", &big).unwrap_err().contains("at most"));
    }
}

#[cfg(test)]
mod fuzz {
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..1024)) {
            let _ = super::parse("t", &bytes);
        }

        #[test]
        fn yaml_like_text_never_panics(text in "(apiVersion: v1\nkind: Pod\n)?([a-z]{1,8}:( [\\[\\]{}a-z0-9\"-]{0,10})?\n(  - [a-z]{0,5}: [a-z0-9]{0,5}\n){0,3}){0,8}") {
            let _ = super::parse("t", text.as_bytes());
        }
    }
}
