//! `ctxproxy bench --over-stdio` at a tiny size, through the built binary:
//! every run has its row, the project case's too. (The figures are the
//! bench's to show; nothing here times anything.)

use std::process::Command;

#[test]
fn every_run_of_the_table_has_its_row() {
    let out = Command::new(env!("CARGO_BIN_EXE_ctxproxy"))
        .args(["bench", "--over-stdio", "--sizes", "3", "--assembles", "2"])
        .args(["--project-sessions", "2", "--project-exchanges", "5"])
        .output()
        .expect("ctxproxy bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<(&str, &str)> = stdout
        .lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .filter_map(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            let question = cells.iter().find(|c| ["fixed", "new"].contains(c))?;
            Some((cells[0], *question))
        })
        .collect();
    assert_eq!(
        rows,
        [("3", "fixed"), ("3", "new"), ("2x5", "new")],
        "{stdout}"
    );
}
