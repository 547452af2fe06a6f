//! What a healthy version answers. No check changes data, so each is as safe
//! against production as against a new version. Most need no key; the keyed
//! one sends the check's own short-lived key ([`crate::key`]) and reads the
//! customer's own order list, which queries the owner index of the version's
//! stored layout: a version that cannot read the deployed indexes answers it
//! 500 and never takes traffic.

use std::collections::BTreeMap;

/// The stack's functions a release publishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Function {
    Pets,
    Store,
    Docs,
    Events,
    Webhooks,
}

impl Function {
    pub const ALL: [Function; 5] = [
        Function::Pets,
        Function::Store,
        Function::Docs,
        Function::Events,
        Function::Webhooks,
    ];

    /// The binary's name, which is also the function's name under `cargo lambda watch`.
    pub fn binary(self) -> &'static str {
        match self {
            Function::Pets => "pets",
            Function::Store => "store",
            Function::Docs => "docs",
            Function::Events => "events",
            Function::Webhooks => "webhooks",
        }
    }

    /// The variable that names the deployed function in the hook's environment.
    pub fn variable(self) -> &'static str {
        match self {
            Function::Pets => "PETS_FUNCTION",
            Function::Store => "STORE_FUNCTION",
            Function::Docs => "DOCS_FUNCTION",
            Function::Events => "EVENTS_FUNCTION",
            Function::Webhooks => "WEBHOOKS_FUNCTION",
        }
    }
}

/// The headers every answer of the rate-limited wrapper carries, a refusal's too.
pub const RATE_LIMIT_HEADERS: [&str; 5] = [
    "x-ratelimit-limit",
    "x-ratelimit-remaining",
    "x-ratelimit-reset",
    "ratelimit-policy",
    "ratelimit",
];

/// The API reference's files and the names the docs function serves them
/// under (their content's hash in each): the one list `scripts/docs-assets.sh`
/// writes, which the page links to as well.
#[path = "../../../shared/src/http/docs_assets.rs"]
mod docs_assets;

/// `path` as sent: a `{file}` in it is that docs file's served name, which
/// changes whenever the file does.
pub fn resolved(path: &str) -> String {
    let Some((head, rest)) = path.split_once('{') else {
        return path.to_string();
    };
    let Some((file, tail)) = rest.split_once('}') else {
        return path.to_string();
    };
    let served = docs_assets::DOCS_ASSETS
        .iter()
        .find(|(name, _)| *name == file)
        .map_or(file, |(_, served)| served);
    format!("{head}{served}{tail}")
}

/// What a check sends.
#[derive(Debug, Clone, Copy)]
pub enum Probe {
    /// A request, and the answer it must get.
    Http {
        method: &'static str,
        /// With its query string, if any.
        path: &'static str,
        /// Sent with the check's own key (else with none).
        keyed: bool,
        status: u16,
        /// Headers the answer must have (lower case).
        headers: &'static [&'static str],
        /// The start of the answer's Content-Type.
        content_type: &'static str,
    },
    /// A batch of no stream records: answered with no failure.
    EmptyStreamBatch,
}

#[derive(Debug, Clone, Copy)]
pub struct Check {
    pub function: Function,
    pub name: &'static str,
    pub probe: Probe,
}

pub const CHECKS: &[Check] = &[
    Check {
        function: Function::Pets,
        name: "GET /openapi.json without a key: the contract, 200",
        probe: Probe::Http {
            method: "GET",
            path: "/openapi.json",
            keyed: false,
            status: 200,
            headers: &[],
            content_type: "application/json",
        },
    },
    Check {
        function: Function::Pets,
        name: "GET /pets without a key: 401 with the rate-limit headers",
        probe: Probe::Http {
            method: "GET",
            path: "/pets",
            keyed: false,
            status: 401,
            headers: &RATE_LIMIT_HEADERS,
            content_type: "application/json",
        },
    },
    Check {
        function: Function::Store,
        name: "GET /store/inventory without a key: 401 with the rate-limit headers",
        probe: Probe::Http {
            method: "GET",
            path: "/store/inventory",
            keyed: false,
            status: 401,
            headers: &RATE_LIMIT_HEADERS,
            content_type: "application/json",
        },
    },
    Check {
        function: Function::Store,
        name: "GET /store/orders?limit=1 with the check's own key: the owner index reads, 200",
        probe: Probe::Http {
            method: "GET",
            path: KEYED_ORDERS_PATH,
            keyed: true,
            status: 200,
            headers: &RATE_LIMIT_HEADERS,
            content_type: "application/json",
        },
    },
    Check {
        function: Function::Docs,
        name: "GET /docs/assets/docs.js: the API reference's script, 200",
        probe: Probe::Http {
            method: "GET",
            path: "/docs/assets/{docs.js}",
            keyed: false,
            status: 200,
            headers: &[],
            content_type: "text/javascript",
        },
    },
    Check {
        function: Function::Events,
        name: "an empty stream batch: no record failed",
        probe: Probe::EmptyStreamBatch,
    },
    // An HTTP request through the same entry point as its SQS batches: a
    // version whose dispatch or wrapper is broken answers it otherwise.
    Check {
        function: Function::Webhooks,
        name: "GET /webhooks without a key: 401 with the rate-limit headers",
        probe: Probe::Http {
            method: "GET",
            path: "/webhooks",
            keyed: false,
            status: 401,
            headers: &RATE_LIMIT_HEADERS,
            content_type: "application/json",
        },
    },
];

/// The keyed check's request: the key's own orders (none), which the store
/// reads from the owner index (GSI4, or GSI4v2 on layout 2).
pub const KEYED_ORDERS_PATH: &str = "/store/orders?limit=1";

impl Check {
    /// Whether the check is sent with the check's own key.
    pub fn keyed(&self) -> bool {
        matches!(self.probe, Probe::Http { keyed: true, .. })
    }
}

/// The checks of `function`.
pub fn of(function: Function) -> impl Iterator<Item = &'static Check> {
    CHECKS.iter().filter(move |c| c.function == function)
}

/// An HTTP answer, whichever way it came.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    pub status: u16,
    /// By lower-case name.
    pub headers: BTreeMap<String, String>,
    pub body: String,
}

/// Whether `answer` is what `probe` must get; why not, if not.
pub fn judge_http(probe: &Probe, answer: &Answer) -> Result<(), String> {
    let Probe::Http {
        status,
        headers,
        content_type,
        ..
    } = probe
    else {
        return Err("not an HTTP check".to_string());
    };
    if answer.status != *status {
        let body: String = answer.body.chars().take(200).collect();
        return Err(format!("status {}, want {status}: {body}", answer.status));
    }
    let missing: Vec<&str> = headers
        .iter()
        .copied()
        .filter(|h| !answer.headers.contains_key(*h))
        .collect();
    if !missing.is_empty() {
        return Err(format!("no {} header", missing.join(", ")));
    }
    let got = answer
        .headers
        .get("content-type")
        .map_or("", String::as_str);
    if !got.starts_with(content_type) {
        return Err(format!("Content-Type {got:?}, want {content_type}"));
    }
    Ok(())
}

/// One check's result.
#[derive(Debug)]
pub struct Outcome {
    pub check: &'static Check,
    pub result: Result<(), String>,
}

/// Prints each outcome on a line of its own; true when all passed.
pub fn report(outcomes: &[Outcome]) -> bool {
    for outcome in outcomes {
        match &outcome.result {
            Ok(()) => println!(
                "ok    {}: {}",
                outcome.check.function.binary(),
                outcome.check.name
            ),
            Err(why) => println!(
                "FAIL  {}: {}: {why}",
                outcome.check.function.binary(),
                outcome.check.name
            ),
        }
    }
    !outcomes.is_empty() && outcomes.iter().all(|o| o.result.is_ok())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_docs_file_is_asked_for_by_its_served_name() {
        let served = resolved("/docs/assets/{docs.js}");
        assert!(served.starts_with("/docs/assets/docs.") && served.ends_with(".js"));
        assert_ne!(served, "/docs/assets/docs.js", "named by its content");
        assert_eq!(resolved("/pets"), "/pets");
    }

    use super::*;

    fn answer(status: u16, headers: &[(&str, &str)]) -> Answer {
        Answer {
            status,
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body: String::new(),
        }
    }

    #[test]
    fn every_function_has_a_check() {
        for function in Function::ALL {
            assert!(of(function).next().is_some(), "{function:?}");
        }
    }

    #[test]
    fn the_store_is_checked_with_a_key_and_without() {
        let store: Vec<&Check> = of(Function::Store).collect();
        assert!(store.iter().any(|c| c.keyed()) && store.iter().any(|c| !c.keyed()));
        assert!(CHECKS
            .iter()
            .filter(|c| c.keyed())
            .all(|c| c.function == Function::Store));
    }

    #[test]
    fn a_refusal_without_the_rate_limit_headers_fails() {
        let probe = CHECKS[1].probe;
        let mut headers: Vec<(&str, &str)> = RATE_LIMIT_HEADERS.iter().map(|h| (*h, "1")).collect();
        headers.push(("content-type", "application/json"));
        assert_eq!(judge_http(&probe, &answer(401, &headers)), Ok(()));
        let why = judge_http(&probe, &answer(401, &headers[1..])).unwrap_err();
        assert!(why.contains("x-ratelimit-limit"), "{why}");
        let why = judge_http(&probe, &answer(503, &headers)).unwrap_err();
        assert!(why.starts_with("status 503"), "{why}");
    }
}
