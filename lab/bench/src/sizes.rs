//! What each function deploys: the arm64 zip `cargo lambda build` made, and
//! the binaries inside and beside it.

use crate::results::FunctionSizes;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::UNIX_EPOCH;

pub const FUNCTIONS: [&str; 4] = ["pets", "store", "events", "webhooks"];

pub fn of_functions(target: &Path) -> BTreeMap<String, FunctionSizes> {
    FUNCTIONS
        .iter()
        .map(|function| (function.to_string(), of_function(target, function)))
        .collect()
}

fn of_function(target: &Path, function: &str) -> FunctionSizes {
    let zip = target.join("lambda").join(function).join("bootstrap.zip");
    let arm64 = target
        .join("aarch64-unknown-linux-gnu/release")
        .join(function);
    let x86_64 = target.join("release").join(function);
    let bytes = |path: &Path| std::fs::metadata(path).ok().map(|m| m.len());
    let modified_unix = |path: &Path| {
        let modified = std::fs::metadata(path).ok()?.modified().ok()?;
        Some(modified.duration_since(UNIX_EPOCH).ok()?.as_secs())
    };
    FunctionSizes {
        arm64_zip_bytes: bytes(&zip),
        arm64_zip_built_unix: modified_unix(&zip),
        arm64_binary_bytes: bytes(&arm64),
        x86_64_binary_bytes: bytes(&x86_64),
    }
}
