//! What a rule beyond a record's schema is ([`BeyondSchema`]): a leaf, so
//! each record's module can list its rules and `beyond_schema.rs` can
//! gather them without the two importing each other.

/// One rule beyond the schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BeyondSchema {
    /// The record and field, as the contract names them (`Order.shipDate`).
    pub field: &'static str,
    /// What the rule says.
    pub rule: &'static str,
    pub conformance: Conformance,
}

/// What lets the conformance run send requests the rule concerns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conformance {
    /// A function of `tools/gates/src/gates/conformance_hooks.py`, registered with
    /// `@schemathesis.hook`, that makes generated requests keep the rule.
    Hook(&'static str),
    /// The service refuses a schema-valid request that breaks the rule with
    /// this status and error code (the state, not the data, is at fault),
    /// and `conformance.toml` accepts the status for such a request.
    Refused { status: u16, code: &'static str },
}
