//! Shell completion of run tags against a real kube-apiserver (issue 51 item 6): a Tab
//! (`TF_SPAWNER_COMPLETE=bash tf-spawner -- WORDS…`) lists the runs of the namespace the
//! words name; credentials that may not list there get nothing, silently, exit 0.

use std::ffi::OsString;

use crate::support::*;

/// The binary's answer to a Tab after `words` (the last one being completed).
async fn tab(real: &Real, cred: Cred, words: &[&str]) -> Output {
    let kubeconfig = real.kubeconfig(cred);
    let mut args: Vec<OsString> = vec!["--".into(), "tf-spawner".into()];
    args.extend(["--kubeconfig".into(), kubeconfig.into_os_string()]);
    args.extend(words.iter().map(OsString::from));
    let index = (args.len() - 2).to_string();
    let env = [
        ("TF_SPAWNER_COMPLETE", OsString::from("bash")),
        ("_CLAP_COMPLETE_INDEX", index.into()),
        ("_CLAP_IFS", "\n".into()),
    ];
    real.run_raw(&args, &env).await
}

#[tokio::test]
async fn a_tab_lists_the_namespaces_runs_and_nothing_where_it_may_not_look() {
    let Some(real) = Real::new("a_tab_lists_the_namespaces_runs").await else {
        return;
    };
    let ns = real.namespace("complete").await;
    for tag in ["tab-one", "tab-two"] {
        real.spawn_run(&ns, tag, 1).await;
    }
    for words in [
        &["-n", &ns, "status", ""][..],
        &["logs", "-n", &ns, "-t", "tab-"],
    ] {
        let out = tab(&real, Cred::Admin, words).await;
        out.success();
        assert!(out.stderr.is_empty(), "{out:#?}");
        let got: Vec<&str> = out.stdout.lines().collect();
        for tag in ["tab-one", "tab-two"] {
            assert!(got.contains(&tag), "{words:?}: {out:#?}");
        }
    }
    // team-a may not list pods in this namespace: nothing offered, nothing said.
    let out = tab(&real, Cred::TeamA, &["-n", &ns, "wait", "-t", ""]).await;
    assert_eq!(
        (out.code, &*out.stdout, &*out.stderr),
        (0, "", ""),
        "{out:#?}"
    );
}
