//! Turns the repository's `openapi.yaml` into the JSON served at `GET /openapi.json`.

use std::path::PathBuf;

fn main() {
    let manifest =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let source = manifest.join("..").join("openapi.yaml");
    println!("cargo:rerun-if-changed={}", source.display());
    let yaml = std::fs::read_to_string(&source).expect("openapi.yaml is at the repository root");
    let document: serde_json::Value =
        serde_yaml_ng::from_str(&yaml).expect("openapi.yaml is valid YAML");
    let json = serde_json::to_string(&document).expect("a YAML document serializes as JSON");
    let out =
        PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("openapi.json");
    std::fs::write(out, json).expect("OUT_DIR is writable");
}
