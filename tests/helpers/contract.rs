//! Every response the tests receive, held to `openapi.yaml`: the operation
//! the request names must document the status, the body must be what that
//! status's `content` says (a closed schema: a field the document does not
//! list fails, as does a required one left out), and the headers it marks
//! `required` must be there.
//!
//! The document is read and its schemas compiled once per test binary.
//! Each conforming body's optional properties are noted for a flow that
//! collects them (`carried.rs`): a documented property no answer carries
//! fails `responses::every_optional_response_property_is_sent`.
//! A request no operation matches (an unknown path, a method the path does
//! not have, `/docs/assets/...`) has no schema but one: an error answer
//! must still be the `Error` record.

use super::carried;
use super::schema::{closed, compile, violations};
use super::TestResponse;
use http::{HeaderMap, Method};
use jsonschema::Validator;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, OnceLock};

/// What `openapi.yaml` says each operation answers.
struct Contract {
    operations: Vec<Operation>,
    /// The `Error` record, for errors no operation documents.
    error: Arc<Validator>,
    /// The document itself, for the names of the properties answers carry.
    document: Value,
}

struct Operation {
    method: Method,
    /// As written in the document: `/pets/{petId}`.
    template: String,
    /// Each status (`200`, `4XX`, `default`) with its answer.
    responses: BTreeMap<String, Answer>,
}

/// One documented answer of an operation.
struct Answer {
    /// The headers marked `required`, lower-case.
    required_headers: Vec<String>,
    /// Each media type of `content` with its compiled schema (none for
    /// bodies that are not JSON); empty when the answer has no body.
    content: Vec<(String, Option<JsonBody>)>,
}

/// A JSON body's schema: as written (for the names of its properties) and
/// compiled closed.
struct JsonBody {
    schema: Value,
    validator: Arc<Validator>,
}

fn contract() -> &'static Contract {
    static CONTRACT: OnceLock<Contract> = OnceLock::new();
    CONTRACT.get_or_init(|| Contract::read().unwrap_or_else(|e| panic!("openapi.yaml: {e}")))
}

/// Checks that `response` to `method path` (the request's URI; its query is
/// ignored) is what `openapi.yaml` says; `Err` names the operation (method,
/// path template, status) and each fault.
pub fn check(method: &Method, path: &str, response: &TestResponse) -> Result<(), String> {
    let contract = contract();
    let path = path.split('?').next().unwrap_or_default();
    let Some(operation) = contract.operation(method, path) else {
        return contract.check_unmatched(method, path, response);
    };
    let TestResponse {
        status,
        headers,
        body,
    } = response;
    let status = *status;
    let name = format!("{} {} {status}", operation.method, operation.template);
    let fail = |faults: Vec<String>| {
        let body = String::from_utf8_lossy(&body[..body.len().min(600)]).into_owned();
        Err(format!(
            "{name}: the answer breaks openapi.yaml:\n  {}\n  body: {body}",
            faults.join("\n  ")
        ))
    };
    let Some(answer) = operation.answer(status) else {
        return fail(vec![format!(
            "status {status} is not documented for this operation"
        )]);
    };
    let mut faults: Vec<String> = answer
        .required_headers
        .iter()
        .filter(|header| !headers.contains_key(header.as_str()))
        .map(|header| format!("required header {header} is missing"))
        .collect();
    faults.extend(answer.body_faults(headers, body, |schema, value| {
        carried::record(&contract.document, schema, &name, value)
    }));
    if faults.is_empty() {
        Ok(())
    } else {
        fail(faults)
    }
}

/// Every optional property of a JSON answer `openapi.yaml` documents, named
/// as `carried.rs` names them (`Order.shipDate`).
pub fn optional_response_properties() -> BTreeSet<String> {
    let contract = contract();
    let mut optional = BTreeSet::new();
    for operation in &contract.operations {
        for (status, answer) in &operation.responses {
            let name = format!("{} {} {status}", operation.method, operation.template);
            for (_, body) in &answer.content {
                if let Some(JsonBody { schema, .. }) = body {
                    optional.extend(carried::optional(&contract.document, schema, &name));
                }
            }
        }
    }
    optional
}

impl Contract {
    fn read() -> Result<Contract, String> {
        let yaml = crate::deploy::read_yaml("openapi.yaml");
        let document = serde_json::to_value(yaml).map_err(|e| format!("not JSON: {e}"))?;
        let mut compiled = Compiled::default();
        let error = compiled.schema(&document, &document["components"]["schemas"]["Error"])?;
        let mut operations = Vec::new();
        let paths = document["paths"].as_object().ok_or("no paths")?;
        for (template, item) in paths {
            for (method, operation) in item.as_object().into_iter().flatten() {
                // A path item also holds `parameters`, `summary`, ...
                const METHODS: [&str; 8] = [
                    "get", "put", "post", "delete", "options", "head", "patch", "trace",
                ];
                if !METHODS.contains(&method.as_str()) {
                    continue;
                }
                let method = method
                    .to_uppercase()
                    .parse::<Method>()
                    .map_err(|e| e.to_string())?;
                let mut responses = BTreeMap::new();
                for (status, response) in operation["responses"].as_object().into_iter().flatten() {
                    let answer = compiled
                        .answer(&document, response)
                        .map_err(|e| format!("{method} {template} {status}: {e}"))?;
                    responses.insert(status.clone(), answer);
                }
                operations.push(Operation {
                    method,
                    template: template.clone(),
                    responses,
                });
            }
        }
        Ok(Contract {
            operations,
            error,
            document,
        })
    }

    /// The operation `method path` calls: of the templates matching `path`,
    /// the one with the most literal segments (as routers pick).
    fn operation(&self, method: &Method, path: &str) -> Option<&Operation> {
        self.operations
            .iter()
            .filter(|operation| operation.method == *method)
            .filter_map(|operation| Some((literal_segments(&operation.template, path)?, operation)))
            .max_by_key(|(literals, _)| *literals)
            .map(|(_, operation)| operation)
    }

    /// An answer no operation documents: an error must be the `Error` record.
    fn check_unmatched(
        &self,
        method: &Method,
        path: &str,
        response: &TestResponse,
    ) -> Result<(), String> {
        let status = response.status;
        if status < 400 || !is_json(&response.headers) {
            return Ok(());
        }
        let faults = match serde_json::from_slice::<Value>(&response.body) {
            Ok(error) => violations(&self.error, &error),
            Err(e) => vec![format!("the body is not JSON: {e}")],
        };
        if faults.is_empty() {
            return Ok(());
        }
        Err(format!(
            "{method} {path} {status} (no operation in openapi.yaml): not the Error record:\n  {}",
            faults.join("\n  ")
        ))
    }
}

impl Operation {
    /// The answer documented for `status`: exactly, else its class (`4XX`),
    /// else `default`.
    fn answer(&self, status: u16) -> Option<&Answer> {
        let class = format!("{}XX", status / 100);
        [status.to_string(), class, "default".to_string()]
            .iter()
            .find_map(|key| self.responses.get(key))
    }
}

impl Answer {
    /// What is wrong with `body`; a conforming JSON body is shown to `seen`
    /// with its schema.
    fn body_faults(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        seen: impl FnOnce(&Value, &Value),
    ) -> Vec<String> {
        if self.content.is_empty() {
            return match body.is_empty() {
                true => vec![],
                false => vec!["the operation documents no body for this status".into()],
            };
        }
        let media_type = headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .map(|v| v.trim().to_ascii_lowercase())
            .unwrap_or_default();
        let Some((_, validator)) = self.content.iter().find(|(m, _)| *m == media_type) else {
            let documented: Vec<&str> = self.content.iter().map(|(m, _)| m.as_str()).collect();
            return vec![format!(
                "Content-Type {media_type:?} is not one documented: {documented:?}"
            )];
        };
        let Some(JsonBody { schema, validator }) = validator else {
            return vec![];
        };
        match serde_json::from_slice::<Value>(body) {
            Ok(value) => {
                let faults = violations(validator, &value);
                if faults.is_empty() {
                    seen(schema, &value);
                }
                faults
            }
            Err(e) => vec![format!("the body is not JSON: {e}")],
        }
    }
}

/// The schemas compiled so far, by their closed form: the `Error` record
/// behind most answers is compiled once.
#[derive(Default)]
struct Compiled(HashMap<String, Arc<Validator>>);

impl Compiled {
    fn schema(&mut self, document: &Value, schema: &Value) -> Result<Arc<Validator>, String> {
        let closed = closed(document, schema)?;
        let key = closed.to_string();
        if let Some(validator) = self.0.get(&key) {
            return Ok(validator.clone());
        }
        let validator = Arc::new(compile(&closed)?);
        self.0.insert(key, validator.clone());
        Ok(validator)
    }

    fn answer(&mut self, document: &Value, response: &Value) -> Result<Answer, String> {
        let response = resolve_response(document, response)?;
        let required_headers = response["headers"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(_, header)| {
                resolve_response(document, header).is_ok_and(|h| h["required"] == true)
            })
            .map(|(name, _)| name.to_ascii_lowercase())
            .collect();
        let mut content = Vec::new();
        for (media_type, media) in response["content"].as_object().into_iter().flatten() {
            let validator = match media_type.ends_with("json") {
                true => Some(JsonBody {
                    schema: media["schema"].clone(),
                    validator: self.schema(document, &media["schema"])?,
                }),
                false => None,
            };
            content.push((media_type.to_ascii_lowercase(), validator));
        }
        Ok(Answer {
            required_headers,
            content,
        })
    }
}

/// A response or header object, or the component its `$ref` names.
fn resolve_response<'a>(document: &'a Value, object: &'a Value) -> Result<&'a Value, String> {
    match object["$ref"].as_str() {
        Some(reference) => document
            .pointer(reference.trim_start_matches('#'))
            .ok_or_else(|| format!("$ref {reference} names nothing")),
        None => Ok(object),
    }
}

/// How many of `template`'s segments are literal, if `path` matches it.
fn literal_segments(template: &str, path: &str) -> Option<usize> {
    let (template, path): (Vec<&str>, Vec<&str>) =
        (template.split('/').collect(), path.split('/').collect());
    if template.len() != path.len() {
        return None;
    }
    let mut literals = 0;
    for (pattern, segment) in template.iter().zip(&path) {
        if pattern.starts_with('{') && pattern.ends_with('}') {
            if segment.is_empty() {
                return None;
            }
        } else if pattern == segment {
            literals += 1;
        } else {
            return None;
        }
    }
    Some(literals)
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn answer(status: u16, headers: &HeaderMap, body: &'static [u8]) -> TestResponse {
        let (headers, body) = (headers.clone(), bytes::Bytes::from_static(body));
        TestResponse {
            status,
            headers,
            body,
        }
    }

    fn json_headers() -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in [
            ("content-type", "application/json"),
            ("x-request-id", "r"),
            ("x-ratelimit-limit", "60"),
            ("x-ratelimit-remaining", "59"),
            ("x-ratelimit-reset", "1"),
            ("ratelimit-policy", "p"),
            ("ratelimit", "r"),
            ("deprecation", "@1"),
            ("sunset", "s"),
            ("link", "l"),
            ("cache-control", "private, no-cache"),
            ("x-content-type-options", "nosniff"),
            ("etag", "\"v\""),
        ] {
            headers.insert(name, HeaderValue::from_static(value));
        }
        headers
    }

    #[test]
    fn a_field_the_contract_lacks_or_a_required_one_left_out_fails_naming_both() {
        let pet = br#"{"id": 1, "name": "Rex", "categoryId": 2, "status": "sold"}"#;
        let headers = json_headers();
        let get =
            |body: &'static [u8]| check(&Method::GET, "/pets/1?x=1", &answer(200, &headers, body));
        assert_eq!(get(pet), Ok(()));
        let extra = br#"{"id": 1, "name": "Rex", "categoryId": 2, "colour": "brown"}"#;
        let extra = get(extra).expect_err("an extra field fails");
        assert!(extra.contains("GET /pets/{petId} 200") && extra.contains("colour"));
        let missing = get(br#"{"id": 1, "name": "Rex"}"#).expect_err("a missing field fails");
        assert!(missing.contains("\"categoryId\" is a required property"));
    }

    #[test]
    fn an_undocumented_status_a_missing_header_or_a_foreign_error_fails() {
        let headers = json_headers();
        let error = br#"{"code": "NOT_FOUND", "message": "m", "status": 404}"#;
        let teapot = check(&Method::GET, "/pets", &answer(418, &headers, error));
        assert!(teapot.is_err_and(|e| e.contains("status 418 is not documented")));
        let bare = check(
            &Method::GET,
            "/pets/1",
            &answer(404, &HeaderMap::new(), error),
        );
        assert!(bare.is_err_and(|e| e.contains("x-request-id")));
        let unknown = check(&Method::GET, "/nowhere", &answer(404, &headers, error));
        assert_eq!(unknown, Ok(()));
        let foreign = answer(404, &headers, br#"{"error": "x"}"#);
        let foreign = check(&Method::GET, "/nowhere", &foreign);
        assert!(foreign.is_err_and(|e| e.contains("not the Error record")));
    }
}
