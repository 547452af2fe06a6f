//! `petstore-circles`: fails when two files of a crate import each other,
//! directly or around a longer ring, or when an import runs up the layers the
//! crate declares (`make check-circles`, part of `make test`).
//!
//! A circle is two or more files of one crate that each reach the others
//! through what they refer to: `use` items and paths (`super::route::Route`,
//! `crate::http::access::ACCESS`) in code, tests and macro calls alike. A
//! path refers to the file its item is written in, through re-exports:
//! `super::Limits`, which `ratelimit/mod.rs` re-exports, is `window.rs`'s.
//! Declaring a module (`mod plan;`) is not a reference, a module's inline
//! modules (`mod tests`) are its file, and a module and its descendants are
//! one unit (a child sees its ancestors' private items; a parent re-exports
//! its children), so references between a file and one it contains are not
//! counted: the circles are between siblings and cousins.
//!
//! A crate whose root's documentation has a `# Layers` table is held to it
//! as well: a file may refer only to the modules on lines below its own
//! module's (see `layers.rs`); each reference up or across fails.
//!
//! The crates are every target of the workspaces whose manifests are given
//! (the workspace's `Cargo.toml` when none is), as `cargo metadata` lists
//! them. Exit status 1 lists each circle with the references that make it.

mod circles;
mod layers;
mod references;
mod scope;
mod tree;

use layers::{Layers, UpImport};
use references::Reference;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tree::Crate;

fn main() -> ExitCode {
    let mut manifests: Vec<String> = std::env::args().skip(1).collect();
    if manifests.is_empty() {
        manifests.push("Cargo.toml".into());
    }
    match check(&manifests) {
        Ok(0) => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("petstore-circles: {e}");
            ExitCode::from(2)
        }
    }
}

/// Prints each crate's circles; how many there are.
fn check(manifests: &[String]) -> Result<usize, String> {
    let base = std::env::current_dir().map_err(|e| e.to_string())?;
    let mut roots = BTreeSet::new();
    for manifest in manifests {
        roots.extend(crate_roots(manifest)?);
    }
    let (mut found, mut files, mut layered) = (0, BTreeSet::new(), 0);
    for root in &roots {
        let krate = Crate::load(root)?;
        files.extend(krate.files.iter().map(|f| f.path.clone()));
        let references = references::references(&krate);
        for circle in circles_of(&references) {
            found += 1;
            print_circle(&circle, &references, &base);
        }
        if let Some(layers) = Layers::of(&krate)? {
            layered += 1;
            let up = layers.up_imports(&krate, &references);
            found += print_up_imports(&up, &base);
        }
    }
    if found == 0 {
        println!(
            "petstore-circles: no module circle in {} files of {} crates, \
             and imports run only down the layers of the {layered} that declare them",
            files.len(),
            roots.len()
        );
    }
    Ok(found)
}

fn circles_of(references: &[Reference]) -> Vec<Vec<PathBuf>> {
    let edges: Vec<(PathBuf, PathBuf)> = references
        .iter()
        .filter(|r| !r.nested)
        .map(|r| (r.from.clone(), r.to.clone()))
        .collect();
    circles::circles(&edges)
}

fn shown(path: &Path, base: &Path) -> String {
    path.strip_prefix(base)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Prints each up-import once (a line's first path to a file, as for
/// `use a::{self, B}`); how many there are.
fn print_up_imports(up: &[UpImport], base: &Path) -> usize {
    let mut listed = BTreeSet::new();
    for import in up {
        let reference = import.reference;
        if listed.insert((&reference.from, &reference.to, reference.line)) {
            let (from, to) = (import.from_line, import.to_line);
            let direction = if from == to { "beside it on" } else { "up at" };
            println!(
                "import up the layers: {}:{} -> {} ({}): `{}` (line {from} of the layers) \
                 uses `{}`, {direction} line {to}",
                shown(&reference.from, base),
                reference.line,
                shown(&reference.to, base),
                reference.path,
                import.from,
                import.to,
            );
        }
    }
    listed.len()
}

fn print_circle(circle: &[PathBuf], references: &[Reference], base: &Path) {
    let shown = |path: &Path| shown(path, base);
    let names: Vec<String> = circle.iter().map(|p| shown(p)).collect();
    println!("module circle: {}", names.join(", "));
    let mut listed = BTreeSet::new();
    for reference in references {
        let inside =
            !reference.nested && circle.contains(&reference.from) && circle.contains(&reference.to);
        if inside && listed.insert((&reference.from, &reference.to, &reference.path)) {
            println!(
                "  {}:{} -> {} ({})",
                shown(&reference.from),
                reference.line,
                shown(&reference.to),
                reference.path
            );
        }
    }
}

/// The root file of every target (library, binaries, tests, build script)
/// of the workspace of `manifest`.
fn crate_roots(manifest: &str) -> Result<Vec<PathBuf>, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = std::process::Command::new(cargo)
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .args(["--manifest-path", manifest])
        .output()
        .map_err(|e| format!("cargo metadata: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo metadata --manifest-path {manifest}: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).map_err(|e| format!("cargo metadata: {e}"))?;
    let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
    Ok(packages
        .iter()
        .flat_map(|package| package["targets"].as_array().cloned().unwrap_or_default())
        .filter_map(|target| target["src_path"].as_str().map(PathBuf::from))
        .collect())
}
