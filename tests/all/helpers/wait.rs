//! Waiting for a condition: polled, with a deadline that fails the test naming what it
//! waited for.

use std::time::{Duration, Instant};

/// Polls `check` every 100 ms until it returns `Some`, or panics after `timeout`.
pub fn eventually<T>(timeout: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check() {
            return value;
        }
        if Instant::now() > deadline {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Polls `check` every 100 ms on the async runtime until it returns `Some`, or panics after
/// `timeout`, naming `what`.
pub async fn eventually_async<T, F, Fut>(timeout: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        if Instant::now() > deadline {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        actix_rt::time::sleep(Duration::from_millis(100)).await;
    }
}
