//! A request's line: an EMF document with its metrics, dimensions and
//! properties, written by an [`Emitter`].

use super::tally::Counts;
use super::{COUNTERS, NAMESPACE};
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One request, as its line describes it.
#[derive(Debug, Clone)]
pub struct RequestMetrics<'a> {
    /// `GET /pets/{petId}`, or `unmatched`.
    pub route: &'a str,
    pub status: u16,
    pub latency: Duration,
    pub counts: Counts,
    pub request_id: &'a str,
    /// The id of the caller's key, when it sent a valid one.
    pub key_id: Option<u64>,
    /// DynamoDB operations the request sent.
    pub db_calls: u32,
    /// Attempts the SDK made again within them (left out when 0).
    pub sdk_retries: u32,
    /// The X-Ray trace id (`1-...`) of a request X-Ray recorded.
    pub trace_id: Option<&'a str>,
}

type Write = dyn Fn(&str) + Send + Sync;

/// Where metrics lines go, and the `Function` (and `Version`) dimension they carry.
#[derive(Clone)]
pub struct Emitter {
    function: &'static str,
    /// The function version serving the requests, when known.
    version: Option<&'static str>,
    write: Option<Arc<Write>>,
}

impl std::fmt::Debug for Emitter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Emitter")
            .field("function", &self.function)
            .field("version", &self.version)
            .field("on", &self.write.is_some())
            .finish()
    }
}

impl Emitter {
    /// Writes nothing: local runs and tests, unless they ask.
    pub fn off() -> Emitter {
        Emitter {
            function: "",
            version: None,
            write: None,
        }
    }

    /// One line per request on stdout, where Lambda sends it to CloudWatch
    /// Logs, with the `Version` Lambda runs (read here, once per process).
    pub fn stdout(function: &'static str) -> Emitter {
        let version = std::env::var("AWS_LAMBDA_FUNCTION_VERSION")
            .ok()
            .filter(|v| !v.is_empty());
        Emitter::to(function, |line| {
            use std::io::Write as _;
            // One `write_all` per line, so lines never interleave; a full or
            // closed stdout loses the line, never the response.
            let _ = std::io::stdout().lock().write_all(line.as_bytes());
        })
        .with_version(version.map(|v| &*Box::leak(v.into_boxed_str())))
    }

    /// The same, with `version` as the `Version` dimension.
    pub fn with_version(self, version: Option<&'static str>) -> Emitter {
        Emitter { version, ..self }
    }

    /// Hands each line (newline included) to `write`; tests capture them so.
    pub fn to(function: &'static str, write: impl Fn(&str) + Send + Sync + 'static) -> Emitter {
        Emitter {
            function,
            version: None,
            write: Some(Arc::new(write)),
        }
    }

    pub fn is_on(&self) -> bool {
        self.write.is_some()
    }

    /// Writes `request`'s line.
    pub fn emit(&self, request: &RequestMetrics<'_>) {
        let Some(write) = &self.write else {
            return;
        };
        let timestamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX));
        let document = Document {
            function: self.function,
            version: self.version,
            timestamp,
            request,
        };
        // Strings, integers and a finite float: it always serializes.
        if let Ok(mut line) = serde_json::to_string(&document) {
            line.push('\n');
            write(&line);
        }
    }
}

/// An EMF document: the `_aws` metadata, then dimensions, values and
/// properties as top-level keys.
struct Document<'a> {
    function: &'static str,
    version: Option<&'static str>,
    timestamp: u64,
    request: &'a RequestMetrics<'a>,
}

#[derive(Serialize)]
struct Aws<'a> {
    #[serde(rename = "Timestamp")]
    timestamp: u64,
    #[serde(rename = "CloudWatchMetrics")]
    cloudwatch_metrics: &'a [Directive<'a>],
}

#[derive(Serialize)]
struct Directive<'a> {
    #[serde(rename = "Namespace")]
    namespace: &'static str,
    #[serde(rename = "Dimensions")]
    dimensions: &'static [&'static [&'static str]],
    #[serde(rename = "Metrics")]
    metrics: &'a [Definition],
}

#[derive(Serialize, Clone, Copy)]
struct Definition {
    #[serde(rename = "Name")]
    name: &'static str,
    #[serde(rename = "Unit")]
    unit: &'static str,
}

const LATENCY: Definition = Definition {
    name: "Latency",
    unit: "Milliseconds",
};

/// The dimension sets of `Latency`, so of the request counts.
const BY_REQUEST: &[&[&str]] = &[
    &["Function"],
    &["Function", "Route"],
    &["Function", "StatusClass"],
];

/// The same and, where the version is known, by version too.
const BY_REQUEST_AND_VERSION: &[&[&str]] = &[
    &["Function"],
    &["Function", "Route"],
    &["Function", "StatusClass"],
    &["Function", "Version", "StatusClass"],
];

impl Serialize for Document<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let request = self.request;
        let mut counted = [LATENCY; COUNTERS];
        let mut listed = 0;
        for (metric, _) in request.counts.nonzero() {
            counted[listed] = Definition {
                name: metric.name(),
                unit: "Count",
            };
            listed += 1;
        }
        let directives = [
            Directive {
                namespace: NAMESPACE,
                dimensions: if self.version.is_some() {
                    BY_REQUEST_AND_VERSION
                } else {
                    BY_REQUEST
                },
                metrics: &[LATENCY],
            },
            Directive {
                namespace: NAMESPACE,
                dimensions: &[&["Function"]],
                metrics: &counted[..listed],
            },
        ];
        // The counts' directive only when something was counted.
        let used = if listed == 0 { 1 } else { 2 };
        let aws = Aws {
            timestamp: self.timestamp,
            cloudwatch_metrics: &directives[..used],
        };
        let status_class = match request.status {
            200..=299 => "2xx",
            400..=499 => "4xx",
            500..=599 => "5xx",
            100..=199 => "1xx",
            _ => "3xx",
        };
        // Milliseconds with microseconds kept.
        let latency = (request.latency.as_secs_f64() * 1_000_000.0).round() / 1000.0;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("_aws", &aws)?;
        map.serialize_entry("Function", self.function)?;
        if let Some(version) = self.version {
            map.serialize_entry("Version", version)?;
        }
        map.serialize_entry("Route", request.route)?;
        map.serialize_entry("StatusClass", status_class)?;
        map.serialize_entry("Latency", &latency)?;
        for (metric, n) in request.counts.nonzero() {
            map.serialize_entry(metric.name(), &n)?;
        }
        map.serialize_entry("requestId", request.request_id)?;
        map.serialize_entry("status", &request.status)?;
        if let Some(key_id) = request.key_id {
            map.serialize_entry("keyId", &key_id)?;
        }
        map.serialize_entry("dbCalls", &request.db_calls)?;
        if request.sdk_retries > 0 {
            map.serialize_entry("sdkRetries", &request.sdk_retries)?;
        }
        if let Some(trace_id) = request.trace_id {
            map.serialize_entry("traceId", trace_id)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::super::Metric;
    use super::*;
    use serde_json::Value;
    use std::sync::Mutex;

    fn captured() -> (Emitter, Arc<Mutex<String>>) {
        let out = Arc::new(Mutex::new(String::new()));
        let sink = out.clone();
        let emitter = Emitter::to("pets", move |line| {
            sink.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push_str(line)
        });
        (emitter, out)
    }

    fn plain(route: &'static str, status: u16) -> RequestMetrics<'static> {
        RequestMetrics {
            route,
            status,
            latency: Duration::from_micros(2_345),
            counts: Counts::default(),
            request_id: "r-1",
            key_id: None,
            db_calls: 0,
            sdk_retries: 0,
            trace_id: None,
        }
    }

    fn line(emitter_out: &Arc<Mutex<String>>) -> Value {
        let text = emitter_out
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        assert!(text.ends_with('\n') && text.lines().count() == 1, "{text}");
        serde_json::from_str(&text).unwrap_or_default()
    }

    #[test]
    fn a_line_is_an_emf_document_with_its_values_at_the_top() {
        let (emitter, out) = captured();
        let mut counts = Counts::default();
        counts.add(Metric::UnitsSold, 3);
        emitter.emit(&RequestMetrics {
            counts,
            key_id: Some(375_071_234_567_890),
            db_calls: 4,
            sdk_retries: 1,
            trace_id: Some("1-5759e988-bd862e3fe1be46a994272793"),
            ..plain("POST /store/orders", 201)
        });
        let line = line(&out);
        let directives = &line["_aws"]["CloudWatchMetrics"];
        assert_eq!(directives[0]["Namespace"], "PetStore");
        assert_eq!(directives[0]["Metrics"][0]["Name"], "Latency");
        assert_eq!(
            directives[1]["Dimensions"],
            serde_json::json!([["Function"]])
        );
        assert_eq!(directives[1]["Metrics"][0]["Name"], "UnitsSold");
        assert_eq!(line["Function"], "pets");
        assert_eq!(line["StatusClass"], "2xx");
        assert_eq!(line["Latency"], 2.345);
        assert_eq!(line["UnitsSold"], 3);
        assert!(line.get("DbRetries").is_none(), "zero counts are left out");
        assert_eq!(line["status"], 201);
        assert_eq!(line["keyId"], 375_071_234_567_890_u64);
        assert_eq!(line["dbCalls"], 4);
        assert_eq!(line["sdkRetries"], 1);
        assert_eq!(line["traceId"], "1-5759e988-bd862e3fe1be46a994272793");
    }

    #[test]
    fn a_request_that_counted_nothing_has_one_directive_and_no_optional_property() {
        let (emitter, out) = captured();
        emitter.emit(&plain("GET /pets", 200));
        let line = line(&out);
        let directives = line["_aws"]["CloudWatchMetrics"].as_array().cloned();
        assert_eq!(directives.map(|d| d.len()), Some(1), "{line}");
        for absent in ["keyId", "sdkRetries", "traceId", "Requests"] {
            assert!(line.get(absent).is_none(), "{absent}: {line}");
        }
        assert_eq!(line["dbCalls"], 0);
    }

    #[test]
    fn a_known_version_is_a_dimension_of_latency_by_status_class() {
        let by_version = serde_json::json!(["Function", "Version", "StatusClass"]);
        let (emitter, out) = captured();
        emitter
            .with_version(Some("42"))
            .emit(&plain("GET /pets", 500));
        let versioned = line(&out);
        assert_eq!(versioned["Version"], "42");
        assert_eq!(versioned["StatusClass"], "5xx");
        let sets = versioned["_aws"]["CloudWatchMetrics"][0]["Dimensions"].clone();
        assert!(
            sets.as_array().is_some_and(|s| s.contains(&by_version)),
            "{versioned}"
        );

        let (emitter, out) = captured();
        emitter.emit(&plain("GET /pets", 500));
        let unversioned = line(&out);
        assert!(unversioned.get("Version").is_none(), "{unversioned}");
        let sets = unversioned["_aws"]["CloudWatchMetrics"][0]["Dimensions"].clone();
        assert_eq!(sets.as_array().map(Vec::len), Some(3));
    }

    #[test]
    fn an_emitter_that_is_off_writes_nothing() {
        assert!(!Emitter::off().is_on());
        Emitter::off().emit(&plain("unmatched", 404));
    }
}
