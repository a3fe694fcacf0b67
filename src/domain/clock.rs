//! Time as ringmaster reads it. Every interval and timeout asks a `Clock`: the system clock in
//! `serve` and `demo`, a manual clock in tests and scripts, so that "advance 61 s" makes the
//! service-down logic run at once.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, Duration, Utc};

/// Tells the time.
pub trait Clock: Send + Sync + fmt::Debug {
    /// Returns the current time.
    fn now(&self) -> DateTime<Utc>;
}

/// A clock shared by every actor of a process.
pub type SharedClock = Arc<dyn Clock>;

/// The system clock, corrected by an offset (the skew measured against the database's
/// clock, so that processes on machines whose clocks disagree still agree on liveness).
#[derive(Debug, Default)]
pub struct SystemClock {
    offset: Mutex<Duration>,
}

impl SystemClock {
    /// Returns a system clock with no correction.
    pub fn new() -> SystemClock {
        SystemClock::default()
    }

    /// Sets the correction added to the system time.
    pub fn set_offset(&self, offset: Duration) {
        *self.offset.lock().unwrap_or_else(PoisonError::into_inner) = offset;
    }
}

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now() + *self.offset.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A clock that moves only when told to.
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<DateTime<Utc>>,
}

impl ManualClock {
    /// Returns a manual clock showing `start`.
    pub fn new(start: DateTime<Utc>) -> ManualClock {
        ManualClock {
            now: Mutex::new(start),
        }
    }

    /// Moves the clock forward by `step`.
    pub fn advance(&self, step: Duration) {
        let mut now = self.now.lock().unwrap_or_else(PoisonError::into_inner);
        *now += step;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_advanced() {
        let start = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let clock = ManualClock::new(start);
        assert_eq!(clock.now(), start);
        clock.advance(Duration::seconds(61));
        assert_eq!(clock.now(), start + Duration::seconds(61));
    }

    #[test]
    fn the_system_clock_applies_its_offset() {
        let clock = SystemClock::new();
        clock.set_offset(Duration::hours(1));
        let ahead = clock.now() - Utc::now();
        assert!(ahead > Duration::minutes(59) && ahead <= Duration::hours(1));
    }
}
