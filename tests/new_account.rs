//! `template.yaml` with every parameter at its default deploys on a new AWS
//! account: nothing in it needs a quota raised first.
//!
//! Lambda keeps part of an account's concurrency unreserved: 100, or 10 on
//! an account whose whole quota is 10, as new accounts often have. A stack
//! whose reservations leave less rolls back ("Specified
//! ReservedConcurrentExecutions for function decreases account's
//! UnreservedConcurrentExecution below its minimum value of [10]"). So at
//! the defaults the functions reserve nothing, and reserving is the deployer's
//! choice (docs/deploy.md, "Before the first deploy").

use crate::deploy::{read_yaml, tagged};
use serde_yaml_ng::Value;

/// The smallest Lambda concurrency quota an account is given, and the part
/// of it Lambda keeps unreserved there.
const NEW_ACCOUNT_CONCURRENCY: u64 = 10;
const NEW_ACCOUNT_MIN_UNRESERVED: u64 = 10;

/// API Gateway's default throttle per account and region (requests a
/// second, burst): a stage may ask for more, but gets no more without a raise.
const ACCOUNT_API_RATE: u64 = 10_000;
const ACCOUNT_API_BURST: u64 = 5_000;

/// The most memory a function gets on an account whose quota is not raised.
const NEW_ACCOUNT_MAX_MEMORY_MB: u64 = 3_008;

/// A template value at the parameters' defaults: a plain value, `None` for
/// `!Ref AWS::NoValue`.
#[derive(Debug, Clone, PartialEq)]
enum Resolved {
    Number(u64),
    Text(String),
    Bool(bool),
    NoValue,
}

/// What `value` is with every parameter at its default. Knows the
/// intrinsics that reservations and conditions are written with (`!Ref`,
/// `!If`, `!Equals`, `!Not`, `!And`, `!Or`, `!Condition`, `!FindInMap`); any other panics,
/// so a new way of writing them is looked at rather than passed.
#[track_caller]
fn at_defaults(template: &Value, value: &Value) -> Resolved {
    let conditions = &template["Conditions"];
    let branches = |tag: &str| -> Option<Vec<Value>> {
        tagged(value, tag).and_then(Value::as_sequence).cloned()
    };
    if let Some(name) = tagged(value, "Ref").and_then(Value::as_str) {
        if name == "AWS::NoValue" {
            return Resolved::NoValue;
        }
        let parameter = &template["Parameters"][name];
        let default = &parameter["Default"];
        return match parameter["Type"].as_str() {
            Some("Number") => Resolved::Number(
                default
                    .as_u64()
                    .or_else(|| default.as_str()?.parse().ok())
                    .unwrap_or_else(|| panic!("{name} has a numeric default: {default:?}")),
            ),
            _ => Resolved::Text(default.as_str().unwrap_or_default().to_string()),
        };
    }
    if let Some(name) = tagged(value, "Condition").and_then(Value::as_str) {
        return at_defaults(template, &conditions[name]);
    }
    if let Some(args) = branches("FindInMap") {
        // `!FindInMap [Map, key, attribute]`: the key at the defaults, as
        // text (CloudFormation reads a mapping's keys as strings).
        let key = match at_defaults(template, &args[1]) {
            Resolved::Number(n) => n.to_string(),
            Resolved::Text(t) => t,
            other => panic!("!FindInMap key {other:?}"),
        };
        let map = args[0].as_str().expect("!FindInMap names its map");
        let attribute = args[2].as_str().expect("!FindInMap names its attribute");
        return at_defaults(
            template,
            &template["Mappings"][map][key.as_str()][attribute],
        );
    }
    if let Some(args) = branches("If") {
        let condition = args[0].as_str().expect("!If names its condition");
        let chosen = match at_defaults(template, &conditions[condition]) {
            Resolved::Bool(true) => &args[1],
            Resolved::Bool(false) => &args[2],
            other => panic!("condition {condition} is not a boolean: {other:?}"),
        };
        return at_defaults(template, chosen);
    }
    if let Some(args) = branches("Equals") {
        let text = |v: Resolved| match v {
            Resolved::Number(n) => n.to_string(),
            Resolved::Text(t) => t,
            other => panic!("!Equals of {other:?}"),
        };
        let (a, b) = (
            at_defaults(template, &args[0]),
            at_defaults(template, &args[1]),
        );
        // CloudFormation compares parameter values as strings: `0` equals "0".
        return Resolved::Bool(text(a) == text(b));
    }
    if let Some(args) = branches("Not") {
        return match at_defaults(template, &args[0]) {
            Resolved::Bool(b) => Resolved::Bool(!b),
            other => panic!("!Not of {other:?}"),
        };
    }
    for (tag, all) in [("And", true), ("Or", false)] {
        if let Some(args) = branches(tag) {
            let mut values = args
                .iter()
                .map(|a| at_defaults(template, a) == Resolved::Bool(true));
            return Resolved::Bool(if all {
                values.all(|b| b)
            } else {
                values.any(|b| b)
            });
        }
    }
    match value {
        Value::Number(n) => Resolved::Number(n.as_u64().expect("a whole number")),
        Value::String(s) => Resolved::Text(s.clone()),
        Value::Bool(b) => Resolved::Bool(*b),
        other => panic!("no value at the defaults for {other:?}"),
    }
}

/// Every function of the template (SAM's or plain Lambda's), by logical name.
fn functions(template: &Value) -> Vec<(&str, &Value)> {
    template["Resources"]
        .as_mapping()
        .expect("template.yaml has Resources")
        .iter()
        .filter(|(_, r)| {
            matches!(
                r["Type"].as_str(),
                Some("AWS::Serverless::Function" | "AWS::Lambda::Function")
            )
        })
        .map(|(name, r)| (name.as_str().unwrap_or_default(), r))
        .collect()
}

/// A property of a function, or else the Globals' one (SAM's rule).
fn property<'a>(template: &'a Value, function: &'a Value, key: &str) -> &'a Value {
    match &function["Properties"][key] {
        Value::Null => &template["Globals"]["Function"][key],
        own => own,
    }
}

#[test]
fn at_the_defaults_no_function_reserves_concurrency_so_a_quota_of_10_deploys() {
    let template = read_yaml("template.yaml");
    let functions = functions(&template);
    assert!(
        functions.len() >= 2,
        "the pets and store functions at least"
    );

    let mut reserved: Vec<(&str, u64)> = Vec::new();
    for (name, function) in &functions {
        let value = property(&template, function, "ReservedConcurrentExecutions");
        if value.is_null() {
            continue;
        }
        match at_defaults(&template, value) {
            Resolved::NoValue => {}
            // Reserving 0 is no opt-out: it stops the function altogether.
            Resolved::Number(0) => panic!("{name} reserves 0 at the defaults: it would never run"),
            Resolved::Number(n) => reserved.push((name, n)),
            other => panic!("{name}'s ReservedConcurrentExecutions at the defaults: {other:?}"),
        }
    }
    let sum: u64 = reserved.iter().map(|(_, n)| n).sum();
    assert!(
        NEW_ACCOUNT_CONCURRENCY.saturating_sub(sum) >= NEW_ACCOUNT_MIN_UNRESERVED,
        "at the defaults the stack reserves {sum} ({reserved:?}), leaving less than \
         {NEW_ACCOUNT_MIN_UNRESERVED} of a {NEW_ACCOUNT_CONCURRENCY} quota unreserved: \
         CloudFormation would roll back"
    );
}

#[test]
fn every_reservation_is_an_opt_in_parameter() {
    // Given the reservations are opt-in, each is still a parameter whose
    // non-zero value reserves exactly that much.
    let template = read_yaml("template.yaml");
    for (name, function) in functions(&template) {
        // The pre-traffic hook runs once per release: no request or stream
        // record waits on it, so it has no reservation to offer.
        if name == "PreTrafficFunction" {
            continue;
        }
        let reserved = &function["Properties"]["ReservedConcurrentExecutions"];
        let branches = tagged(reserved, "If")
            .and_then(Value::as_sequence)
            .unwrap_or_else(|| {
                panic!("{name}: `!If [cond, !Ref P, !Ref AWS::NoValue]`, got {reserved:?}")
            });
        let parameter = tagged(&branches[1], "Ref")
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("{name} reserves a parameter's value"));
        assert_eq!(
            tagged(&branches[2], "Ref").and_then(Value::as_str),
            Some("AWS::NoValue"),
            "{name}: 0 must mean no reservation, not a reservation of 0"
        );
        let spec = &template["Parameters"][parameter];
        assert_eq!(spec["Type"].as_str(), Some("Number"), "{parameter}");
        assert_eq!(
            spec["MinValue"].as_u64(),
            Some(0),
            "{parameter}: 0 turns it off"
        );
        let description = spec["Description"].as_str().unwrap_or_default();
        assert!(
            description.contains("get-account-settings")
                || description.contains("as for PetsReservedConcurrency"),
            "{parameter}'s description says when to turn it on: {description}"
        );
    }
}

#[test]
fn the_stage_throttle_and_memory_fit_a_new_accounts_quotas() {
    let template = read_yaml("template.yaml");
    let settings = &template["Resources"]["HttpApi"]["Properties"]["DefaultRouteSettings"];
    let number = |value: &Value, what: &str| match at_defaults(&template, value) {
        Resolved::Number(n) => n,
        other => panic!("{what} at the defaults: {other:?}"),
    };
    let rate = number(&settings["ThrottlingRateLimit"], "the stage rate");
    let burst = number(&settings["ThrottlingBurstLimit"], "the stage burst");
    assert!(
        rate <= ACCOUNT_API_RATE && burst <= ACCOUNT_API_BURST,
        "the stage asks {rate}/s, burst {burst}: more than an account's {ACCOUNT_API_RATE}/s, \
         burst {ACCOUNT_API_BURST}, without a raise"
    );

    for (name, function) in functions(&template) {
        let memory = number(property(&template, function, "MemorySize"), "MemorySize");
        assert!(
            memory <= NEW_ACCOUNT_MAX_MEMORY_MB,
            "{name}: {memory} MB, a new account allows {NEW_ACCOUNT_MAX_MEMORY_MB}"
        );
    }
    // Every memory size the parameter offers, not only its default.
    let offered = template["Parameters"]["FunctionMemoryMb"]["AllowedValues"]
        .as_sequence()
        .expect("FunctionMemoryMb lists its sizes");
    for size in offered {
        let size = size.as_u64().expect("a size in MB");
        assert!(
            size <= NEW_ACCOUNT_MAX_MEMORY_MB,
            "FunctionMemoryMb offers {size} MB"
        );
    }
}
