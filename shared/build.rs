//! Turns the repository's `openapi.yaml` into the JSON served at `GET /openapi.json`.
//!
//! The document writes what every answer repeats once, as YAML anchors and
//! merge keys (`<<: *answer-headers`); they are resolved here, so the JSON
//! holds every operation whole, as a client reads it.

use std::path::PathBuf;

fn main() {
    let manifest =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let source = manifest.join("..").join("openapi.yaml");
    println!("cargo:rerun-if-changed={}", source.display());
    let yaml = std::fs::read_to_string(&source).expect("openapi.yaml is at the repository root");
    let mut document: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&yaml).expect("openapi.yaml is valid YAML");
    document
        .apply_merge()
        .expect("openapi.yaml's merge keys (<<) merge mappings");
    let document: serde_json::Value =
        serde_yaml_ng::from_value(document).expect("openapi.yaml is a JSON document");
    let json = serde_json::to_string(&document).expect("a YAML document serializes as JSON");
    let out =
        PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("openapi.json");
    std::fs::write(out, json).expect("OUT_DIR is writable");
}
