//! Message scripts: the library in tests/scripts passes (twice, with the same result), and
//! each kind of malformed script is rejected before it runs, naming file:line.

use std::path::PathBuf;

use crate::helpers::{TempDir, ringmaster, run_to_end};

fn library() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/scripts");
    let mut scripts: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    scripts.sort();
    scripts
}

fn run_scripts(paths: &[PathBuf]) -> (Option<i32>, String) {
    let (code, stdout, stderr) = run_to_end(ringmaster().args(["script", "run"]).args(paths));
    assert!(!stderr.contains("panicked"), "{stderr}");
    (code, stdout)
}

/// A script is a replay (issue 25, item 5): every library script, run 5 times on fresh
/// databases, gives the same result at every step (the runner compares them). Issue 25 was
/// shown with 20 runs each (`script run --repeat 20`, about 5 minutes); the suite runs 5 to keep
/// CI well inside its time.
#[test]
fn every_library_script_gives_the_same_result_at_every_step_5_times() {
    let scripts = library();
    assert!(scripts.len() >= 7, "the incident library: {scripts:?}");
    for script in &scripts {
        let text = std::fs::read_to_string(script).unwrap();
        assert!(
            text.starts_with('#'),
            "{script:?} starts with a comment on its incident"
        );
    }
    let (code, stdout, stderr) = run_to_end(
        ringmaster()
            .args(["script", "run", "--repeat", "5"])
            .args(&scripts),
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(code, Some(0), "{stdout}");
    assert!(
        stdout.ends_with(&format!("{} passed, 0 failed\n", scripts.len())),
        "{stdout}"
    );
    assert_eq!(
        stdout.matches(", 5 runs alike)").count(),
        scripts.len(),
        "{stdout}"
    );
}

/// Writes `body` to a script file and returns its path (inside `dir`).
fn script(dir: &TempDir, name: &str, body: &str) -> PathBuf {
    let path = dir.path.join(name);
    std::fs::write(&path, body).unwrap();
    path
}

#[test]
fn malformed_scripts_are_rejected_before_they_run_with_file_and_line() {
    let dir = TempDir::new("scripts");
    let cases = [
        (
            "bad-yaml.yaml",
            "steps:\n  - advance: 1s\n  - send: {to: rebalancer\n",
            // The line of the bracket left open.
            "bad-yaml.yaml:3: invalid script: unclosed bracket '{'",
        ),
        (
            "unknown-message.yaml",
            "# x\nsteps:\n  - start_hosts: [cmp-1]\n  - send: {to: rebalancer, message: Explode}\n",
            "unknown-message.yaml:4: step 2: unknown message \"Explode\" for rebalancer: expected one of RebalanceNow, Resign",
        ),
        (
            "wrong-type.yaml",
            "steps:\n  - send:\n      to: scheduler\n      message: Boot\n      args: {name: vm, pci_devices: many}\n",
            "wrong-type.yaml:2: step 1: invalid arguments of Boot: pci_devices: invalid type: string \"many\", expected u32",
        ),
        (
            "unknown-step.yaml",
            "steps:\n  - advance: 1s\n  - teleport: cmp-1\n",
            "unknown-step.yaml:3: step 2: unknown step kind \"teleport\"",
        ),
        (
            "unknown-actor.yaml",
            "steps:\n  - send: {to: conductor, message: Heartbeat}\n",
            "unknown-actor.yaml:2: step 1: unknown actor \"conductor\"",
        ),
        (
            "bad-duration.yaml",
            "steps:\n  - advance: soon\n",
            "bad-duration.yaml:2: step 1: invalid advance \"soon\"",
        ),
        (
            "unknown-argument.yaml",
            "steps:\n  - send: {to: ironic, message: LockNode, args: {node: x, force: true}}\n",
            "unknown-argument.yaml:2: step 1: invalid arguments of LockNode: force: unknown field `force`, expected `node`",
        ),
    ];
    for (name, body, expected) in cases {
        let path = script(&dir, name, body);
        let (code, stdout) = run_scripts(std::slice::from_ref(&path));
        assert_eq!(code, Some(1), "{name}: {stdout}");
        let failure = stdout
            .lines()
            .find(|line| line.starts_with("FAIL "))
            .unwrap_or_else(|| panic!("{name}: {stdout}"));
        assert!(
            failure.contains(expected),
            "{name}: {failure:?} should contain {expected:?}"
        );
        assert!(!stdout.contains("PASS"), "{name}");
        assert!(stdout.ends_with("0 passed, 1 failed\n"), "{name}: {stdout}");
    }
}

#[test]
fn a_failing_expectation_names_the_step_and_what_differed() {
    let dir = TempDir::new("scripts-fail");
    let path = script(
        &dir,
        "wrong.yaml",
        "# expects too much\nsteps:\n  - start_hosts: [cmp-1]\n  - enroll: {count: 2}\n  - tick: all\n  - expect:\n      nodes_on: {cmp-1: 3}\n",
    );
    let (code, stdout) = run_scripts(&[path]);
    assert_eq!(code, Some(1));
    assert!(
        stdout.contains("wrong.yaml:6: step 4 (expect): nodes on cmp-1: expected 3, got 2"),
        "{stdout}"
    );
}
