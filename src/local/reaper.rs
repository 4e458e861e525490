//! What a task leaves behind when it detaches a child from its process group (`setsid`,
//! a double-forking daemon): on Linux, tf-spawner is a child subreaper
//! (`PR_SET_CHILD_SUBREAPER`) during a local run, so such an orphan becomes tf-spawner's
//! child instead of init's, and is killed (SIGKILL, as a container runtime kills what is
//! left in a container) and reaped here once the tasks' own processes have ended.
//!
//! Not covered: a process that is never orphaned while tf-spawner runs (its parent
//! outlives tf-spawner, which cannot happen for a task's processes, all killed first),
//! and, elsewhere than on Linux, any process outside a task's group.

use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, WaitOptions};

/// How long the sweep waits for the killed to be reaped, in all.
const PATIENCE: Duration = Duration::from_secs(2);

/// Makes orphaned descendants this process's children. `false` where that cannot be
/// done (not Linux, or the kernel refused).
pub(super) fn become_subreaper() -> bool {
    #[cfg(target_os = "linux")]
    {
        rustix::process::set_child_subreaper(Some(rustix::process::getpid())).is_ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// Kills and reaps every child of this process but `leaders` (the tasks' main
/// processes, reaped by their own waits), again for the children the killed ones leave,
/// until none is left or patience runs out. Returns how many were killed.
pub(super) fn kill_orphans(leaders: &[i32]) -> usize {
    let started = Instant::now();
    let mut killed = 0usize;
    loop {
        let orphans: Vec<i32> = children()
            .into_iter()
            .filter(|pid| !leaders.contains(pid))
            .collect();
        if orphans.is_empty() || started.elapsed() > PATIENCE {
            return killed;
        }
        for &pid in &orphans {
            if let Some(p) = Pid::from_raw(pid) {
                // A zombie cannot be killed, only reaped: the error does not matter.
                let _ = rustix::process::kill_process(p, Signal::KILL);
                killed = killed.saturating_add(1);
            }
        }
        for &pid in &orphans {
            reap(pid, started);
        }
    }
}

/// Waits (polling) until `pid`, a child of ours, has ended, or patience runs out.
fn reap(pid: i32, started: Instant) {
    let Some(p) = Pid::from_raw(pid) else { return };
    while started.elapsed() <= PATIENCE {
        match rustix::process::waitpid(Some(p), WaitOptions::NOHANG) {
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            // Reaped, or not ours to reap (gone already).
            Ok(Some(_)) | Err(_) => return,
        }
    }
}

/// The process ids whose parent is this process, from `/proc/PID/stat`.
fn children() -> Vec<i32> {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| parent_of(pid) == Some(me))
        .collect()
}

/// The parent's pid: the fourth field of `/proc/PID/stat`, after the `(comm)` that may
/// hold spaces and parentheses.
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_comm = &stat[stat.rfind(')')?.checked_add(1)?..];
    after_comm.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_parent_of_this_process_is_read_from_proc() {
        let me = rustix::process::getpid().as_raw_nonzero().get();
        let parent = rustix::process::getppid().map(|p| p.as_raw_nonzero().get());
        if std::path::Path::new("/proc/self/stat").exists() {
            assert_eq!(super::parent_of(me), parent);
        }
    }
}
