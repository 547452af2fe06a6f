//! Empty: see Cargo.toml. The crate exists for its dependencies' features.
