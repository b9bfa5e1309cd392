//! Percentiles of measured durations, for the benches and `replay --via-proxy`.

use std::time::Duration;

/// The `p` quantile (0 to 1) of durations sorted in ascending order, by nearest rank.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}
