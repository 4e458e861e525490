//! Pod templates: the built-in one (embedded, so the tool works from any directory) or
//! a user's YAML file holding one `v1` Pod.

use k8s_openapi::api::core::v1::Pod;

/// `templates/pod.yaml`, compiled into the binary.
pub const DEFAULT_TEMPLATE: &str = include_str!("../templates/pod.yaml");

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
        return Err(format!(
            "pod template {origin} has no containers (spec.containers needs at least one)"
        ));
    }
    unknown.sort();
    unknown.dedup();
    Ok((pod, unknown))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_templates_parse() {
        let pod = parse("templates/pod.yaml", DEFAULT_TEMPLATE.as_bytes()).unwrap();
        assert_eq!(pod.spec.unwrap().containers[0].name, "tensorflow");
        let gpu = include_str!("../templates/pod-gpu.yaml");
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
