//! The validation rules of a real kube-apiserver that matter for the objects the
//! tool creates. Messages copy the apimachinery wording.

use std::collections::HashSet;

use base64::Engine;
use serde_json::{Value, json};

use crate::status::{ApiError, Cause};

const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const QUALIFIED_NAME_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const CONFIG_KEY_MSG: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";
const ENV_NAME_MSG: &str = "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')";
pub const MAX_DATA_SIZE: usize = 1024 * 1024;

fn lower_alnum(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

fn is_dns1123_label(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| lower_alnum(c) || c == '-')
        && s.starts_with(lower_alnum)
        && s.ends_with(lower_alnum)
}

pub fn dns1123_label_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    if !is_dns1123_label(s) {
        errs.push(DNS1123_LABEL_MSG.to_string());
    }
    errs
}

pub fn dns1123_subdomain_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    if !s.split('.').all(is_dns1123_label) {
        errs.push(DNS1123_SUBDOMAIN_MSG.to_string());
    }
    errs
}

pub fn dns1035_label_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    if !(is_dns1123_label(s) && s.starts_with(|c: char| c.is_ascii_lowercase())) {
        errs.push(DNS1035_LABEL_MSG.to_string());
    }
    errs
}

fn is_qualified_name_part(s: &str) -> bool {
    let alnum = |c: char| c.is_ascii_alphanumeric();
    !s.is_empty()
        && s.chars().all(|c| alnum(c) || matches!(c, '-' | '_' | '.'))
        && s.starts_with(alnum)
        && s.ends_with(alnum)
}

/// Label (and annotation) keys: `[prefix/]name`.
pub fn label_key_errors(k: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let (prefix, name) = match k.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, k),
    };
    if let Some(p) = prefix {
        if p.is_empty() {
            errs.push("prefix part must be non-empty".to_string());
        } else {
            errs.extend(
                dns1123_subdomain_errors(p)
                    .into_iter()
                    .map(|e| format!("prefix part {e}")),
            );
        }
    }
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else {
        if name.len() > 63 {
            errs.push("name part must be no more than 63 characters".to_string());
        }
        if !is_qualified_name_part(name) {
            errs.push(QUALIFIED_NAME_MSG.to_string());
        }
    }
    errs
}

pub fn label_value_errors(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    if !v.is_empty() && !is_qualified_name_part(v) {
        errs.push(LABEL_VALUE_MSG.to_string());
    }
    errs
}

fn config_key_errors(k: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if k.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    if k.is_empty()
        || !k
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        errs.push(CONFIG_KEY_MSG.to_string());
    }
    if k == "." {
        errs.push("must not be '.'".to_string());
    } else if k == ".." {
        errs.push("must not be '..'".to_string());
    } else if k.starts_with("..") {
        errs.push("must not start with '..'".to_string());
    }
    errs
}

fn env_name_errors(n: &str) -> Vec<String> {
    let ok = !n.is_empty()
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !n.starts_with(|c: char| c.is_ascii_digit());
    if ok {
        vec![]
    } else {
        vec![ENV_NAME_MSG.to_string()]
    }
}

fn port_name_errors(n: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if n.len() > 15 {
        errs.push("must be no more than 15 characters".to_string());
    }
    if !n.chars().all(|c| lower_alnum(c) || c == '-') {
        errs.push(
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_string(),
        );
    }
    if !n.chars().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".to_string());
    }
    if n.contains("--") {
        errs.push("must not contain consecutive hyphens".to_string());
    }
    if n.starts_with('-') || n.ends_with('-') {
        errs.push("must not begin or end with a hyphen".to_string());
    }
    errs
}

/// A Kubernetes quantity as a float (precise enough to compare requests and limits).
pub fn parse_quantity(v: &Value) -> Option<f64> {
    let s = match v {
        Value::Number(n) => return n.as_f64(),
        Value::String(s) => s.trim(),
        _ => return None,
    };
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(s.len());
    let (num, suffix) = s.split_at(split);
    if num.is_empty() || num.matches('.').count() > 1 || num[1..].contains(['+', '-']) {
        return None;
    }
    let base: f64 = num.parse().ok()?;
    let mult = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        e if e.starts_with(['e', 'E']) => 10f64.powi(e[1..].parse::<i32>().ok()?),
        _ => return None,
    };
    Some(base * mult)
}

struct Checker {
    causes: Vec<Cause>,
}

impl Checker {
    fn each(&mut self, field: &str, value: &str, errs: Vec<String>) {
        for e in errs {
            self.causes.push(Cause::invalid(field, &json!(value), &e));
        }
    }
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn arr<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Validates a complete object (after defaulting). `kind` is e.g. "Pod".
pub fn validate(resource: &str, kind: &str, obj: &Value) -> Result<(), ApiError> {
    let mut c = Checker { causes: Vec::new() };
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if name.is_empty() {
        c.causes.push(Cause::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        let errs = match resource {
            "services" => dns1035_label_errors(name),
            "namespaces" => dns1123_label_errors(name),
            _ => dns1123_subdomain_errors(name),
        };
        c.each("metadata.name", name, errs);
    }
    validate_map_keys_values(
        &mut c,
        obj.pointer("/metadata/labels"),
        "metadata.labels",
        true,
    );
    validate_map_keys_values(
        &mut c,
        obj.pointer("/metadata/annotations"),
        "metadata.annotations",
        false,
    );
    validate_annotations_size(&mut c, obj.pointer("/metadata/annotations"));
    match resource {
        "pods" => validate_pod(&mut c, obj),
        "services" => validate_service(&mut c, obj),
        "configmaps" => validate_configmap(&mut c, obj),
        "secrets" => validate_secret(&mut c, obj),
        _ => {}
    }
    if c.causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(kind, name, c.causes))
    }
}

/// The annotations' keys and values together: at most 256 KiB
/// (`apimachinery/pkg/api/validation/objectmeta.go`: `ValidateAnnotationsSize`,
/// `TotalAnnotationSizeLimitB`, `field.TooLong(fldPath, "", TotalAnnotationSizeLimitB)`).
fn validate_annotations_size(c: &mut Checker, map: Option<&Value>) {
    const TOTAL_ANNOTATION_SIZE_LIMIT_B: usize = 256 * (1 << 10);
    let Some(map) = map.and_then(Value::as_object) else {
        return;
    };
    let total: usize = map
        .iter()
        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
        .sum();
    if total > TOTAL_ANNOTATION_SIZE_LIMIT_B {
        c.causes.push(Cause::too_long(
            "metadata.annotations",
            TOTAL_ANNOTATION_SIZE_LIMIT_B,
        ));
    }
}

fn validate_map_keys_values(c: &mut Checker, map: Option<&Value>, field: &str, values_too: bool) {
    let Some(map) = map.and_then(Value::as_object) else {
        return;
    };
    for (k, v) in map {
        c.each(field, k, label_key_errors(k));
        if values_too {
            let s = v.as_str().unwrap_or("");
            c.each(field, s, label_value_errors(s));
        }
    }
}

fn validate_pod(c: &mut Checker, obj: &Value) {
    let empty = json!({});
    let spec = obj.get("spec").unwrap_or(&empty);
    let volumes: Vec<String> = arr(spec, "volumes")
        .iter()
        .filter_map(|v| str_at(v, "name").map(str::to_string))
        .collect();
    let mut seen_vol = HashSet::new();
    for (i, v) in volumes.iter().enumerate() {
        let f = format!("spec.volumes[{i}].name");
        c.each(&f, v, dns1123_label_errors(v));
        if !seen_vol.insert(v.clone()) {
            c.causes.push(Cause::duplicate(f, &json!(v)));
        }
    }
    if arr(spec, "containers").is_empty() {
        c.causes.push(Cause::required("spec.containers", ""));
    }
    let mut names = HashSet::new();
    let mut port_names = HashSet::new();
    for list in ["initContainers", "containers"] {
        for (i, ctr) in arr(spec, list).iter().enumerate() {
            let p = format!("spec.{list}[{i}]");
            validate_container(c, ctr, &p, &volumes, &mut names, &mut port_names);
        }
    }
    if let Some(rp) = spec.get("restartPolicy") {
        let ok = ["Always", "OnFailure", "Never"];
        if !rp.as_str().is_some_and(|s| ok.contains(&s)) {
            c.causes
                .push(Cause::not_supported("spec.restartPolicy", rp, &ok));
        }
    }
}

fn validate_container(
    c: &mut Checker,
    ctr: &Value,
    p: &str,
    volumes: &[String],
    names: &mut HashSet<String>,
    port_names: &mut HashSet<String>,
) {
    match str_at(ctr, "name") {
        None | Some("") => c.causes.push(Cause::required(format!("{p}.name"), "")),
        Some(n) => {
            c.each(&format!("{p}.name"), n, dns1123_label_errors(n));
            if !names.insert(n.to_string()) {
                c.causes
                    .push(Cause::duplicate(format!("{p}.name"), &json!(n)));
            }
        }
    }
    if str_at(ctr, "image").is_none_or(|s| s.trim().is_empty()) {
        c.causes.push(Cause::required(format!("{p}.image"), ""));
    }
    validate_ports(c, ctr, p, port_names);
    validate_env(c, ctr, p);
    validate_env_from(c, ctr, p);
    validate_mounts(c, ctr, p, volumes);
    validate_resources(c, ctr.get("resources"), &format!("{p}.resources"));
}

fn validate_ports(c: &mut Checker, ctr: &Value, p: &str, port_names: &mut HashSet<String>) {
    for (j, port) in arr(ctr, "ports").iter().enumerate() {
        let pf = format!("{p}.ports[{j}]");
        if let Some(n) = str_at(port, "name").filter(|n| !n.is_empty()) {
            c.each(&format!("{pf}.name"), n, port_name_errors(n));
            if !port_names.insert(n.to_string()) {
                c.causes
                    .push(Cause::duplicate(format!("{pf}.name"), &json!(n)));
            }
        }
        check_port(
            c,
            port.get("containerPort"),
            &format!("{pf}.containerPort"),
            true,
        );
        check_port(c, port.get("hostPort"), &format!("{pf}.hostPort"), false);
        check_protocol(c, port, &pf);
    }
}

fn validate_env(c: &mut Checker, ctr: &Value, p: &str) {
    for (j, env) in arr(ctr, "env").iter().enumerate() {
        let ef = format!("{p}.env[{j}]");
        match str_at(env, "name") {
            None | Some("") => c.causes.push(Cause::required(format!("{ef}.name"), "")),
            Some(n) => c.each(&format!("{ef}.name"), n, env_name_errors(n)),
        }
        if let Some(from) = env.get("valueFrom") {
            for r in ["configMapKeyRef", "secretKeyRef"] {
                if let Some(rf) = from.get(r) {
                    for k in ["name", "key"] {
                        if str_at(rf, k).is_none_or(str::is_empty) {
                            c.causes
                                .push(Cause::required(format!("{ef}.valueFrom.{r}.{k}"), ""));
                        }
                    }
                }
            }
        }
    }
}

fn validate_env_from(c: &mut Checker, ctr: &Value, p: &str) {
    for (j, from) in arr(ctr, "envFrom").iter().enumerate() {
        let ff = format!("{p}.envFrom[{j}]");
        if let Some(prefix) = str_at(from, "prefix").filter(|s| !s.is_empty()) {
            c.each(&format!("{ff}.prefix"), prefix, env_name_errors(prefix));
        }
        let mut refs = 0;
        for r in ["configMapRef", "secretRef"] {
            if let Some(rf) = from.get(r) {
                refs += 1;
                match str_at(rf, "name") {
                    None | Some("") => c.causes.push(Cause::required(format!("{ff}.{r}.name"), "")),
                    Some(n) => c.each(&format!("{ff}.{r}.name"), n, dns1123_subdomain_errors(n)),
                }
            }
        }
        if refs != 1 {
            c.causes.push(Cause::invalid(
                ff,
                &Value::String(String::new()),
                "must specify one of: `configMapRef` or `secretRef`",
            ));
        }
    }
}

fn validate_mounts(c: &mut Checker, ctr: &Value, p: &str, volumes: &[String]) {
    for (j, m) in arr(ctr, "volumeMounts").iter().enumerate() {
        let mf = format!("{p}.volumeMounts[{j}]");
        match str_at(m, "name") {
            None | Some("") => c.causes.push(Cause::required(format!("{mf}.name"), "")),
            Some(n) if !volumes.iter().any(|v| v == n) => c
                .causes
                .push(Cause::not_found(format!("{mf}.name"), &json!(n))),
            _ => {}
        }
        if str_at(m, "mountPath").is_none_or(str::is_empty) {
            c.causes
                .push(Cause::required(format!("{mf}.mountPath"), ""));
        }
    }
}

fn check_port(c: &mut Checker, v: Option<&Value>, field: &str, required: bool) {
    match v {
        None if required => c.causes.push(Cause::required(field, "")),
        Some(v) if !v.as_i64().is_some_and(|n| (1..=65535).contains(&n)) => {
            c.causes.push(Cause::invalid(
                field,
                v,
                "must be between 1 and 65535, inclusive",
            ));
        }
        _ => {}
    }
}

fn check_protocol(c: &mut Checker, port: &Value, field: &str) {
    if let Some(p) = port.get("protocol") {
        let ok = ["SCTP", "TCP", "UDP"];
        if !p.as_str().is_some_and(|s| ok.contains(&s)) {
            c.causes
                .push(Cause::not_supported(format!("{field}.protocol"), p, &ok));
        }
    }
}

fn validate_resources(c: &mut Checker, res: Option<&Value>, field: &str) {
    let Some(res) = res else { return };
    let mut parsed = [None, None]; // requests, limits
    for (i, part) in ["requests", "limits"].iter().enumerate() {
        let Some(map) = res.get(*part).and_then(Value::as_object) else {
            continue;
        };
        let mut values = serde_json::Map::new();
        for (k, v) in map {
            let f = format!("{field}.{part}[{k}]");
            match parse_quantity(v) {
                None => c.causes.push(Cause::invalid(
                    f,
                    v,
                    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                )),
                Some(q) if q < 0.0 => {
                    c.causes
                        .push(Cause::invalid(f, v, "must be greater than or equal to 0"))
                }
                Some(q) => {
                    values.insert(k.clone(), json!(q));
                }
            }
        }
        parsed[i] = Some(values);
    }
    if let (Some(req), Some(lim)) = (&parsed[0], &parsed[1]) {
        for (k, q) in req {
            if let Some(l) = lim.get(k)
                && q.as_f64() > l.as_f64()
            {
                let raw = &res["requests"][k];
                let shown = raw.as_str().map_or_else(|| raw.to_string(), str::to_string);
                c.causes.push(Cause::invalid(
                    format!("{field}.requests"),
                    &json!(shown),
                    &format!("must be less than or equal to {k} limit"),
                ));
            }
        }
    }
}

fn validate_service(c: &mut Checker, obj: &Value) {
    let empty = json!({});
    let spec = obj.get("spec").unwrap_or(&empty);
    let headless = str_at(spec, "clusterIP") == Some("None");
    let ty = str_at(spec, "type").unwrap_or("ClusterIP");
    let types = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
    if !types.contains(&ty) {
        c.causes
            .push(Cause::not_supported("spec.type", &json!(ty), &types));
    }
    if let Some(ip) = str_at(spec, "clusterIP")
        && !ip.is_empty()
        && ip != "None"
        && ip.parse::<std::net::IpAddr>().is_err()
    {
        c.causes.push(Cause::invalid(
            "spec.clusterIPs[0]",
            &json!(ip),
            "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
        ));
    }
    if headless && ty != "ClusterIP" {
        c.causes.push(Cause::invalid(
            "spec.clusterIPs[0]",
            &json!("None"),
            &format!("may not be set to 'None' for {ty} services"),
        ));
    }
    let ports = arr(spec, "ports");
    if ports.is_empty() && !headless && ty != "ExternalName" {
        c.causes.push(Cause::required("spec.ports", ""));
    }
    let mut names = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        let pf = format!("spec.ports[{i}]");
        match str_at(port, "name").filter(|n| !n.is_empty()) {
            None if ports.len() > 1 => c.causes.push(Cause::required(format!("{pf}.name"), "")),
            None => {}
            Some(n) => {
                c.each(&format!("{pf}.name"), n, dns1123_label_errors(n));
                if !names.insert(n.to_string()) {
                    c.causes
                        .push(Cause::duplicate(format!("{pf}.name"), &json!(n)));
                }
            }
        }
        check_port(c, port.get("port"), &format!("{pf}.port"), true);
        check_protocol(c, port, &pf);
        match port.get("targetPort") {
            Some(Value::String(s)) => {
                c.each(&format!("{pf}.targetPort"), s, port_name_errors(s));
            }
            Some(v @ Value::Number(_)) => {
                check_port(c, Some(v), &format!("{pf}.targetPort"), false)
            }
            _ => {}
        }
    }
    validate_map_keys_values(c, spec.get("selector"), "spec.selector", true);
}

fn validate_data_keys(c: &mut Checker, map: Option<&Value>, field: &str) {
    if let Some(map) = map.and_then(Value::as_object) {
        for k in map.keys() {
            c.each(&format!("{field}[{k}]"), k, config_key_errors(k));
        }
    }
}

fn validate_configmap(c: &mut Checker, obj: &Value) {
    validate_data_keys(c, obj.get("data"), "data");
    validate_data_keys(c, obj.get("binaryData"), "binaryData");
    let mut total = 0;
    if let Some(data) = obj.get("data").and_then(Value::as_object) {
        total += data
            .values()
            .map(|v| v.as_str().map_or(0, str::len))
            .sum::<usize>();
        if let Some(bin) = obj.get("binaryData").and_then(Value::as_object) {
            for k in data.keys().filter(|k| bin.contains_key(*k)) {
                c.causes.push(Cause::invalid(
                    format!("data[{k}]"),
                    &json!(k),
                    "duplicate of key present in binaryData",
                ));
            }
        }
    }
    if let Some(bin) = obj.get("binaryData").and_then(Value::as_object) {
        total += bin.values().map(decoded_len).sum::<usize>();
    }
    if total > MAX_DATA_SIZE {
        c.causes.push(Cause::too_long("[]", MAX_DATA_SIZE));
    }
}

fn decoded_len(v: &Value) -> usize {
    v.as_str()
        .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
        .map_or(0, |b| b.len())
}

fn validate_secret(c: &mut Checker, obj: &Value) {
    validate_data_keys(c, obj.get("data"), "data");
    let total: usize = obj
        .get("data")
        .and_then(Value::as_object)
        .map_or(0, |d| d.values().map(decoded_len).sum());
    if total > MAX_DATA_SIZE {
        c.causes.push(Cause::too_long("data", MAX_DATA_SIZE));
    }
}

/// `[]byte` fields are base64 in JSON; a real server fails to decode bad ones with 400.
pub fn check_base64_maps(obj: &Value, kind: &str, fields: &[&str]) -> Result<(), ApiError> {
    for f in fields {
        if let Some(map) = obj.get(*f).and_then(Value::as_object) {
            for v in map.values() {
                let s = v.as_str().unwrap_or("");
                if let Err(e) = base64::engine::general_purpose::STANDARD.decode(s) {
                    return Err(ApiError::bad_request(format!(
                        "{kind} in version \"v1\" cannot be handled as a {kind}: illegal base64 data: {e}"
                    )));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities() {
        assert_eq!(parse_quantity(&json!("500m")), Some(0.5));
        assert_eq!(parse_quantity(&json!("1Gi")), Some(1073741824.0));
        assert_eq!(parse_quantity(&json!("512Mi")), Some(536870912.0));
        assert_eq!(parse_quantity(&json!("1e3")), Some(1000.0));
        assert_eq!(parse_quantity(&json!(2)), Some(2.0));
        assert_eq!(parse_quantity(&json!("1x")), None);
        assert_eq!(parse_quantity(&json!("")), None);
    }

    #[test]
    fn annotations_total_at_most_256_kib() {
        let cm = |n: usize| json!({"metadata": {"name": "c", "annotations": {"k": "x".repeat(n)}}, "data": {}});
        assert!(validate("configmaps", "ConfigMap", &cm(256 * 1024 - 1)).is_ok());
        let refused = validate("configmaps", "ConfigMap", &cm(256 * 1024)).unwrap_err();
        assert!(format!("{refused:?}").contains("must have at most 262144 bytes"));
    }

    #[test]
    fn names() {
        assert!(dns1123_subdomain_errors("a.b-c").is_empty());
        assert!(!dns1123_subdomain_errors("A").is_empty());
        assert!(!dns1035_label_errors("1abc").is_empty());
        assert!(dns1035_label_errors("abc-1").is_empty());
        assert!(!dns1035_label_errors(&"a".repeat(64)).is_empty());
        assert!(label_key_errors("example.com/my_key.x").is_empty());
        assert!(!label_key_errors("-bad").is_empty());
        assert!(label_value_errors("").is_empty());
        assert!(!label_value_errors("a b").is_empty());
        assert!(port_name_errors("grpc-port").is_empty());
        assert!(!port_name_errors("123").is_empty());
        assert!(!port_name_errors("a--b").is_empty());
        assert!(!port_name_errors("abcdefghijklmnop").is_empty());
        assert!(env_name_errors("TF_CONFIG").is_empty());
        assert!(!env_name_errors("1X").is_empty());
    }
}
