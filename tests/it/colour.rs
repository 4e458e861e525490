//! Every coloured or redrawn view on a terminal (a pty, `pty.rs`), as a person sees it:
//! our colours reach the screen as colours (`compare`'s chart, the task prefixes of
//! `logs` and `--local`), what came from a pod shows escaped, and no view shows one of
//! our own codes as text (`\u{1b}[32m`): `compare`, `logs`, `wait`'s progress,
//! `status`, a sweep's live table, a `--local` run's tasks.

use serde_json::json;

use crate::compare::{as_sweep_run, trained_run};
use crate::follow::{exited, running, spawn_run};
use crate::pty;
use crate::support::{Env, await_while_running};

const NS: &str = "default";

/// SGR codes: the chart's first two marks, the first two task prefixes.
const RED: Option<u8> = Some(31);
const GREEN: Option<u8> = Some(32);
const CYAN: Option<u8> = Some(36);
const YELLOW: Option<u8> = Some(33);

#[test]
fn compare_draws_its_chart_in_colour_one_line_a_row() {
    let env = Env::new();
    for (tag, first, lr) in [("g-1", 0.9, "0.1"), ("g-2", 0.6, "0.01")] {
        trained_run(&env, tag, first, 0);
        as_sweep_run(&env, tag, "g", json!({ "lr": lr }));
        env.run(&["status", "-t", tag]).success();
    }
    let (code, screen) = pty::run(&env, &["compare", "g"]);
    assert_eq!(code, 0, "{}", screen.text());
    screen.shows_no_escaped_code();
    let lines = screen.lines();
    let title = lines
        .iter()
        .position(|l| l == "loss per epoch")
        .unwrap_or_else(|| panic!("no chart:\n{}", screen.text()));
    // Twelve rows, the axis, the epochs, a legend line per run: each row one line
    // of the screen, none wrapped.
    let rows = &lines[title + 1..title + 13];
    assert!(rows.iter().all(|r| r.contains(" |")), "{rows:#?}");
    assert!(
        lines[title + 13].trim_start().starts_with("+---"),
        "{lines:#?}"
    );
    assert!(lines[title + 14].ends_with("3 (epoch)"), "{lines:#?}");
    assert_eq!(lines[title + 15].trim(), "* g-2 (lr=0.01)", "{lines:#?}");
    assert_eq!(lines[title + 16].trim(), "o g-1 (lr=0.1)", "{lines:#?}");
    assert_eq!(lines.len(), title + 17, "{lines:#?}");
    // The marks in their colours, the names plain.
    assert_eq!(
        screen.colour_of("* g-2"),
        Some(vec![RED, None, None, None, None])
    );
    assert_eq!(
        screen.colour_of("o g-1"),
        Some(vec![GREEN, None, None, None, None])
    );
    let marks: usize = rows.iter().map(|r| r.matches(['*', 'o']).count()).sum();
    assert!(marks >= 60, "a line of marks per run: {rows:#?}");
    // The table above it, uncoloured and aligned.
    assert!(
        lines[1].starts_with("*   g-2   0.01   Succeeded"),
        "{lines:#?}"
    );
}

#[test]
fn logs_colour_each_task_and_show_a_pods_codes_escaped() {
    let env = Env::new();
    spawn_run(&env, "lg", &["-w", "2"]);
    for k in 0..2 {
        let pod = format!("lg-worker-{k}");
        running(&env, &pod);
        let text = format!("step {k} done\nclear\x1b[2J\x1b[31mred\n");
        env.server.append_log(NS, &pod, &text);
        exited(&env, &pod, 0);
    }
    let (code, screen) = pty::run(&env, &["logs", "-t", "lg"]);
    assert_eq!(code, 0, "{}", screen.text());
    let text = screen.text();
    assert!(text.contains("worker-0 | step 0 done"), "{text}");
    assert!(text.contains("worker-1 | step 1 done"), "{text}");
    assert!(
        text.contains("worker-1 | clear\\u{1b}[2J\\u{1b}[31mred"),
        "{text}"
    );
    // Each task's name in its colour; the pod's own codes change nothing.
    let w0 = screen.colour_of("worker-0 | step").unwrap();
    assert_eq!(&w0[..8], &[CYAN; 8], "{w0:?}");
    let w1 = screen.colour_of("worker-1 | clear").unwrap();
    assert_eq!(&w1[..8], &[YELLOW; 8], "{w1:?}");
    assert!(w1[8..].iter().all(Option::is_none), "{w1:?}");
}

#[test]
fn wait_and_status_on_a_terminal_show_the_run_as_text() {
    let env = Env::new();
    spawn_run(&env, "wt", &["-w", "1"]);
    running(&env, "wt-worker-0");
    env.server.append_log(
        NS,
        "wt-worker-0",
        "Epoch 1/2\n3/3 - 1s - loss: 0.5 - accuracy: 0.5\n",
    );
    let waiting = pty::start(&env, &["wait", "-t", "wt"]);
    waiting.await_text("worker");
    exited(&env, "wt-worker-0", 0);
    env.server.close_log(NS, "wt-worker-0");
    let (code, screen) = waiting.finish();
    assert_eq!(code, 0, "{}", screen.text());
    screen.shows_no_escaped_code();
    assert!(
        screen.lines().iter().any(|l| l.contains("Succeeded")),
        "{}",
        screen.text()
    );
    let (code, screen) = pty::run(&env, &["status", "-t", "wt"]);
    assert_eq!(code, 0, "{}", screen.text());
    screen.shows_no_escaped_code();
    assert!(screen.text().contains("Succeeded"), "{}", screen.text());
}

#[test]
fn a_sweeps_live_table_on_a_terminal_ends_as_lines_of_text() {
    let env = Env::new();
    let script = env.script();
    let mut sweep = pty::start(
        &env,
        &[
            "sweep",
            "-t",
            "lv",
            "-w",
            "1",
            "--param",
            "lr=0.1,0.01",
            script.to_str().unwrap(),
        ],
    );
    sweep.await_text("lv-2");
    for tag in ["lv-1", "lv-2"] {
        let pod = format!("{tag}-worker-0");
        await_while_running(sweep.child(), &pod, || {
            let found = env.server.get("pods", NS, &pod);
            found.map(|_| ()).ok_or_else(|| "not yet".to_string())
        });
        exited(&env, &pod, 0);
    }
    let (code, screen) = sweep.finish();
    assert_eq!(code, 0, "{}", screen.text());
    screen.shows_no_escaped_code();
    let text = screen.text();
    assert!(
        text.contains("experiment lv: all 2 runs succeeded"),
        "{text}"
    );
    for line in screen.lines() {
        assert!(line.chars().count() <= usize::from(pty::COLS), "{text}");
    }
}

/// A `--local` run's task prefixes in their colours, what the tasks print after them.
#[test]
fn a_local_runs_tasks_are_coloured_on_a_terminal() {
    let env = Env::new();
    // Worker 1 prints and leaves a mark; worker 0, which decides, prints once it is there.
    let mark = env.path("w1.done");
    let script = env.write(
        "hello.py",
        format!(
            "import json, os, time\n\
             k = json.loads(os.environ['TF_CONFIG'])['task']['index']\n\
             if k == 0:\n    end = time.time() + 30\n    \
             while not os.path.exists({mark:?}) and time.time() < end: time.sleep(0.01)\n\
             print('hello from', k, flush=True)\n\
             if k == 1: open({mark:?}, 'w').close()\n"
        ),
    );
    let (code, screen) = pty::run(
        &env,
        &["--local", "-t", "lo", "-w", "2", script.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{}", screen.text());
    screen.shows_no_escaped_code();
    let w0 = screen
        .colour_of("worker-0 | hello from 0")
        .expect("worker 0's line");
    assert_eq!(&w0[..8], &[CYAN; 8], "{w0:?}");
    assert!(w0[8..].iter().all(Option::is_none), "{w0:?}");
    let w1 = screen.colour_of("worker-1 | hello from 1");
    let w1 = w1.unwrap_or_else(|| panic!("no worker-1 line:\n{}", screen.text()));
    assert_eq!(&w1[..8], &[YELLOW; 8], "{w1:?}");
}
