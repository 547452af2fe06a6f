//! What the deployment files say: the routes of `template.yaml` (and which
//! function each goes to) and the operations of `openapi.yaml`.
//!
//! `template.yaml` uses CloudFormation's short tags (`!Ref`, `!GetAtt`,
//! `!Sub`); serde_yaml_ng keeps them as [`Value::Tagged`], so the file parses
//! as plain YAML and the tagged values are simply not looked into.

use crate::helpers::repo_root;
use serde_yaml_ng::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The methods a route or an operation can have, as API Gateway writes them.
pub const METHODS: [&str; 5] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

/// A YAML file of the repository (template.yaml, openapi.yaml, asyncapi.yaml),
/// its merge keys applied: `openapi.yaml` writes the headers and error
/// answers every operation shares once, and merges them (`<<: *errors`), so
/// each operation is read whole, as `GET /openapi.json` serves it.
pub fn read_yaml(name: &str) -> Value {
    let path = repo_root().join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut value: Value =
        serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{name} is not valid YAML: {e}"));
    value
        .apply_merge()
        .unwrap_or_else(|e| panic!("{name}: a merge key (<<) that merges no mapping: {e}"));
    value
}

/// What `value` holds under the CloudFormation tag `tag` (`Ref`, `If`, ...).
pub fn tagged<'a>(value: &'a Value, tag: &str) -> Option<&'a Value> {
    match value {
        Value::Tagged(tagged) if tagged.tag == tag => Some(&tagged.value),
        _ => None,
    }
}

/// One HTTP API route of `template.yaml`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct TemplateRoute {
    /// `GET`, `POST`, ..., or `ANY`; `None` for the `$default` route.
    pub method: Option<String>,
    /// `/pets/{petId}`; `None` for the `$default` route.
    pub path: Option<String>,
    /// The function's binary (`pets`, `store`): its `BuildProperties.Binary`.
    pub function: String,
    /// The event's logical name in the template, for messages.
    pub event: String,
}

impl TemplateRoute {
    /// The route key API Gateway puts in events: `GET /pets`, `ANY /pets`, `$default`.
    pub fn route_key(&self) -> String {
        match (&self.method, &self.path) {
            (Some(method), Some(path)) => format!("{method} {path}"),
            _ => "$default".to_string(),
        }
    }
}

/// Every `HttpApi` event of every function in `template.yaml`.
pub fn template_routes() -> Vec<TemplateRoute> {
    let template = read_yaml("template.yaml");
    let resources = template
        .get("Resources")
        .and_then(Value::as_mapping)
        .expect("template.yaml has Resources");
    let mut routes = Vec::new();
    for (name, resource) in resources {
        if resource.get("Type").and_then(Value::as_str) != Some("AWS::Serverless::Function") {
            continue;
        }
        let name = name.as_str().unwrap_or_default();
        let function = resource
            .get("Metadata")
            .and_then(|m| m.get("BuildProperties"))
            .and_then(|b| b.get("Binary"))
            .and_then(Value::as_str)
            .unwrap_or_else(|| {
                panic!("function {name} names its binary in Metadata.BuildProperties.Binary")
            })
            .to_string();
        let Some(events) = resource
            .get("Properties")
            .and_then(|p| p.get("Events"))
            .and_then(Value::as_mapping)
        else {
            continue;
        };
        for (event, spec) in events {
            if spec.get("Type").and_then(Value::as_str) != Some("HttpApi") {
                continue;
            }
            let properties = spec.get("Properties");
            let field = |key: &str| {
                properties
                    .and_then(|p| p.get(key))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            };
            routes.push(TemplateRoute {
                method: field("Method").map(|m| m.to_ascii_uppercase()),
                path: field("Path"),
                function: function.clone(),
                event: event.as_str().unwrap_or_default().to_string(),
            });
        }
    }
    routes.sort();
    routes
}

/// Every operation of `openapi.yaml`, as `(METHOD, path)`.
pub fn openapi_operations() -> BTreeSet<(String, String)> {
    let document = read_yaml("openapi.yaml");
    let paths = document
        .get("paths")
        .and_then(Value::as_mapping)
        .expect("openapi.yaml has paths");
    let mut operations = BTreeSet::new();
    for (path, item) in paths {
        let path = path.as_str().expect("paths are strings");
        let item = item.as_mapping().expect("a path item is a mapping");
        for key in item.keys() {
            let key = key.as_str().unwrap_or_default();
            let method = key.to_ascii_uppercase();
            if METHODS.contains(&method.as_str()) || matches!(key, "head" | "options" | "trace") {
                operations.insert((method, path.to_string()));
            }
        }
    }
    operations
}

/// `path` with every `{param}` replaced by `value`.
pub fn fill_params(path: &str, value: &str) -> String {
    let mut out = String::new();
    let mut rest = path;
    while let Some(start) = rest.find('{') {
        let end = rest[start..].find('}').expect("a path parameter is closed") + start;
        out.push_str(&rest[..start]);
        out.push_str(value);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

/// The data table's GSIs in `template.yaml`, in any of its states (an
/// index kept to some `DataLayoutStep`s is an `!If [Condition, index,
/// !Ref AWS::NoValue]`): name → projected non-key attributes (`None`: ALL).
pub fn template_data_table_indexes() -> BTreeMap<String, Option<BTreeSet<String>>> {
    let template = read_yaml("template.yaml");
    let indexes = &template["Resources"]["DataTable"]["Properties"]["GlobalSecondaryIndexes"];
    indexes
        .as_sequence()
        .unwrap_or_else(|| panic!("template.yaml: DataTable has no GlobalSecondaryIndexes"))
        .iter()
        .map(|index| match tagged(index, "If") {
            Some(branches) => &branches[1],
            None => index,
        })
        .map(|index| {
            let name = index["IndexName"].as_str().unwrap_or_default().to_string();
            let attributes = match index["Projection"]["ProjectionType"].as_str() {
                Some("ALL") => None,
                Some("INCLUDE") => Some(
                    index["Projection"]["NonKeyAttributes"]
                        .as_sequence()
                        .into_iter()
                        .flatten()
                        .filter_map(|a| a.as_str().map(str::to_string))
                        .collect(),
                ),
                other => panic!(
                    "template.yaml: {name} projects {other:?}: ALL or INCLUDE, as \
                     shared/src/db/indexes.rs can say"
                ),
            };
            (name, attributes)
        })
        .collect()
}
