//! A logger that keeps every line at info level and above for scripts' `expect: log`, and
//! passes records on to env_logger as usual.

use std::sync::{Mutex, OnceLock, PoisonError};

use log::{LevelFilter, Log, Metadata, Record};

struct CaptureLogger {
    inner: env_logger::Logger,
    lines: Mutex<Vec<String>>,
}

static CAPTURE: OnceLock<&'static CaptureLogger> = OnceLock::new();

impl Log for CaptureLogger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= log::Level::Info || self.inner.enabled(metadata)
    }

    fn log(&self, record: &Record<'_>) {
        if record.level() <= log::Level::Info {
            self.lines
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(format!(
                    "{} {}: {}",
                    record.level(),
                    record.target(),
                    record.args()
                ));
        }
        if self.inner.enabled(record.metadata()) {
            self.inner.log(record);
        }
    }

    fn flush(&self) {
        self.inner.flush();
    }
}

/// Installs the capturing logger as the process's logger (env_logger's filter from RUST_LOG,
/// default warn, decides what reaches stderr). `false` if a logger was already installed.
pub fn install() -> bool {
    let inner =
        env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).build();
    let inner_level = inner.filter();
    let logger: &'static CaptureLogger = Box::leak(Box::new(CaptureLogger {
        inner,
        lines: Mutex::new(Vec::new()),
    }));
    if log::set_logger(logger).is_err() {
        return false;
    }
    log::set_max_level(inner_level.max(LevelFilter::Info));
    CAPTURE.get_or_init(|| logger);
    true
}

/// Returns how many lines were captured so far, or `None` without the capturing logger.
pub fn mark() -> Option<usize> {
    CAPTURE.get().map(|logger| {
        logger
            .lines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    })
}

/// Returns the lines captured since `mark`.
pub fn lines_since(mark: usize) -> Vec<String> {
    CAPTURE
        .get()
        .map(|logger| {
            let lines = logger.lines.lock().unwrap_or_else(PoisonError::into_inner);
            lines
                .get(mark..)
                .map(<[String]>::to_vec)
                .unwrap_or_default()
        })
        .unwrap_or_default()
}
