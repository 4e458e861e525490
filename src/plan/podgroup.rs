//! Gang scheduling (`--gang`, docs/shared-clusters.md): the run's one PodGroup, of
//! Volcano (`scheduling.volcano.sh/v1beta1`) or of scheduler-plugins' coscheduling
//! plugin (`scheduling.x-k8s.io/v1alpha1`), and what its pods need to join it.
//!
//! The two PodGroups are small structs of their own implementing `kube::Resource`
//! (namespaced, `DynamicType = ()`), with only the fields tf-spawner sets. A
//! `kube::core::DynamicObject` would need an `ApiResource` at every call, and the
//! cluster code's `RunObject` (lists, creates and deletes generic over a static type)
//! takes types whose group, version and plural are known at compile time; typed structs
//! also keep the plan pure and its snapshots exact. Fields tf-spawner does not set (a
//! server's `status`, defaulted spec fields) are not read back: only names, uids and
//! annotations are.
//!
//! Who is in the group, and `minMember`. Both gang schedulers count every placed pod
//! of a group towards `minMember`, whatever its role: scheduler-plugins' coscheduling
//! lets a group's pods bind once `len(assigned) >= minMember`
//! (`pkg/coscheduling/core/core.go`, `Permit`) and places them in the order of
//! `Coscheduling.Less` (`pkg/coscheduling/coscheduling.go`: priority, then the group's
//! creation time, then the pod's name); Volcano's gang plugin calls a job ready once
//! `minAvailable` of its tasks are allocated, in no order of roles
//! (`pkg/scheduler/plugins/gang/gang.go`, `pkg/scheduler/api/job_info.go::IsReady`).
//! A group of more pods than `minMember` can therefore start half-placed: with
//! `--evaluator`, `T-evaluator-0` sorts before `T-worker-*` and could take the place of
//! a worker, which then never binds while the others hold their GPUs.
//!
//! So the group is exactly the pods the training needs at once (the chief, the
//! parameter servers, the workers: the tasks of `TF_CONFIG`'s `cluster`, each of which
//! blocks until it reaches all the others), and `minMember` is all of them. The
//! evaluator joins no group: it is outside the training cluster, only reads
//! checkpoints, blocks no one, and is scheduled on its own by the same scheduler (for
//! Volcano, in a PodGroup of its own that Volcano's controller makes for a pod without
//! one, `pkg/controllers/podgroup/pg_controller_handler.go::createNormalPodPGIfNotExist`,
//! in the queue of its `scheduling.volcano.sh/queue-name` annotation).

use crate::labels::{COSCHEDULING_GROUP_LABEL, VOLCANO_GROUP_ANNOTATION};
use crate::plan::quantity;

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

/// `--gang`: which gang scheduler the run's PodGroup is for. Every gang is in
/// [`Gang::ALL`] and described once by [`Gang::about`]; [`with_pod_group_type!`] maps
/// it to its PodGroup type. Adding one: ARCHITECTURE.md, "A new gang scheduler".
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    clap::ValueEnum,
    Serialize,
    Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Gang {
    /// Volcano: a `scheduling.volcano.sh/v1beta1` PodGroup, pods scheduled by `volcano`
    Volcano,
    /// scheduler-plugins' coscheduling: a `scheduling.x-k8s.io/v1alpha1` PodGroup, pods
    /// scheduled by `scheduler-plugins-scheduler`
    Coscheduling,
}

/// What tf-spawner knows of one gang scheduler.
pub struct AboutGang {
    /// The flag's and the defaults file's spelling (`--gang volcano`).
    pub name: &'static str,
    /// How an error names the project (`the Volcano PodGroup API (…)`).
    pub title: &'static str,
    /// `group/version` of its PodGroup API.
    pub api_version: &'static str,
    /// The `schedulerName` its pods get unless `--scheduler-name` says otherwise: the
    /// name each project's install gives its scheduler.
    pub default_scheduler: &'static str,
    /// How a pod says it is a member of the run's PodGroup.
    pub member: Member,
}

/// The key (a label or an annotation) whose value on a pod names its PodGroup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Member {
    Label(&'static str),
    Annotation(&'static str),
}

impl Member {
    /// The PodGroup a pod's metadata names, if any (an empty value names none).
    pub fn group(self, meta: &ObjectMeta) -> Option<&str> {
        let (map, key) = match self {
            Member::Label(key) => (&meta.labels, key),
            Member::Annotation(key) => (&meta.annotations, key),
        };
        map.as_ref()?
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// Makes a pod's metadata name PodGroup `group`.
    pub fn join(self, meta: &mut ObjectMeta, group: String) {
        let (map, key) = match self {
            Member::Label(key) => (&mut meta.labels, key),
            Member::Annotation(key) => (&mut meta.annotations, key),
        };
        map.get_or_insert_with(BTreeMap::new)
            .insert(key.to_string(), group);
    }
}

impl Gang {
    /// Every gang scheduler: what `-d` and a spawn's check for an existing run look for.
    pub const ALL: [Gang; 2] = [Gang::Volcano, Gang::Coscheduling];

    /// The one table of the gangs' facts.
    pub const fn about(self) -> AboutGang {
        match self {
            Gang::Volcano => AboutGang {
                name: "volcano",
                title: "Volcano",
                api_version: VolcanoPodGroup::API_VERSION,
                // Volcano's chart.
                default_scheduler: "volcano",
                member: Member::Annotation(VOLCANO_GROUP_ANNOTATION),
            },
            Gang::Coscheduling => AboutGang {
                name: "coscheduling",
                title: "coscheduling",
                api_version: CoschedulingPodGroup::API_VERSION,
                // scheduler-plugins' as-a-second-scheduler chart.
                default_scheduler: "scheduler-plugins-scheduler",
                member: Member::Label(COSCHEDULING_GROUP_LABEL),
            },
        }
    }

    /// The defaults file's spelling (`gang: volcano`).
    pub fn as_str(self) -> &'static str {
        self.about().name
    }

    pub fn parse(text: &str) -> Option<Gang> {
        Gang::ALL.into_iter().find(|g| g.as_str() == text)
    }

    /// `group/version` of its PodGroup API.
    pub fn api_version(self) -> &'static str {
        self.about().api_version
    }

    /// The `schedulerName` its pods get unless `--scheduler-name` says otherwise.
    pub fn default_scheduler(self) -> &'static str {
        self.about().default_scheduler
    }

    /// How an error names its API.
    pub fn api_title(self) -> String {
        format!(
            "the {} PodGroup API ({})",
            self.about().title,
            self.api_version()
        )
    }
}

/// Evaluates `$body` with `$K` naming the PodGroup type of `$gang`: the one place a
/// gang becomes a Rust type, for code generic over the object type (`cluster/`'s
/// lists, creates and deletes).
macro_rules! with_pod_group_type {
    ($gang:expr, $K:ident => $body:expr) => {
        match $gang {
            $crate::plan::podgroup::Gang::Volcano => {
                type $K = $crate::plan::podgroup::VolcanoPodGroup;
                $body
            }
            $crate::plan::podgroup::Gang::Coscheduling => {
                type $K = $crate::plan::podgroup::CoschedulingPodGroup;
                $body
            }
        }
    };
}
pub(crate) use with_pod_group_type;

/// A PodGroup of either API, as the plan holds it.
#[derive(Debug, Clone, PartialEq)]
pub enum PodGroup {
    Volcano(VolcanoPodGroup),
    Coscheduling(CoschedulingPodGroup),
}

impl PodGroup {
    pub fn metadata(&self) -> &ObjectMeta {
        match self {
            PodGroup::Volcano(g) => &g.metadata,
            PodGroup::Coscheduling(g) => &g.metadata,
        }
    }

    pub fn gang(&self) -> Gang {
        match self {
            PodGroup::Volcano(_) => Gang::Volcano,
            PodGroup::Coscheduling(_) => Gang::Coscheduling,
        }
    }

    pub fn to_json(&self) -> serde_json::Result<serde_json::Value> {
        match self {
            PodGroup::Volcano(g) => serde_json::to_value(g),
            PodGroup::Coscheduling(g) => serde_json::to_value(g),
        }
    }
}

/// Volcano's `PodGroup` (`scheduling.volcano.sh/v1beta1`), the fields tf-spawner sets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VolcanoPodGroup {
    /// Items of a list carry no `apiVersion`/`kind`: both default.
    #[serde(rename = "apiVersion", default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: VolcanoPodGroupSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VolcanoPodGroupSpec {
    #[serde(default)]
    pub min_member: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,
    /// What the group needs at once: the sum of its members' requests (see
    /// [`min_resources`]). Volcano's enqueue step checks a group against its queue's
    /// capacity only when it has this (`pkg/scheduler/actions/enqueue/enqueue.go`:
    /// `MinResources == nil || ssn.JobEnqueueable(job)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_resources: Option<BTreeMap<String, Quantity>>,
}

/// scheduler-plugins' `PodGroup` (`scheduling.x-k8s.io/v1alpha1`), the fields
/// tf-spawner sets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoschedulingPodGroup {
    #[serde(rename = "apiVersion", default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: CoschedulingPodGroupSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CoschedulingPodGroupSpec {
    #[serde(default)]
    pub min_member: i32,
}

impl VolcanoPodGroup {
    pub const GROUP: &'static str = "scheduling.volcano.sh";
    pub const VERSION: &'static str = "v1beta1";
    pub const API_VERSION: &'static str = "scheduling.volcano.sh/v1beta1";
}

impl CoschedulingPodGroup {
    pub const GROUP: &'static str = "scheduling.x-k8s.io";
    pub const VERSION: &'static str = "v1alpha1";
    pub const API_VERSION: &'static str = "scheduling.x-k8s.io/v1alpha1";
}

macro_rules! pod_group_resource {
    ($ty:ty) => {
        impl kube::Resource for $ty {
            type DynamicType = ();
            type Scope = NamespaceResourceScope;

            fn kind(_: &()) -> Cow<'_, str> {
                "PodGroup".into()
            }
            fn group(_: &()) -> Cow<'_, str> {
                <$ty>::GROUP.into()
            }
            fn version(_: &()) -> Cow<'_, str> {
                <$ty>::VERSION.into()
            }
            fn api_version(_: &()) -> Cow<'_, str> {
                <$ty>::API_VERSION.into()
            }
            fn plural(_: &()) -> Cow<'_, str> {
                "podgroups".into()
            }
            fn meta(&self) -> &ObjectMeta {
                &self.metadata
            }
            fn meta_mut(&mut self) -> &mut ObjectMeta {
                &mut self.metadata
            }
        }
    };
}

pod_group_resource!(VolcanoPodGroup);
pod_group_resource!(CoschedulingPodGroup);

/// A Volcano PodGroup's `minResources`: the sum over its members (`(pod spec, how many
/// pods)`) of what each pod requests, as Volcano's own PodGroup controller fills it in
/// for a pod it groups (`pkg/controllers/podgroup/pg_controller_handler.go::
/// buildPodGroupFromPod`, `pkg/controllers/util/util.go::CalTaskRequests`). `None` when
/// the members request nothing.
pub fn min_resources<'a>(
    members: impl IntoIterator<Item = (&'a PodSpec, u32)>,
) -> Option<BTreeMap<String, Quantity>> {
    let mut sum: BTreeMap<String, i128> = BTreeMap::new();
    for (spec, count) in members {
        for (name, value) in quantity::pod_requests(spec) {
            *sum.entry(name).or_default() += value * i128::from(count);
        }
    }
    let sum: BTreeMap<String, Quantity> = sum
        .into_iter()
        .filter(|(_, v)| *v > 0)
        .map(|(k, v)| {
            // Bytes are written as Kubernetes writes them (`3Gi`).
            let q = quantity::format(v, quantity::is_bytes(&k));
            (k, q)
        })
        .collect();
    (!sum.is_empty()).then_some(sum)
}

/// What a PodGroup is made of besides the run's metadata.
pub struct GroupSpec {
    /// The number of members: every one must be placed (see the module's doc).
    pub min_member: i32,
    /// Volcano: `spec.queue`.
    pub queue: Option<String>,
    /// Volcano: `spec.priorityClassName`.
    pub priority_class_name: Option<String>,
    /// Volcano: `spec.minResources` (see [`min_resources`]).
    pub min_resources: Option<BTreeMap<String, Quantity>>,
}

/// The run's PodGroup: `metadata` is the run's (name, labels, invocation annotation).
pub fn pod_group(gang: Gang, metadata: ObjectMeta, group: GroupSpec) -> PodGroup {
    let GroupSpec {
        min_member,
        queue,
        priority_class_name,
        min_resources,
    } = group;
    match gang {
        Gang::Volcano => PodGroup::Volcano(VolcanoPodGroup {
            api_version: VolcanoPodGroup::API_VERSION.to_string(),
            kind: "PodGroup".to_string(),
            metadata,
            spec: VolcanoPodGroupSpec {
                min_member,
                queue,
                priority_class_name,
                min_resources,
            },
        }),
        Gang::Coscheduling => PodGroup::Coscheduling(CoschedulingPodGroup {
            api_version: CoschedulingPodGroup::API_VERSION.to_string(),
            kind: "PodGroup".to_string(),
            metadata,
            spec: CoschedulingPodGroupSpec { min_member },
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_gang_finds_the_group_it_joined_and_no_other_gangs_mark() {
        for gang in Gang::ALL {
            let member = gang.about().member;
            let mut meta = ObjectMeta::default();
            assert_eq!(member.group(&meta), None);
            member.join(&mut meta, "run-group".to_string());
            assert_eq!(member.group(&meta), Some("run-group"));
            for other in Gang::ALL.into_iter().filter(|g| *g != gang) {
                assert_eq!(other.about().member.group(&meta), None, "{gang:?}");
            }
            member.join(&mut meta, String::new());
            assert_eq!(member.group(&meta), None, "an empty value names no group");
        }
    }
}
