//! Items as DynamoDB JSON (`{"PK": {"S": "PET#1"}, "stock": {"N": "3"}}`),
//! the form DynamoDB's own export to S3 writes (`DYNAMODB_JSON`, a line
//! `{"Item": {...}}` per item): every type kept, numbers as their text.

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use petstore::db::Item;
use serde_json::{json, Map, Value};

/// `item` as DynamoDB JSON.
pub fn item_to_json(item: &Item) -> Result<Value, String> {
    let mut object = Map::new();
    for (name, value) in item {
        object.insert(name.clone(), value_to_json(value)?);
    }
    Ok(Value::Object(object))
}

fn value_to_json(value: &AttributeValue) -> Result<Value, String> {
    let blob = |b: &Blob| Value::String(STANDARD.encode(b.as_ref()));
    Ok(match value {
        AttributeValue::S(s) => json!({ "S": s }),
        AttributeValue::N(n) => json!({ "N": n }),
        AttributeValue::B(b) => json!({ "B": blob(b) }),
        AttributeValue::Bool(b) => json!({ "BOOL": b }),
        AttributeValue::Null(_) => json!({ "NULL": true }),
        AttributeValue::Ss(list) => json!({ "SS": list }),
        AttributeValue::Ns(list) => json!({ "NS": list }),
        AttributeValue::Bs(list) => json!({ "BS": list.iter().map(blob).collect::<Vec<_>>() }),
        AttributeValue::L(list) => {
            let list: Result<Vec<Value>, String> = list.iter().map(value_to_json).collect();
            json!({ "L": list? })
        }
        AttributeValue::M(map) => {
            let map: Item = map.clone();
            json!({ "M": item_to_json(&map)? })
        }
        other => return Err(format!("an attribute of unknown type: {other:?}")),
    })
}

/// The item DynamoDB JSON `value` describes.
pub fn item_from_json(value: &Value) -> Result<Item, String> {
    let object = value.as_object().ok_or("an item is a JSON object")?;
    object
        .iter()
        .map(|(name, value)| Ok((name.clone(), value_from_json(value)?)))
        .collect()
}

fn value_from_json(value: &Value) -> Result<AttributeValue, String> {
    let object = value.as_object().filter(|o| o.len() == 1);
    let (kind, inner) = object
        .and_then(|o| o.iter().next())
        .ok_or_else(|| format!("{value} is not one typed DynamoDB value"))?;
    let text = |v: &Value| {
        v.as_str()
            .map(str::to_string)
            .ok_or(format!("{v} is not a string"))
    };
    let blob = |v: &Value| {
        let raw = v.as_str().ok_or(format!("{v} is not base64"))?;
        STANDARD
            .decode(raw)
            .map(Blob::new)
            .map_err(|e| e.to_string())
    };
    let list = |v: &Value| v.as_array().cloned().ok_or(format!("{v} is not a list"));
    Ok(match kind.as_str() {
        "S" => AttributeValue::S(text(inner)?),
        "N" => AttributeValue::N(text(inner)?),
        "B" => AttributeValue::B(blob(inner)?),
        "BOOL" => AttributeValue::Bool(inner.as_bool().ok_or("BOOL is not a boolean")?),
        "NULL" => AttributeValue::Null(true),
        "SS" => AttributeValue::Ss(list(inner)?.iter().map(text).collect::<Result<_, _>>()?),
        "NS" => AttributeValue::Ns(list(inner)?.iter().map(text).collect::<Result<_, _>>()?),
        "BS" => AttributeValue::Bs(list(inner)?.iter().map(blob).collect::<Result<_, _>>()?),
        "L" => AttributeValue::L(
            list(inner)?
                .iter()
                .map(value_from_json)
                .collect::<Result<_, _>>()?,
        ),
        "M" => AttributeValue::M(item_from_json(inner)?),
        other => return Err(format!("unknown DynamoDB type {other}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_round_trips() -> Result<(), String> {
        let nested = Item::from([("n".to_string(), AttributeValue::N("-1.5".into()))]);
        let item = Item::from([
            ("PK".to_string(), AttributeValue::S("PET#1".into())),
            ("stock".to_string(), AttributeValue::N("3".into())),
            (
                "response".to_string(),
                AttributeValue::B(Blob::new(vec![0, 255, 7])),
            ),
            ("complete".to_string(), AttributeValue::Bool(true)),
            ("gone".to_string(), AttributeValue::Null(true)),
            (
                "tags".to_string(),
                AttributeValue::Ss(vec!["a".into(), "b".into()]),
            ),
            ("ns".to_string(), AttributeValue::Ns(vec!["1".into()])),
            (
                "bs".to_string(),
                AttributeValue::Bs(vec![Blob::new(vec![1])]),
            ),
            (
                "list".to_string(),
                AttributeValue::L(vec![AttributeValue::S("x".into())]),
            ),
            ("map".to_string(), AttributeValue::M(nested)),
        ]);
        let line = item_to_json(&item)?.to_string();
        let back = item_from_json(&serde_json::from_str(&line).map_err(|e| e.to_string())?)?;
        assert_eq!(back, item);
        assert!(item_from_json(&json!({ "PK": { "X": "1" } })).is_err());
        assert!(item_from_json(&json!({ "PK": "PET#1" })).is_err());
        Ok(())
    }
}
