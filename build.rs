//! Fingerprints `migrations/` (FNV-1a over every file's path and bytes, in sorted order), so
//! that throwaway-database templates built from other migrations are never reused; and says
//! which tools the suite's tool-bound tests find on this machine. A test that needs Chromium or
//! Patroni is `#[ignore]`d, with its reason, where the tool is missing (`cfg(missing_browser)`,
//! `cfg(missing_patroni)`); under `CI=true` it never is, so there a missing tool fails the test
//! instead of skipping it.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=migrations");
    tools();
    let mut files = Vec::new();
    collect(Path::new("migrations"), &mut files);
    files.sort();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for file in &files {
        let contents = fs::read(file).unwrap_or_default();
        for byte in file.to_string_lossy().bytes().chain(contents) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    println!("cargo:rustc-env=RINGMASTER_SCHEMA_FINGERPRINT={hash:016x}");
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            println!("cargo:rerun-if-changed={}", path.display());
            collect(&path, files);
        } else {
            files.push(path);
        }
    }
}

/// The tools the tool-bound tests need, found or not.
fn tools() {
    println!("cargo::rustc-check-cfg=cfg(missing_browser)");
    println!("cargo::rustc-check-cfg=cfg(missing_patroni)");
    println!("cargo::rerun-if-env-changed=CI");
    // A package installed or removed changes the folder.
    println!("cargo::rerun-if-changed=/usr/bin");
    if std::env::var("CI").is_ok_and(|ci| ci == "true") {
        return;
    }
    let browser = ["/usr/bin/chromium", "/usr/bin/chromedriver"];
    if !browser.iter().all(|path| Path::new(path).exists()) {
        println!("cargo::rustc-cfg=missing_browser");
    }
    if !(on_path("etcd") && python_makes_venvs()) {
        println!("cargo::rustc-cfg=missing_patroni");
    }
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|folder| folder.join(program).is_file())
    })
}

/// Whether python3 can make the venv Patroni is installed in (`scripts/patroni`).
fn python_makes_venvs() -> bool {
    Command::new("python3")
        .args(["-c", "import ensurepip, venv"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}
