//! Fingerprints `migrations/` (FNV-1a over every file's path and bytes, in sorted order), so
//! that throwaway-database templates built from other migrations are never reused.

use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=migrations");
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
