//! The ratio table of docs/DIGESTS.md, from (fixture, raw tokens, digest tokens) rows.

/// Outputs at least this big count for the median: small ones need no digest.
pub const LARGE_OUTPUT_TOKENS: u32 = 2_000;

/// A markdown table, one row per fixture, and the median ratio of the rows
/// whose raw output has at least `LARGE_OUTPUT_TOKENS` tokens.
pub fn ratio_table(rows: &[(String, u32, u32)]) -> String {
    let mut out =
        String::from("| fixture | raw tokens | digest tokens | ratio |\n|---|---:|---:|---:|\n");
    for (name, raw, digest) in rows {
        out.push_str(&format!(
            "| {name} | {raw} | {digest} | {} |\n",
            percent(*raw, *digest)
        ));
    }
    let mut large: Vec<f64> = rows
        .iter()
        .filter(|(_, raw, _)| *raw >= LARGE_OUTPUT_TOKENS)
        .map(|(_, raw, digest)| *digest as f64 / *raw as f64)
        .collect();
    large.sort_by(f64::total_cmp);
    let median = match large.len() {
        0 => None,
        n if n % 2 == 1 => Some(large[n / 2]),
        n => Some((large[n / 2 - 1] + large[n / 2]) / 2.0),
    };
    match median {
        Some(m) => out.push_str(&format!(
            "\nMedian ratio on the {} outputs of at least {LARGE_OUTPUT_TOKENS} tokens: {:.1}%\n",
            large.len(),
            m * 100.0
        )),
        None => out.push_str(&format!(
            "\nNo output of at least {LARGE_OUTPUT_TOKENS} tokens.\n"
        )),
    }
    out
}

fn percent(raw: u32, digest: u32) -> String {
    if raw == 0 {
        "-".to_string()
    } else {
        format!("{:.1}%", digest as f64 * 100.0 / raw as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_counts_only_large_outputs() {
        let rows = vec![
            ("a".to_string(), 4000, 400),
            ("b".to_string(), 10000, 200),
            ("c".to_string(), 100, 100),
        ];
        let table = ratio_table(&rows);
        assert!(table.contains("| a | 4000 | 400 | 10.0% |"));
        assert!(table.contains("on the 2 outputs of at least 2000 tokens: 6.0%"));
    }
}
