//! Percentiles of measured values, for the benches and `replay --via-proxy`.

/// The `p` quantile (0 to 1) of values sorted in ascending order, by nearest rank.
pub fn percentile<T: Copy>(sorted: &[T], p: f64) -> T {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}
