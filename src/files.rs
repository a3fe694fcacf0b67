//! Files read whole with a bound: a regular file of at most a given size, of which no more is
//! read. A device (`/dev/zero`), a folder or a huge file named where a small file belongs is
//! refused at once instead of hanging a start or filling its memory.

use std::io::Read as _;
use std::path::Path;

/// Why a file was not read; each caller words it for what the file is.
#[derive(Debug)]
pub enum Refusal {
    /// It could not be opened or read.
    Io(std::io::Error),
    /// It is not a regular file.
    NotRegular,
    /// It is larger than the bound.
    TooLarge,
}

/// The bytes of the regular file at `path`, of at most `max` bytes.
pub fn read_bounded(path: &Path, max: u64) -> Result<Vec<u8>, Refusal> {
    let file = std::fs::File::open(path).map_err(Refusal::Io)?;
    if !file.metadata().map_err(Refusal::Io)?.is_file() {
        return Err(Refusal::NotRegular);
    }
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(Refusal::Io)?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > max {
        return Err(Refusal::TooLarge);
    }
    Ok(bytes)
}
