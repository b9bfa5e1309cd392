//! `ctxproxy backup` and `ctxproxy doctor`: the store's maintenance commands.

use std::path::Path;

use anyhow::Context;
use ctxproxy_store::maintenance;

pub fn backup(store: &Path, dest: &Path) -> anyhow::Result<()> {
    eprintln!("backing up {} to {} ...", store.display(), dest.display());
    let r = maintenance::backup(store, dest)
        .with_context(|| format!("backing up {}", store.display()))?;
    println!(
        "backed up {} to {}: {} pages, {} blob files (each verified against its hash)",
        store.display(),
        dest.display(),
        r.pages,
        r.blob_files
    );
    Ok(())
}

/// Prints what is damaged; exits 1 when anything is (after salvaging, when
/// asked).
pub fn doctor(store: &Path, salvage: Option<&Path>) -> anyhow::Result<()> {
    eprintln!(
        "checking {} (integrity check, every blob, prompt and session) ...",
        store.display()
    );
    let d =
        maintenance::diagnose(store).with_context(|| format!("checking {}", store.display()))?;
    println!(
        "{}: {} sessions, {} blobs, {} prompt records checked",
        store.display(),
        d.sessions,
        d.blobs_checked,
        d.prompts_checked
    );
    for line in &d.integrity {
        println!("integrity: {line}");
    }
    for (blob, why, shown_by) in &d.bad_blobs {
        println!("blob {blob}: {why}; shown by {}", shown_by.join(", "));
    }
    for (session, prompt, why) in &d.bad_prompts {
        println!("prompt {session} {prompt}: {why}");
    }
    for (session, why) in &d.bad_sessions {
        println!("session {session}: {why}");
    }
    if d.is_healthy() {
        println!("healthy");
    } else {
        println!("damaged");
    }
    if let Some(dest) = salvage {
        let s = maintenance::salvage(store, dest)
            .with_context(|| format!("salvaging {} into {}", store.display(), dest.display()))?;
        println!(
            "salvaged {} of {} sessions into {}",
            s.copied.len(),
            s.copied.len() + s.lost.len(),
            dest.display()
        );
        for (session, why) in &s.lost {
            println!("left behind session {session}: {why}");
        }
        for (session, what) in &s.prompts_left {
            println!("left behind from {session}: {what}");
        }
    }
    if !d.is_healthy() {
        std::process::exit(1);
    }
    Ok(())
}
