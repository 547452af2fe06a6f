//! Reading a recorded request's JSON body: its fields and key values.

use serde_json::Value;

/// The string field `field` of `v`.
pub(super) fn str_of(v: &Value, field: &str) -> Option<String> {
    v.get(field).and_then(Value::as_str).map(String::from)
}

/// The partition key of an item or key: every table of ours calls it `PK`.
pub(super) fn partition_key(item: &Value) -> Option<String> {
    item.get("PK").and_then(attribute_string)
}

/// A string or number attribute value (`{"S": "PET#1"}`), as text.
pub(super) fn attribute_string(value: &Value) -> Option<String> {
    value
        .get("S")
        .or_else(|| value.get("N"))
        .and_then(Value::as_str)
        .map(String::from)
}

/// The partition key value a query's key condition sets: the value compared
/// with `=` to a key attribute (ours end in `PK`: `PK`, `GSI1PK`, ...).
pub(super) fn query_partition(body: &Value) -> Option<String> {
    let condition = body["KeyConditionExpression"].as_str()?;
    let names = &body["ExpressionAttributeNames"];
    let values = &body["ExpressionAttributeValues"];
    condition.split(" AND ").find_map(|clause| {
        let (left, right) = clause.split_once('=')?;
        let (left, right) = (left.trim(), right.trim());
        let attribute = names.get(left).and_then(Value::as_str).unwrap_or(left);
        match attribute.ends_with("PK") && right.starts_with(':') {
            true => attribute_string(values.get(right)?),
            false => None,
        }
    })
}
