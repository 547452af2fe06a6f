//! The deployed stack's outer shield (contract section 4), held in
//! `template.yaml`: the HTTP API stage throttles (rate and burst), each set
//! by the capacity knob (`OrderRate`, through the `Capacity` mapping); and no serving function's policy lets it write an
//! API key item, while the items a request does write (idempotency records,
//! pets, orders, ...) stay writable. The pre-traffic hook puts one key of
//! its own per run, and only that: a customer's, short-lived, in no list. Each function's reserved concurrency, the
//! shield's opt-in part, is held in new_account.rs.

use crate::deploy::{read_yaml, tagged};
use crate::helpers::TestApp;
use http::{Method, Request};
use serde_json::json;
use serde_yaml_ng::Value;

/// The actions that write an item of a table.
const WRITES: [&str; 4] = [
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:BatchWriteItem",
];

/// The values `value` takes: `!FindInMap [Capacity, !Ref OrderRate, X]`,
/// the capacity knob's row for each rate the parameter allows (the
/// `none` row, a draining rate's, sets no throttle), the default's first.
#[track_caller]
pub fn capacity_values(template: &Value, value: &Value, what: &str) -> Vec<(String, u64)> {
    let args = tagged(value, "FindInMap")
        .and_then(Value::as_sequence)
        .unwrap_or_else(|| panic!("{what} follows the capacity knob (!FindInMap): {value:?}"));
    assert_eq!(args[0].as_str(), Some("Capacity"), "{what}");
    let knob = tagged(&args[1], "Ref")
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{what} is keyed by a parameter: {value:?}"));
    let attribute = args[2].as_str().unwrap_or_default();
    let parameter = &template["Parameters"][knob];
    let text = |v: &Value| {
        v.as_str()
            .map(str::to_string)
            .or_else(|| v.as_u64().map(|n| n.to_string()))
            .unwrap_or_default()
    };
    let default = text(&parameter["Default"]);
    let mut allowed: Vec<String> = parameter["AllowedValues"]
        .as_sequence()
        .unwrap_or_else(|| panic!("{knob} lists the rates it allows"))
        .iter()
        .map(text)
        .collect();
    allowed.sort_by_key(|rate| rate != &default);
    assert_eq!(
        allowed.first(),
        Some(&default),
        "{knob}'s default is allowed"
    );
    allowed
        .into_iter()
        .map(|rate| {
            let got = &template["Mappings"]["Capacity"][rate.as_str()][attribute];
            let n = got
                .as_u64()
                .unwrap_or_else(|| panic!("{what} at {knob}={rate} is a number: {got:?}"));
            (rate, n)
        })
        .collect()
}

/// Every `AWS::Serverless::Function` of the template, by logical name.
fn functions(template: &Value) -> Vec<(String, &Value)> {
    let resources = template["Resources"].as_mapping().expect("Resources");
    resources
        .iter()
        .filter(|(_, r)| r["Type"].as_str() == Some("AWS::Serverless::Function"))
        .map(|(name, r)| (name.as_str().unwrap_or_default().to_string(), r))
        .collect()
}

/// Every inline policy statement of `function`.
fn statements(function: &Value) -> Vec<&Value> {
    function["Properties"]["Policies"]
        .as_sequence()
        .into_iter()
        .flatten()
        .filter_map(|policy| policy["Statement"].as_sequence())
        .flatten()
        .collect()
}

/// A statement's actions, one or a list.
fn actions(statement: &Value) -> Vec<&str> {
    match &statement["Action"] {
        Value::String(action) => vec![action.as_str()],
        actions => actions
            .as_sequence()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect(),
    }
}

/// Whether a statement's resource is the data table itself (`!GetAtt DataTable.Arn`).
fn on_data_table(statement: &Value) -> bool {
    let resource = &statement["Resource"];
    let one = |r: &Value| tagged(r, "GetAtt").and_then(Value::as_str) == Some("DataTable.Arn");
    one(resource) || resource.as_sequence().is_some_and(|rs| rs.iter().any(one))
}

/// IAM's `StringLike`: `*` any run of characters, `?` any one.
fn like(pattern: &str, text: &str) -> bool {
    match (pattern.chars().next(), text.chars().next()) {
        (None, None) => true,
        (Some('*'), _) => {
            like(&pattern[1..], text)
                || (!text.is_empty()
                    && like(
                        pattern,
                        &text[text.chars().next().map_or(0, char::len_utf8)..],
                    ))
        }
        (Some(p), Some(t)) if p == '?' || p == t => {
            like(&pattern[p.len_utf8()..], &text[t.len_utf8()..])
        }
        _ => false,
    }
}

#[test]
fn the_stage_throttles_follow_the_capacity_knob_at_every_rate() {
    let template = read_yaml("template.yaml");
    let settings = &template["Resources"]["HttpApi"]["Properties"]["DefaultRouteSettings"];
    let rates = capacity_values(
        &template,
        &settings["ThrottlingRateLimit"],
        "the stage rate",
    );
    let bursts = capacity_values(&template, &settings["ThrottlingBurstLimit"], "the burst");
    assert!(rates.len() > 1, "{rates:?}");
    for ((at, rate), (_, burst)) in rates.iter().zip(&bursts) {
        assert!(
            *rate >= 1 && *burst >= *rate,
            "at {at}: rate {rate}, burst {burst}"
        );
    }
}

#[tokio::test]
async fn no_function_may_write_an_api_key_item_but_every_other_item_stays_writable() {
    // Given a store holding an API key, a pet and an idempotency record
    let app = TestApp::spawn().await;
    let category = app.create_category("Dogs").await;
    let body = json!({ "name": "Rex", "categoryId": category });
    let request = Request::builder()
        .method(Method::POST)
        .uri("/pets")
        .header("content-type", "application/json")
        .header("idempotency-key", "shield-1")
        .body(axum::body::Body::from(body.to_string()))
        .expect("a valid request");
    app.request(request).await.assert_status(201);
    let scan = app
        .app
        .db
        .client()
        .scan()
        .table_name(app.app.db.table())
        .send()
        .await
        .expect("the test table scans");
    let keys: Vec<String> = scan
        .items()
        .iter()
        .filter_map(|item| item.get("PK")?.as_s().ok().cloned())
        .collect();
    let (api_keys, others): (Vec<&String>, Vec<&String>) =
        keys.iter().partition(|pk| scan_is_api_key(&scan, pk));
    assert!(!api_keys.is_empty(), "the key item is there: {keys:?}");
    assert!(
        others.iter().any(|pk| pk.starts_with("IDEMPOTENCY#")),
        "{keys:?}"
    );

    // Then every function that may write the data table is denied every
    // write of exactly the API key items
    let template = read_yaml("template.yaml");
    for (name, function) in functions(&template) {
        if name == HOOK {
            // Its own rule: the one key it makes (below).
            continue;
        }
        let statements = statements(function);
        let writes = statements.iter().any(|s| {
            s["Effect"].as_str() == Some("Allow")
                && on_data_table(s)
                && actions(s).iter().any(|a| WRITES.contains(a))
        });
        if !writes {
            continue;
        }
        let patterns: Vec<&str> = statements
            .iter()
            .filter(|s| s["Effect"].as_str() == Some("Deny") && on_data_table(s))
            .filter(|s| WRITES.iter().all(|w| actions(s).contains(w)))
            .flat_map(|s| {
                let leading = &s["Condition"]["ForAnyValue:StringLike"]["dynamodb:LeadingKeys"];
                leading
                    .as_sequence()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
            })
            .collect();
        for pk in &api_keys {
            assert!(
                patterns.iter().any(|p| like(p, pk)),
                "{name} may write the API key item {pk}: no Deny of {WRITES:?} on \
                 dynamodb:LeadingKeys matches it ({patterns:?})"
            );
        }
        for pk in &others {
            assert!(
                !patterns.iter().any(|p| like(p, pk)),
                "{name} may not write {pk}, which a request writes ({patterns:?})"
            );
        }
        // The counter table is never denied (the data table's key list is:
        // a Deny on its indexes).
        assert!(
            !statements
                .iter()
                .any(|s| s["Effect"].as_str() == Some("Deny")
                    && format!("{:?}", s["Resource"]).contains("RateLimitTable")),
            "{name}: only the data table's items and indexes are denied"
        );
    }
}

/// The pre-traffic check's hook: the one function that may write an API key
/// item, its keyed check's own short-lived key.
const HOOK: &str = "PreTrafficFunction";

#[test]
fn the_pre_traffic_hook_may_put_only_a_short_lived_customer_key() {
    let template = read_yaml("template.yaml");
    let hook = &template["Resources"][HOOK];
    let writes: Vec<&Value> = statements(hook)
        .into_iter()
        .filter(|s| actions(s).iter().any(|a| a.starts_with("dynamodb:")))
        .collect();
    // One statement, a put (no update, no delete: the key expires).
    assert_eq!(writes.len(), 1, "{writes:?}");
    let put = writes[0];
    assert_eq!(put["Effect"].as_str(), Some("Allow"));
    assert_eq!(actions(put), ["dynamodb:PutItem"]);
    let condition = &put["Condition"];
    let leading = &condition["ForAllValues:StringLike"]["dynamodb:LeadingKeys"];
    assert_eq!(leading.as_sequence().map(Vec::len), Some(1), "{leading:?}");
    assert_eq!(leading[0].as_str(), Some("APIKEY#*"));
    let attributes: Vec<&str> = condition["ForAllValues:StringEquals"]["dynamodb:Attributes"]
        .as_sequence()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    assert!(attributes.contains(&"expiresAt"), "{attributes:?}");
    // No staff key, no key in the key list, no limits of its own.
    for never in ["role", "GSI1PK", "perMinute", "perDay", "maxOpenOrders"] {
        assert!(!attributes.contains(&never), "the hook may put {never}");
    }
}

/// Whether the scanned item with partition key `pk` is an API key (its sort key says so).
fn scan_is_api_key(scan: &aws_sdk_dynamodb::operation::scan::ScanOutput, pk: &str) -> bool {
    scan.items().iter().any(|item| {
        item.get("PK")
            .and_then(|v| v.as_s().ok())
            .map(String::as_str)
            == Some(pk)
            && item
                .get("SK")
                .and_then(|v| v.as_s().ok())
                .map(String::as_str)
                == Some("APIKEY")
    })
}

#[test]
fn string_like_matches_as_iam_does() {
    assert!(like("APIKEY#*", "APIKEY#ab12"));
    assert!(like("APIKEY#*", "APIKEY#"));
    assert!(!like("APIKEY#*", "IDEMPOTENCY#1#APIKEY#"));
    assert!(like("A?C", "ABC") && !like("A?C", "AC"));
}
