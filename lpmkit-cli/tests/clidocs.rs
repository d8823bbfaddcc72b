//! What the binary says about itself: `--version` (version, commit, features, build, CPU
//! features, kernels), shell completions and manual pages generated from its own
//! definitions.

use std::process::{Command, Output, Stdio};

fn lpmkit_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lpmkit"));
    cmd.args(args)
        .env_remove("LPMKIT_FORCE_ISA")
        .env_remove("LPMKIT_FORCE_SCALAR")
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("the lpmkit binary runs")
}

fn lpmkit(args: &[&str]) -> Output {
    lpmkit_env(args, &[])
}

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).expect("UTF-8 output")
}

/// The value of `key:` in the `--version` text.
fn field<'a>(text: &'a str, key: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}:")))
        .unwrap_or_else(|| panic!("no `{key}:` line in\n{text}"))
        .trim()
}

#[test]
fn version_names_commit_features_build_and_cpu() {
    let short = stdout(&lpmkit(&["-V"]));
    assert_eq!(
        short.trim(),
        format!("lpmkit {}", env!("CARGO_PKG_VERSION"))
    );

    let long = stdout(&lpmkit(&["--version"]));
    assert!(
        long.starts_with(&format!("lpmkit {}\n", env!("CARGO_PKG_VERSION"))),
        "{long}"
    );
    let commit = field(&long, "commit");
    assert!(
        commit == "unknown"
            || commit
                .trim_end_matches("-dirty")
                .chars()
                .all(|c| c.is_ascii_hexdigit()),
        "{commit}"
    );
    // The library's default features are on in every build of the command.
    let features = field(&long, "features");
    assert!(
        features.starts_with("library: mrt, compression"),
        "{features}"
    );
    let follow = stdout(&lpmkit(&["--help"])).contains("\n  follow ");
    assert_eq!(features.contains("netlink (follow)"), follow, "{features}");
    assert!(field(&long, "built").contains("rustc "), "{long}");
    assert!(!field(&long, "cpu").is_empty());
    let detected = field(&long, "cpu features");
    let kernels = field(&long, "kernels");
    let best = if detected.contains("avx512") {
        "avx512"
    } else if detected.contains("avx2") {
        "avx2"
    } else {
        "scalar"
    };
    assert!(
        kernels.starts_with(&format!("{best} (the best this CPU has")),
        "{kernels}"
    );

    // The environment's ceiling is what the kernels line reports.
    let capped = stdout(&lpmkit_env(
        &["--version"],
        &[("LPMKIT_FORCE_ISA", "scalar")],
    ));
    let kernels = field(&capped, "kernels");
    assert!(kernels.starts_with("scalar ("), "{kernels}");
    if best != "scalar" {
        assert!(kernels.contains("capped at scalar"), "{kernels}");
    }
}

#[test]
fn completions_cover_every_command_for_each_shell() {
    let help = stdout(&lpmkit(&["--help"]));
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = stdout(&lpmkit(&["completions", shell]));
        for command in ["verify", "bench", "experiment", "completions", "man"] {
            assert!(script.contains(command), "{shell}: no {command}");
        }
        assert!(script.contains("--table"), "{shell}: no --table");
        assert_eq!(script.contains("follow"), help.contains("\n  follow "));
    }
    // The bash script is valid bash.
    let script = stdout(&lpmkit(&["completions", "bash"]));
    if let Ok(o) = Command::new("bash")
        .arg("-n")
        .arg("-c")
        .arg(&script)
        .output()
    {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let o = lpmkit(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn man_pages_for_the_command_and_each_subcommand() {
    let page = stdout(&lpmkit(&["man"]));
    assert!(page.contains(".TH lpmkit 1"), "{page}");
    for text in ["verify", "Registered schemes", "lpmkit\\-verify(1)"] {
        assert!(page.contains(text), "lpmkit(1) lacks {text}");
    }
    // The page describes the program, not the machine that made it.
    assert!(!page.contains("cpu features"), "{page}");

    let verify = stdout(&lpmkit(&["man", "verify"]));
    assert!(verify.contains(".TH lpmkit-verify 1"), "{verify}");
    assert!(verify.contains("\\-\\-schemes"), "{verify}");
    let run = stdout(&lpmkit(&["man", "experiment", "run"]));
    assert!(run.contains(".TH lpmkit-experiment-run 1"), "{run}");

    let o = lpmkit(&["man", "nonsense"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("no manual page for `nonsense`") && e.contains("verify"));

    let dir = std::env::temp_dir().join(format!("lpmkit-man-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    stdout(&lpmkit(&["man", "--dir", dir.to_str().unwrap()]));
    for name in ["lpmkit.1", "lpmkit-verify.1", "lpmkit-experiment-run.1"] {
        let text =
            std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            text.starts_with(".ie"),
            "{name}: {}",
            &text[..80.min(text.len())]
        );
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("lpmkit-verify.1")).unwrap(),
        verify
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_full_standard_output_is_an_error_not_a_panic() {
    for args in [&["completions", "bash"][..], &["man"], &["man", "bench"]] {
        let o = Command::new(env!("CARGO_BIN_EXE_lpmkit"))
            .args(args)
            .stdout(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open("/dev/full")
                    .unwrap(),
            )
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains("cannot write to standard output") && !e.contains("panicked"));
    }
}
