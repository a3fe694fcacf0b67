//! A log file rotated by size: when a line would take FILE past its size, FILE becomes FILE.1,
//! FILE.1 becomes FILE.2, … and the oldest beyond the count kept is overwritten, so the log
//! never takes more than about (count + 1) × size.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex, PoisonError};

/// A size in bytes written as `10MiB`, `512KiB`, `1GB` or `4096`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteSize(pub u64);

impl FromStr for ByteSize {
    type Err = String;

    fn from_str(text: &str) -> Result<ByteSize, String> {
        let text = text.trim();
        let split = text
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let number: u64 = number
            .parse()
            .map_err(|_| format!("{text:?} is not a size (write 10MiB, 512KiB, 4096)"))?;
        let factor: u64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "kb" => 1_000,
            "kib" => 1 << 10,
            "m" | "mb" => 1_000_000,
            "mib" => 1 << 20,
            "g" | "gb" => 1_000_000_000,
            "gib" => 1 << 30,
            other => {
                return Err(format!(
                    "unknown size unit {other:?} (B, KiB, MiB, GiB, kB, MB, GB)"
                ));
            }
        };
        let bytes = number
            .checked_mul(factor)
            .ok_or_else(|| format!("{text:?} is too large"))?;
        if bytes < 4096 {
            return Err(format!("{text:?} is below the smallest size, 4096 bytes"));
        }
        Ok(ByteSize(bytes))
    }
}

/// A handle on the rotated file; clones write to the same file.
#[derive(Debug, Clone)]
pub struct RotatingFile {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug)]
struct Inner {
    path: PathBuf,
    max_size: u64,
    keep: u32,
    file: File,
    size: u64,
}

impl RotatingFile {
    /// Opens (appends to) `path`, rotated past `max_size` bytes keeping `keep` old files.
    pub fn open(path: &Path, max_size: u64, keep: u32) -> io::Result<RotatingFile> {
        let file = append(path)?;
        let size = file.metadata()?.len();
        Ok(RotatingFile {
            inner: Arc::new(Mutex::new(Inner {
                path: path.to_owned(),
                max_size,
                keep: keep.max(1),
                file,
                size,
            })),
        })
    }
}

fn append(path: &Path) -> io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

/// FILE.n
fn numbered(path: &Path, n: u32) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{n}"));
    PathBuf::from(name)
}

impl Inner {
    fn rotate(&mut self) -> io::Result<()> {
        for n in (1..self.keep).rev() {
            match std::fs::rename(numbered(&self.path, n), numbered(&self.path, n + 1)) {
                Err(error) if error.kind() != io::ErrorKind::NotFound => return Err(error),
                _ => {}
            }
        }
        std::fs::rename(&self.path, numbered(&self.path, 1))?;
        self.file = append(&self.path)?;
        self.size = 0;
        Ok(())
    }
}

impl Write for RotatingFile {
    /// Writes the whole of `buf` (one log line) to one file.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if inner.size > 0 && inner.size + buf.len() as u64 > inner.max_size {
            // A file that cannot be rotated (its folder read-only, say) is written on.
            let _ = inner.rotate();
        }
        inner.file.write_all(buf)?;
        inner.size += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_read_with_their_units_and_tiny_ones_refused() {
        assert_eq!("10MiB".parse::<ByteSize>(), Ok(ByteSize(10 << 20)));
        assert_eq!("512 KiB".parse::<ByteSize>(), Ok(ByteSize(512 << 10)));
        assert_eq!("1GB".parse::<ByteSize>(), Ok(ByteSize(1_000_000_000)));
        assert_eq!("4096".parse::<ByteSize>(), Ok(ByteSize(4096)));
        assert!("10".parse::<ByteSize>().is_err());
        assert!("ten".parse::<ByteSize>().is_err());
        assert!("10 parsecs".parse::<ByteSize>().is_err());
        assert!("99999999999999GiB".parse::<ByteSize>().is_err());
    }

    #[test]
    fn the_file_is_rotated_and_only_the_kept_number_of_old_files_stays() {
        let dir = std::env::temp_dir().join(format!("ringmaster-rotate-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ringmaster.log");
        let mut file = RotatingFile::open(&path, 4096, 2).unwrap();
        let line = [b'x'; 1000];
        for _ in 0..50 {
            file.write_all(&line).unwrap();
        }
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["ringmaster.log", "ringmaster.log.1", "ringmaster.log.2"]
        );
        for name in names {
            let size = std::fs::metadata(dir.join(name)).unwrap().len();
            assert!(size <= 4096, "a file grew past its size: {size}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
