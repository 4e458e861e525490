//! The GPUs of this machine, shared out among a local run's tasks.
//!
//! TensorFlow takes nearly all of every GPU it sees as it starts, so two tasks on one
//! machine that both see GPU 0 leave the second with no memory (`CUDA_ERROR_OUT_OF_MEMORY`
//! or `failed to allocate`). On a cluster each pod sees only its own GPUs; here tf-spawner
//! does the same with `CUDA_VISIBLE_DEVICES`:
//!
//! - one task, or no GPU: nothing is set (a single task sees every GPU, as
//!   MirroredStrategy wants);
//! - at least one GPU per training task: each of them (chief, workers, evaluator) gets an
//!   equal, contiguous share, as `--gpus K` on every pod would; parameter servers get none
//!   (`CUDA_VISIBLE_DEVICES=` empty: they hold variables on the CPU);
//! - fewer GPUs than training tasks: every task sees them all and grows its memory as it
//!   needs it (`TF_FORCE_GPU_ALLOW_GROWTH=true`) instead of taking it all at once.
//!
//! The GPUs are the ones tf-spawner itself may use: the entries of its own
//! `CUDA_VISIBLE_DEVICES` when set (empty or `-1`: none), else the NVIDIA driver's
//! (`/proc/driver/nvidia/gpus/`, one folder per GPU). A variable the env file or the
//! task defaults already set is left as it is.

use std::path::Path;

use crate::roles::{Role, Task};

pub const VISIBLE_VAR: &str = "CUDA_VISIBLE_DEVICES";
pub const GROWTH_VAR: &str = "TF_FORCE_GPU_ALLOW_GROWTH";

/// Where the NVIDIA driver lists the GPUs it drives, one folder each.
const NVIDIA_GPUS: &str = "/proc/driver/nvidia/gpus";

/// The GPUs tf-spawner may hand out, by the ids `CUDA_VISIBLE_DEVICES` takes.
pub fn visible_here() -> Vec<String> {
    visible(
        std::env::var(VISIBLE_VAR).ok().as_deref(),
        Path::new(NVIDIA_GPUS),
    )
}

/// `CUDA_VISIBLE_DEVICES`'s entries when it is set, else `0..n` for the driver's `n`.
fn visible(set: Option<&str>, driver: &Path) -> Vec<String> {
    if let Some(list) = set {
        let ids: Vec<String> = list
            .split(',')
            .map(str::trim)
            .filter(|id| !id.is_empty())
            .map(str::to_string)
            .collect();
        // CUDA stops at the first invalid id: `-1` (or any negative) hides every GPU after it.
        return ids
            .into_iter()
            .take_while(|id| !id.starts_with('-'))
            .collect();
    }
    let count = std::fs::read_dir(driver).map_or(0, |d| d.flatten().count());
    (0..count).map(|i| i.to_string()).collect()
}

/// How the GPUs were shared out, for the run's header note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Share {
    /// Nothing set: no GPU, or one task.
    Untouched,
    /// `per_task` GPUs for each of `tasks` training tasks.
    Split { per_task: usize, tasks: usize },
    /// `gpus` GPUs for `tasks` training tasks: all see all, memory grown as needed.
    Shared { gpus: usize, tasks: usize },
}

impl Share {
    /// One line for the run's header; `None` when nothing was set.
    pub fn note(&self) -> Option<String> {
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        match *self {
            Share::Untouched => None,
            Share::Split { per_task, tasks } => Some(format!(
                "{} GPU{} here: {per_task} for each of the {tasks} training tasks \
                 ({VISIBLE_VAR}; parameter servers get none)",
                per_task.saturating_mul(tasks),
                plural(per_task.saturating_mul(tasks))
            )),
            Share::Shared { gpus, tasks } => Some(format!(
                "{gpus} GPU{} here for {tasks} training tasks: they share {}, each taking \
                 memory as it needs it ({GROWTH_VAR}=true)",
                plural(gpus),
                if gpus == 1 { "it" } else { "them" }
            )),
        }
    }
}

/// The variables each task gets (in `tasks`' order), and how the GPUs were shared out.
pub fn share(tasks: &[Task], gpus: &[String]) -> (Vec<Vec<(String, String)>>, Share) {
    let training = tasks.iter().filter(|t| t.role != Role::Ps).count();
    let none = vec![Vec::new(); tasks.len()];
    if gpus.is_empty() || tasks.len() < 2 || training == 0 {
        return (none, Share::Untouched);
    }
    let per_task = gpus.len().checked_div(training).unwrap_or(0);
    if per_task == 0 {
        let grow = vec![(GROWTH_VAR.to_string(), "true".to_string())];
        let env = tasks.iter().map(|_| grow.clone()).collect();
        return (
            env,
            Share::Shared {
                gpus: gpus.len(),
                tasks: training,
            },
        );
    }
    let mut next = gpus.chunks(per_task);
    let env = tasks
        .iter()
        .map(|t| {
            let ids = match t.role {
                Role::Ps => String::new(),
                _ => next.next().map(|c| c.join(",")).unwrap_or_default(),
            };
            vec![(VISIBLE_VAR.to_string(), ids)]
        })
        .collect();
    (
        env,
        Share::Split {
            per_task,
            tasks: training,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: usize) -> Vec<String> {
        (0..n).map(|i| i.to_string()).collect()
    }

    fn tasks(workers: u32, ps: u32) -> Vec<Task> {
        let mut all: Vec<Task> = (0..workers)
            .map(|index| Task {
                role: Role::Worker,
                index,
            })
            .collect();
        all.extend((0..ps).map(|index| Task {
            role: Role::Ps,
            index,
        }));
        all
    }

    fn visible_of(env: &[Vec<(String, String)>]) -> Vec<String> {
        env.iter()
            .map(|e| {
                e.iter()
                    .find(|(k, _)| k == VISIBLE_VAR)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_else(|| "unset".into())
            })
            .collect()
    }

    #[test]
    fn no_gpu_or_one_task_sets_nothing() {
        let (env, share) = share(&tasks(2, 0), &[]);
        assert_eq!(share, Share::Untouched);
        assert!(env.iter().all(Vec::is_empty));
        let (env, share) = super::share(&tasks(1, 0), &ids(8));
        assert_eq!(share, Share::Untouched);
        assert_eq!(env, vec![Vec::new()]);
    }

    #[test]
    fn gpus_are_split_evenly_and_contiguously_among_training_tasks() {
        let (env, share) = share(&tasks(2, 0), &ids(8));
        assert_eq!(
            share,
            Share::Split {
                per_task: 4,
                tasks: 2
            }
        );
        assert_eq!(visible_of(&env), ["0,1,2,3", "4,5,6,7"]);
        // 3 workers on 4 GPUs: one each, the fourth unused.
        let (env, _) = super::share(&tasks(3, 0), &ids(4));
        assert_eq!(visible_of(&env), ["0", "1", "2"]);
    }

    #[test]
    fn parameter_servers_see_no_gpu() {
        let (env, share) = share(&tasks(2, 1), &ids(2));
        assert_eq!(
            share,
            Share::Split {
                per_task: 1,
                tasks: 2
            }
        );
        assert_eq!(visible_of(&env), ["0", "1", ""]);
    }

    #[test]
    fn fewer_gpus_than_tasks_are_shared_with_memory_growth() {
        let (env, share) = share(&tasks(2, 0), &ids(1));
        assert_eq!(share, Share::Shared { gpus: 1, tasks: 2 });
        for e in &env {
            assert_eq!(e, &vec![(GROWTH_VAR.to_string(), "true".to_string())]);
        }
        assert!(share.note().unwrap().contains("share it"));
    }

    #[test]
    fn the_users_own_list_is_what_is_shared_out() {
        let nowhere = Path::new("/nonexistent");
        assert_eq!(visible(Some("3, 5"), nowhere), ["3", "5"]);
        assert_eq!(
            visible(Some("GPU-8f2e,GPU-91aa"), nowhere),
            ["GPU-8f2e", "GPU-91aa"]
        );
        assert!(visible(Some(""), nowhere).is_empty());
        assert!(visible(Some("-1"), nowhere).is_empty());
        assert_eq!(visible(Some("0,-1,1"), nowhere), ["0"]);
        assert!(visible(None, nowhere).is_empty());
    }

    #[test]
    fn the_driver_lists_a_folder_per_gpu() {
        let dir = tempfile::tempdir().unwrap();
        for bus in ["0000:18:00.0", "0000:3b:00.0"] {
            std::fs::create_dir(dir.path().join(bus)).unwrap();
        }
        assert_eq!(visible(None, dir.path()), ["0", "1"]);
    }
}
