//! The contract's schemas read as closed JSON Schema (draft 2020-12), for a
//! maintained validator (the `jsonschema` crate) to apply.
//!
//! `openapi.yaml` writes its schemas in OpenAPI 3.0's dialect and
//! `asyncapi.yaml` in AsyncAPI's (JSON Schema draft 7); both leave an object
//! open unless it says `additionalProperties: false`. A contract whose
//! objects are open cannot catch a field the code sends and the document
//! lacks, so every object schema is closed here unless the document says
//! otherwise. `additionalProperties: false` on each branch of an `allOf`
//! would refuse the other branches' fields, so the closing keyword is
//! draft 2020-12's `unevaluatedProperties: false`, put on the outermost
//! schema of a composition only: it sees the properties every branch that
//! matched has evaluated.
//!
//! OpenAPI 3.0 specifics turned into JSON Schema: `nullable: true` adds
//! `null` to `type`; a boolean `exclusiveMinimum`/`exclusiveMaximum` becomes
//! the numeric form; `format: int32`/`int64` become the bounds they name and
//! `float`/`double` are dropped (number formats a JSON Schema validator does
//! not know). Any other `format` the validator does not know fails to
//! compile, never passes silently.

use jsonschema::error::ValidationErrorKind;
use jsonschema::Validator;
use serde_json::{Map, Value};

/// How deep `$ref`s may nest before the schema is taken to be recursive.
const MAX_DEPTH: usize = 64;

/// `schema` (a part of `document`) as closed JSON Schema 2020-12: every
/// `$ref` into `document` inlined, OpenAPI 3.0's dialect translated.
pub fn closed(document: &Value, schema: &Value) -> Result<Value, String> {
    translate(document, schema, Position::Standalone, 0)
}

/// Compiles a schema `closed` gave, checking formats (an unknown one is an error).
pub fn compile(schema: &Value) -> Result<Validator, String> {
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .should_ignore_unknown_formats(false)
        .build(schema)
        .map_err(|e| format!("the schema does not compile: {e}"))
}

/// Every way `instance` breaks `validator`'s schema, one line each
/// (`/path/to/field: what is wrong`); empty when it conforms.
///
/// A property whose own schema failed is also "unevaluated" for the object
/// around it (a failed branch evaluates nothing); that echo is left out.
pub fn violations(validator: &Validator, instance: &Value) -> Vec<String> {
    let errors: Vec<_> = validator.iter_errors(instance).collect();
    let paths: Vec<String> = errors
        .iter()
        .map(|e| e.instance_path().to_string())
        .collect();
    let failed_within = |at: &str, name: &str| {
        let inner = format!("{at}/{name}");
        paths.iter().any(|path| path.starts_with(&inner))
    };
    errors
        .iter()
        .zip(&paths)
        .filter(|(error, at)| match error.kind() {
            ValidationErrorKind::UnevaluatedProperties { unexpected } => {
                !unexpected.iter().all(|name| failed_within(at, name))
            }
            _ => true,
        })
        .map(|(error, at)| {
            let at = if at.is_empty() { "/" } else { at };
            format!("{at}: {error}")
        })
        .collect()
}

/// Whether a schema stands on its own or is one branch of a composition
/// (whose outermost schema closes it).
#[derive(Clone, Copy, PartialEq)]
enum Position {
    Standalone,
    Branch,
}

fn translate(
    document: &Value,
    schema: &Value,
    position: Position,
    depth: usize,
) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err("$ref nests too deep (a recursive schema?)".into());
    }
    let schema = resolve(document, schema)?;
    let Some(object) = schema.as_object() else {
        return Ok(schema.clone());
    };
    let mut out = Map::new();
    for (keyword, value) in object {
        let translated = match keyword.as_str() {
            "properties" | "patternProperties" | "$defs" | "definitions" => {
                let mut members = Map::new();
                for (name, member) in value.as_object().into_iter().flatten() {
                    let member = translate(document, member, Position::Standalone, depth + 1)?;
                    members.insert(name.clone(), member);
                }
                Value::Object(members)
            }
            "allOf" | "oneOf" | "anyOf" => {
                let branches = value.as_array().into_iter().flatten();
                let branches = branches
                    .map(|branch| translate(document, branch, Position::Branch, depth + 1))
                    .collect::<Result<Vec<_>, _>>()?;
                Value::Array(branches)
            }
            "items" | "additionalProperties" | "not" | "contains" | "propertyNames"
                if value.is_object() =>
            {
                translate(document, value, Position::Standalone, depth + 1)?
            }
            // OpenAPI's annotations, and what `finish` turns into JSON Schema.
            "example" | "nullable" | "format" | "exclusiveMinimum" | "exclusiveMaximum" => continue,
            _ => value.clone(),
        };
        out.insert(keyword.clone(), translated);
    }
    finish(object, &mut out)?;
    if position == Position::Standalone && is_open_object(&out) {
        out.insert("unevaluatedProperties".into(), Value::Bool(false));
    }
    Ok(Value::Object(out))
}

/// `schema` itself, or what its `$ref` (a pointer into `document`) names.
fn resolve<'a>(document: &'a Value, mut schema: &'a Value) -> Result<&'a Value, String> {
    for _ in 0..MAX_DEPTH {
        let Some(reference) = schema.get("$ref").and_then(Value::as_str) else {
            return Ok(schema);
        };
        let pointer = reference
            .strip_prefix('#')
            .ok_or_else(|| format!("$ref {reference} is not within the document"))?;
        schema = document
            .pointer(pointer)
            .ok_or_else(|| format!("$ref {reference} names nothing"))?;
    }
    Err("$ref chain too long".into())
}

/// Adds to `out` the JSON Schema form of `nullable`, `format` and the
/// boolean exclusive bounds of `original`.
fn finish(original: &Map<String, Value>, out: &mut Map<String, Value>) -> Result<(), String> {
    if original.get("nullable") == Some(&Value::Bool(true)) {
        if let Some(Value::String(single)) = out.get("type") {
            let both = Value::from(vec![single.clone(), "null".to_string()]);
            out.insert("type".into(), both);
        }
    }
    for (exclusive, inclusive) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        match original.get(exclusive) {
            Some(Value::Bool(true)) => {
                let bound = out
                    .remove(inclusive)
                    .ok_or_else(|| format!("{exclusive}: true without {inclusive}"))?;
                out.insert(exclusive.into(), bound);
            }
            Some(number @ Value::Number(_)) => {
                out.insert(exclusive.into(), number.clone());
            }
            _ => {}
        }
    }
    match original.get("format").and_then(Value::as_str) {
        Some("int32") => bound_integer(out, i32::MIN.into(), i32::MAX.into()),
        Some("int64") => bound_integer(out, i64::MIN, i64::MAX),
        Some("float" | "double") | None => {}
        Some(other) => {
            out.insert("format".into(), Value::from(other));
        }
    }
    Ok(())
}

/// Narrows `schema`'s `minimum`/`maximum` to `[low, high]`.
fn bound_integer(schema: &mut Map<String, Value>, low: i64, high: i64) {
    let current = |name: &str| schema.get(name).and_then(Value::as_f64);
    let minimum = current("minimum").map_or(low as f64, |m| m.max(low as f64));
    let maximum = current("maximum").map_or(high as f64, |m| m.min(high as f64));
    schema.insert("minimum".into(), number(minimum));
    schema.insert("maximum".into(), number(maximum));
}

fn number(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 9.2e18 {
        Value::from(value as i64)
    } else {
        Value::from(value)
    }
}

/// Whether `schema` describes objects and says nothing of properties it
/// does not list.
fn is_open_object(schema: &Map<String, Value>) -> bool {
    let describes_objects = schema.get("type") == Some(&Value::from("object"))
        || ["properties", "allOf", "oneOf", "anyOf"]
            .iter()
            .any(|keyword| schema.contains_key(*keyword));
    let says_otherwise =
        schema.contains_key("additionalProperties") || schema.contains_key("unevaluatedProperties");
    describes_objects && !says_otherwise
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn validator(document: &Value, schema: &Value) -> Validator {
        compile(&closed(document, schema).expect("translates")).expect("compiles")
    }

    #[test]
    fn a_property_the_schema_does_not_list_fails_through_refs_and_all_of() {
        let document = json!({"components": {"schemas": {
            "Base": {"type": "object", "required": ["id"], "properties": {"id": {"type": "integer"}}},
            "Pet": {"allOf": [{"$ref": "#/components/schemas/Base"},
                               {"properties": {"name": {"type": "string"}}}]},
        }}});
        let pets = json!({"type": "array", "items": {"$ref": "#/components/schemas/Pet"}});
        let pets = validator(&document, &pets);
        assert!(violations(&pets, &json!([{"id": 1, "name": "Rex"}])).is_empty());
        let extra = violations(&pets, &json!([{"id": 1, "colour": "brown"}]));
        assert!(extra.len() == 1 && extra[0].contains("colour"), "{extra:?}");
        let missing = violations(&pets, &json!([{"name": "Rex"}]));
        assert!(
            missing.len() == 1 && missing[0].contains("\"id\""),
            "{missing:?}"
        );
        let wrong = violations(&pets, &json!([{"id": 1, "name": 5}]));
        assert!(
            wrong.len() == 1 && wrong[0].starts_with("/0/name"),
            "{wrong:?}"
        );
    }

    #[test]
    fn an_object_the_document_leaves_open_stays_open() {
        let open = json!({"type": "object", "additionalProperties": true, "properties": {}});
        assert!(violations(&validator(&json!({}), &open), &json!({"any": 1})).is_empty());
    }

    #[test]
    fn openapi_3_0_nullable_exclusive_bounds_and_integer_formats_are_translated() {
        let schema = json!({"type": "object", "properties": {
            "note": {"type": "string", "nullable": true},
            "small": {"type": "integer", "format": "int32", "minimum": 0, "exclusiveMinimum": true},
        }});
        let checked = validator(&json!({}), &schema);
        assert!(violations(&checked, &json!({"note": null, "small": 1})).is_empty());
        assert!(!violations(&checked, &json!({"small": 0})).is_empty());
        assert!(!violations(&checked, &json!({"small": 2_147_483_648u64})).is_empty());
    }

    #[test]
    fn an_unknown_format_fails_and_a_known_one_is_checked() {
        let unknown = json!({"type": "string", "format": "no-such-format"});
        let translated = closed(&json!({}), &unknown).expect("translates");
        assert!(compile(&translated).is_err());
        let date = validator(&json!({}), &json!({"type": "string", "format": "date"}));
        assert!(violations(&date, &json!("2026-07-01")).is_empty());
        assert!(!violations(&date, &json!("2026-13-45")).is_empty());
    }
}
