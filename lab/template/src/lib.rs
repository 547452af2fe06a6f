//! template.yaml, read once: the settings of the deployed stack that the
//! lab's models and tools take from it (the cost model's memory, tracing
//! and log levels, the stage's throttle, the queues' and the stream's
//! batches, the Capacity mapping an `OrderRate` selects, the functions'
//! variables).
//!
//! The file is parsed as YAML ([`serde_yaml_ng`], as the service's own
//! checks read it), CloudFormation's short-form tags kept as tagged values.
//! A setting is resolved as the stack has it at its parameters' defaults:
//! `!Ref <parameter>` is the parameter's `Default`, `!FindInMap [Map, key,
//! name]` the mapping's entry (key and name resolved first). Every other
//! tag (`!If`, `!Sub`, `!GetAtt`, a `!Ref` to a resource) resolves to
//! nothing: no setting the lab reads goes through one.

use serde::Deserialize;
use serde_yaml_ng::{Mapping, Value};
use std::path::Path;

/// The template's file name, at the repository's root.
pub const FILE: &str = "template.yaml";

/// Lambda's `BatchSize` for an SQS mapping that sets none.
pub const SQS_DEFAULT_BATCH: u32 = 10;
/// Lambda's `BatchSize` for a DynamoDB stream mapping that sets none.
pub const STREAM_DEFAULT_BATCH: u32 = 100;

/// The parsed template; an empty one (every setting absent) by default.
#[derive(Debug, Default, Clone)]
pub struct Template {
    root: Value,
}

/// The stage's throttle: `DefaultRouteSettings` of the HTTP API.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StageThrottle {
    /// Requests a second.
    pub rate: f64,
    pub burst: f64,
}

/// A row of the `Capacity` mapping: what an `OrderRate` sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Capacity {
    pub order_list_shards: u32,
    pub pet_list_shards: u32,
    pub delivery_shards: u32,
    pub delivery_batch_size: u32,
    /// Seconds.
    pub delivery_batch_window: u32,
    pub throttle_rate: u32,
    pub throttle_burst: u32,
    pub alarm_requests_per_minute: u32,
}

impl Template {
    pub fn parse(text: &str) -> Result<Template, serde_yaml_ng::Error> {
        Ok(Template {
            root: serde_yaml_ng::from_str(text)?,
        })
    }

    /// `root/template.yaml`.
    pub fn read(root: &Path) -> Result<Template, String> {
        let path = root.join(FILE);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("{} is not readable: {e}", path.display()))?;
        Template::parse(&text).map_err(|e| format!("{} is not YAML: {e}", path.display()))
    }

    /// The `Default` of parameter `name`.
    pub fn parameter_default(&self, name: &str) -> Option<String> {
        scalar(self.root.get("Parameters")?.get(name)?.get("Default")?)
    }

    /// The `AllowedValues` of parameter `name`, in the template's order.
    pub fn allowed_values(&self, name: &str) -> Vec<String> {
        let values = self
            .root
            .get("Parameters")
            .and_then(|parameters| parameters.get(name)?.get("AllowedValues")?.as_sequence());
        values.into_iter().flatten().filter_map(scalar).collect()
    }

    /// The `OrderRate` the stack is built for at its default.
    pub fn order_rate(&self) -> Option<String> {
        self.parameter_default("OrderRate")
    }

    /// The highest `OrderRate` the parameter allows.
    pub fn top_order_rate(&self) -> Option<String> {
        let rates = self.allowed_values("OrderRate");
        rates
            .into_iter()
            .filter_map(|rate| Some((rate.parse::<u64>().ok()?, rate)))
            .max()
            .map(|(_, rate)| rate)
    }

    /// The `Capacity` mapping's row for `order_rate`.
    pub fn capacity(&self, order_rate: &str) -> Option<Capacity> {
        let row = entry(self.root.get("Mappings")?.get("Capacity")?, order_rate)?;
        serde_yaml_ng::from_value(row.clone()).ok()
    }

    /// Function `function`'s `MemorySize` (its own, else the Globals').
    pub fn memory_mb(&self, function: &str) -> Option<u32> {
        self.function_setting(function, &["MemorySize"])?
            .parse()
            .ok()
    }

    /// Function `function`'s `Tracing` (`Active` or `PassThrough`).
    pub fn tracing(&self, function: &str) -> Option<String> {
        self.function_setting(function, &["Tracing"])
    }

    /// Function `function`'s `LoggingConfig.SystemLogLevel`: which of
    /// Lambda's own lines it writes.
    pub fn system_log_level(&self, function: &str) -> Option<String> {
        self.function_setting(function, &["LoggingConfig", "SystemLogLevel"])
    }

    /// The names function `function`'s own `Environment.Variables` set
    /// (beside the Globals', which every function has); `None` when the
    /// template has no such resource.
    pub fn own_variables(&self, function: &str) -> Option<Vec<String>> {
        let resource = self.resource(function)?;
        let variables =
            path(resource, &["Properties", "Environment", "Variables"]).and_then(Value::as_mapping);
        Some(
            variables
                .into_iter()
                .flat_map(Mapping::keys)
                .filter_map(scalar)
                .collect(),
        )
    }

    /// The stage's throttle, from the HTTP API's `DefaultRouteSettings`.
    pub fn stage_throttle(&self) -> Option<StageThrottle> {
        let settings = path(
            self.typed("AWS::Serverless::HttpApi").next()?,
            &["Properties", "DefaultRouteSettings"],
        )?;
        let limit = |name: &str| self.resolve(settings.get(name)?)?.parse::<f64>().ok();
        Some(StageThrottle {
            rate: limit("ThrottlingRateLimit")?,
            burst: limit("ThrottlingBurstLimit")?,
        })
    }

    /// The HTTP API's access log `Format`: the line API Gateway writes per
    /// request, its `$context` variables unfilled.
    pub fn access_log_format(&self) -> Option<String> {
        let api = self.typed("AWS::Serverless::HttpApi").next()?;
        scalar(path(api, &["Properties", "AccessLogSettings", "Format"])?)
    }

    /// The `BatchSize` of the event source mapping reading queue `queue`
    /// (an SQS event whose `Queue` is `!GetAtt <queue>.Arn`), or Lambda's
    /// default when it sets none; `None` when no function reads the queue,
    /// or its batch does not resolve.
    pub fn queue_batch(&self, queue: &str) -> Option<u32> {
        let (_, properties) =
            self.events()
                .filter(|(kind, _)| *kind == "SQS")
                .find(|(_, properties)| {
                    properties
                        .get("Queue")
                        .is_some_and(|source| attribute_of(source) == Some((queue, "Arn")))
                })?;
        self.batch(properties, SQS_DEFAULT_BATCH)
    }

    /// The `BatchSize` of function `function`'s DynamoDB stream mapping, or
    /// Lambda's default when it sets none; `None` when it has no such event.
    pub fn stream_batch(&self, function: &str) -> Option<u32> {
        let events = path(self.resource(function)?, &["Properties", "Events"])?;
        let properties = events.as_mapping()?.values().find_map(|event| {
            (event.get("Type")?.as_str()? == "DynamoDB").then_some(event.get("Properties")?)
        })?;
        self.batch(properties, STREAM_DEFAULT_BATCH)
    }

    fn batch(&self, properties: &Value, default: u32) -> Option<u32> {
        match properties.get("BatchSize") {
            None => Some(default),
            Some(batch) => self.resolve(batch)?.parse().ok(),
        }
    }

    fn resource(&self, name: &str) -> Option<&Value> {
        self.root.get("Resources")?.get(name)
    }

    /// The resources of CloudFormation type `kind`, in the template's order.
    fn typed<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.resources()
            .filter(move |resource| resource.get("Type").and_then(Value::as_str) == Some(kind))
    }

    fn resources(&self) -> impl Iterator<Item = &Value> {
        let resources = self.root.get("Resources").and_then(Value::as_mapping);
        resources.into_iter().flat_map(Mapping::values)
    }

    /// Every function's events: each one's `Type` and `Properties`.
    fn events(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.resources()
            .filter_map(|resource| path(resource, &["Properties", "Events"])?.as_mapping())
            .flat_map(Mapping::values)
            .filter_map(|event| Some((event.get("Type")?.as_str()?, event.get("Properties")?)))
    }

    /// A function's property at `keys` under its `Properties`, else under
    /// `Globals.Function`, resolved.
    fn function_setting(&self, function: &str, keys: &[&str]) -> Option<String> {
        let own = self
            .resource(function)
            .and_then(|resource| path(resource.get("Properties")?, keys));
        let global = || path(self.root.get("Globals")?.get("Function")?, keys);
        self.resolve(own.or_else(global)?)
    }

    /// `value` at the parameters' defaults (the module's doc says how).
    fn resolve(&self, value: &Value) -> Option<String> {
        let Value::Tagged(tagged) = value else {
            return scalar(value);
        };
        if tagged.tag == "Ref" {
            return self.parameter_default(tagged.value.as_str()?);
        }
        if tagged.tag == "FindInMap" {
            let [map, key, name] = tagged.value.as_sequence()?.as_slice() else {
                return None;
            };
            let map = self.root.get("Mappings")?.get(self.resolve(map)?)?;
            let row = entry(map, &self.resolve(key)?)?;
            return scalar(entry(row, &self.resolve(name)?)?);
        }
        None
    }
}

/// The value at `keys` under `value`.
fn path<'a>(value: &'a Value, keys: &[&str]) -> Option<&'a Value> {
    keys.iter().try_fold(value, |value, key| value.get(key))
}

/// The entry of `mapping` whose key reads `key` (quoted or not: `"1000"`
/// and `1000` are one key here).
fn entry<'a>(mapping: &'a Value, key: &str) -> Option<&'a Value> {
    mapping
        .as_mapping()?
        .iter()
        .find_map(|(name, value)| (scalar(name)? == key).then_some(value))
}

/// A string, number or boolean as text; nothing for anything else.
fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        Value::Bool(flag) => Some(flag.to_string()),
        _ => None,
    }
}

/// `!GetAtt Resource.Attribute` (or `[Resource, Attribute]`) as its parts.
fn attribute_of(value: &Value) -> Option<(&str, &str)> {
    let Value::Tagged(tagged) = value else {
        return None;
    };
    if tagged.tag != "GetAtt" {
        return None;
    }
    match &tagged.value {
        Value::String(text) => text.split_once('.'),
        Value::Sequence(parts) => match parts.as_slice() {
            [resource, attribute] => Some((resource.as_str()?, attribute.as_str()?)),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests;
