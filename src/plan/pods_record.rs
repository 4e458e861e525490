//! What a spawn records of its pods in the run's ConfigMap (key [`PODS_KEY`], gzip'd
//! JSON of every task's pod by name, exactly as the plan builds it), so that `wait
//! --restarts` can re-create a task whose pod vanished before any follower read it
//! (`cluster/recreate/`, vetted by `cluster/vetting.rs` before it is used: anyone who
//! may edit the namespace may edit the record). Pure: the bytes are built here, the
//! spawn stores them.
//!
//! The pods of a run differ only in their names, index and task in `TF_CONFIG`, so a
//! thousand of them compress to a few kilobytes; a record that would not leave
//! [`ROOM_KEPT`] free in the ConfigMap (beside the script) is not made, and the spawn
//! says so.

use std::io::Write;

use k8s_openapi::ByteString;

use super::{MAX_CONFIG_MAP_BYTES, Plan};

/// The run's ConfigMap key of the recorded pods.
pub const PODS_KEY: &str = "pods.json.gz";
/// What the ConfigMap keeps free for what later verbs write into it (the verdict, the
/// metrics, a restart under way).
pub const ROOM_KEPT: usize = 128 * 1024;

/// The gzip'd JSON object `{name: pod}` of every pod of `plan`.
pub fn pods_record(plan: &Plan) -> std::io::Result<Vec<u8>> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(b"{")?;
    for (i, pod) in plan.pods.iter().enumerate() {
        if i > 0 {
            gz.write_all(b",")?;
        }
        let name = pod.metadata.name.clone().unwrap_or_default();
        serde_json::to_writer(&mut gz, &name)?;
        gz.write_all(b":")?;
        serde_json::to_writer(&mut gz, &pod)?;
    }
    gz.write_all(b"}")?;
    gz.finish()
}

/// What the ConfigMap of `plan` holds now (data and binaryData).
fn config_map_bytes(plan: &Plan) -> usize {
    let cm = &plan.config_map;
    let data = cm.data.iter().flatten().map(|(k, v)| k.len() + v.len());
    let binary = cm
        .binary_data
        .iter()
        .flatten()
        .map(|(k, v)| k.len() + v.0.len());
    data.chain(binary).sum()
}

/// `plan` whose ConfigMap records its pods; `Err` with why not, in words, when the
/// record does not fit beside the script.
pub fn with_pods_record(plan: &Plan) -> Result<Plan, String> {
    let bytes = pods_record(plan).map_err(|e| format!("its pods could not be written ({e})"))?;
    let used = config_map_bytes(plan);
    if used + bytes.len() + ROOM_KEPT > MAX_CONFIG_MAP_BYTES {
        return Err(format!(
            "its pods ({} bytes compressed) do not fit beside its script ({used} bytes) in its configmap",
            bytes.len()
        ));
    }
    let mut out = plan.clone();
    out.config_map
        .binary_data
        .get_or_insert_with(Default::default)
        .insert(PODS_KEY.to_string(), ByteString(bytes));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::tests::request;
    use crate::roles::Roles;
    use std::collections::BTreeMap;
    use std::io::Read;

    #[test]
    fn the_record_holds_every_pod_as_the_plan_builds_it() {
        let req = request(Roles::workers(3).unwrap());
        let plan = crate::plan::build(&req).unwrap();
        let recorded = with_pods_record(&plan).unwrap();
        let bytes = &recorded.config_map.binary_data.as_ref().unwrap()[PODS_KEY].0;
        let mut json = Vec::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_end(&mut json)
            .unwrap();
        let pods: BTreeMap<String, k8s_openapi::api::core::v1::Pod> =
            serde_json::from_slice(&json).unwrap();
        let planned: BTreeMap<_, _> = plan
            .pods
            .iter()
            .map(|p| (p.metadata.name.clone().unwrap(), p))
            .collect();
        assert_eq!(pods, planned);
    }

    #[test]
    fn a_record_that_leaves_no_room_beside_the_script_is_not_made() {
        let mut req = request(Roles::workers(1).unwrap());
        req.script = vec![b'#'; MAX_CONFIG_MAP_BYTES - ROOM_KEPT / 2];
        let plan = crate::plan::build(&req).unwrap();
        let why = with_pods_record(&plan).unwrap_err();
        assert!(why.contains("do not fit beside its script"), "{why}");
    }
}
