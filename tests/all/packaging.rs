//! What is shipped beside the binary (issue 29): the container build copies every file the
//! crate's build reads (it cannot be built offline here), runs as a user and checks /healthz;
//! the packaged configuration file is a good one; the unit reads it.

use std::path::{Path, PathBuf};

use crate::helpers::{ringmaster, run_to_end};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap()
}

/// Every path the build reads, relative to the repository: the manifest and lock file,
/// build.rs and what it reads, each target's file, and each file the sources embed.
fn build_inputs() -> Vec<PathBuf> {
    let mut inputs: Vec<PathBuf> = ["Cargo.toml", "Cargo.lock", "build.rs"]
        .iter()
        .map(PathBuf::from)
        .collect();
    let build = read("build.rs");
    for line in build.lines() {
        if let Some(rest) = line.split("cargo:rerun-if-changed=").nth(1) {
            let path = rest.trim_end_matches(['"', ')', ';']);
            if !path.contains('{') {
                inputs.push(PathBuf::from(path));
            }
        }
    }
    let manifest: toml::Table = read("Cargo.toml").parse().unwrap();
    for kind in ["bin", "test", "bench"] {
        for target in manifest
            .get(kind)
            .and_then(|t| t.as_array())
            .into_iter()
            .flatten()
        {
            let name = target["name"].as_str().unwrap();
            let path = target
                .get("path")
                .and_then(|p| p.as_str())
                .map(str::to_owned)
                .unwrap_or_else(|| format!("{kind}es/{name}.rs").replace("benchs", "benches"));
            inputs.push(PathBuf::from(path));
        }
    }
    embedded_files(&root().join("src"), &mut inputs);
    inputs
}

/// The files `include_str!`, `include_bytes!` and `embed_migrations!` name under `dir`.
fn embedded_files(dir: &Path, inputs: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            embedded_files(&path, inputs);
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for (macro_name, relative_to_file) in [
            ("include_str!(\"", true),
            ("include_bytes!(\"", true),
            ("embed_migrations!(\"", false),
        ] {
            for piece in text.split(macro_name).skip(1) {
                let named = piece.split('"').next().unwrap();
                let resolved = if relative_to_file {
                    path.parent().unwrap().join(named)
                } else {
                    root().join(named)
                };
                let resolved = std::path::absolute(&resolved).unwrap();
                let normal: PathBuf = resolved.components().fold(PathBuf::new(), |mut out, c| {
                    match c {
                        std::path::Component::ParentDir => {
                            out.pop();
                        }
                        other => out.push(other),
                    }
                    out
                });
                inputs.push(normal.strip_prefix(root()).unwrap().to_path_buf());
            }
        }
    }
}

#[test]
fn the_container_build_copies_every_file_the_build_reads_and_runs_as_a_user() {
    let containerfile = read("packaging/Containerfile");
    let (build_stage, final_stage) = containerfile
        .split_once("\nFROM ")
        .and_then(|(_, rest)| rest.split_once("\nFROM "))
        .expect("a build stage and a final stage");
    let copied: Vec<PathBuf> = build_stage
        .lines()
        .filter(|line| line.starts_with("COPY ") && !line.contains("--from"))
        .flat_map(|line| {
            let words: Vec<&str> = line.split_whitespace().skip(1).collect();
            words[..words.len() - 1]
                .iter()
                .map(|word| PathBuf::from(word.trim_end_matches('/')))
                .collect::<Vec<_>>()
        })
        .collect();
    let inputs = build_inputs();
    assert!(
        inputs.iter().any(|input| input.starts_with("static")),
        "{inputs:?}"
    );
    assert!(
        inputs.iter().any(|input| input.starts_with("migrations")),
        "{inputs:?}"
    );
    for input in &inputs {
        assert!(
            root().join(input).exists(),
            "{} is read by the build",
            input.display()
        );
        assert!(
            copied.iter().any(|source| input.starts_with(source)),
            "the build reads {} and the Containerfile does not copy it (copies {copied:?})",
            input.display()
        );
    }
    assert!(
        build_stage.contains("libpq-dev"),
        "the builder has libpq's headers"
    );
    let user = final_stage
        .lines()
        .find_map(|line| line.strip_prefix("USER "))
        .expect("a USER in the final stage");
    assert!(
        !user.starts_with("root") && !user.starts_with('0'),
        "{user}"
    );
    let healthcheck = final_stage
        .lines()
        .skip_while(|line| !line.starts_with("HEALTHCHECK"))
        .take(2)
        .collect::<String>();
    assert!(healthcheck.contains("/healthz"), "{healthcheck}");
    assert!(
        containerfile.contains("@sha256:"),
        "pinning by digest is documented"
    );
}

#[test]
fn the_packaged_configuration_is_a_good_file_and_the_unit_reads_it() {
    let (code, stdout, stderr) = run_to_end(
        ringmaster()
            .args(["config", "check"])
            .arg(root().join("packaging/ringmaster.toml")),
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains(": ok"), "{stdout}");
    let unit = read("packaging/ringmaster.service");
    let exec = unit
        .lines()
        .find_map(|line| line.strip_prefix("ExecStart="))
        .unwrap();
    assert_eq!(
        exec,
        "/usr/bin/ringmaster --config /etc/ringmaster/ringmaster.toml serve"
    );
    for line in [
        "Type=notify",
        "ExecReload=/bin/kill -HUP $MAINPID",
        "ProtectSystem=strict",
        "StateDirectory=ringmaster",
        "RuntimeDirectory=ringmaster",
        "NoNewPrivileges=yes",
        "MemoryDenyWriteExecute=yes",
        "SystemCallFilter=@system-service",
    ] {
        assert!(unit.lines().any(|l| l == line), "{line} in the unit");
    }
    let manifest = read("Cargo.toml");
    for asset in [
        "packaging/ringmaster.toml",
        "packaging/prometheus/ringmaster-alerts.yml",
    ] {
        assert!(manifest.contains(asset), "{asset} is packaged");
    }
}
