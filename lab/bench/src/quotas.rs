//! The account's default quotas on a request's path, and the load of each
//! mix at which each binds: the scale model past the partitions.
//!
//! The partition model (`lab/partitions`) shows no partition of the
//! tables binds before 10,000 orders/s with 50,000 reads/s. A new account
//! meets other limits far earlier: the stage's own throttle (a template
//! parameter), API Gateway's account throttle, Lambda's concurrency,
//! DynamoDB's per-table throughput, EventBridge's `PutEvents` rate. Each
//! binds where a mix's requests use it up: a request's use of each comes
//! from this run's own figures (`calls.rs`, `capacity.rs`, `events.rs`),
//! its Lambda time from the measured request less DynamoDB Local's share,
//! plus [`DYNAMODB_ROUND_TRIP_MS`] per DynamoDB call as on AWS.

use crate::cost::MIXES;
use crate::results::{MixQuotas, OperationCalls, QuotaBinding, QuotaNeed, Quotas};
use petstore_lab_template::Template;
use std::collections::BTreeMap;

/// What a DynamoDB call takes on AWS, in the same region, over a warm
/// connection: single-digit milliseconds (DynamoDB's own figure); a
/// transaction takes longer than a `GetItem`, so one round figure above
/// both. Counted as if every call of a request ran one after another (the
/// limiter's write runs beside a read's query, so reads are overstated).
pub const DYNAMODB_ROUND_TRIP_MS: f64 = 8.0;
/// The load the service is built for (docs/partitions.md).
pub const TARGET_ORDERS_PER_SECOND: f64 = 10_000.0;
pub const TARGET_READS_PER_SECOND: f64 = 50_000.0;
/// An increase asks for this much more than the target needs.
const HEADROOM: f64 = 1.5;
/// `PutEvents` takes at most 10 entries; the events function sends full
/// batches under load (`functions/events`).
const EVENTS_PER_PUT_EVENTS: f64 = 10.0;
/// Lambda adds at most 1,000 execution environments per function every
/// 10 seconds (not adjustable).
const LAMBDA_SCALING_PER_10_SECONDS: f64 = 1_000.0;

/// What a request uses of each quota's resource.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Resource {
    /// API Gateway requests (the stage's throttle and the account's).
    Requests,
    /// Lambda: seconds of an execution environment (concurrency).
    LambdaSeconds,
    /// DynamoDB read units on the data table and its indexes.
    DataReads,
    /// DynamoDB write units on the data table itself.
    DataTableWrites,
    /// DynamoDB write units on the data table's indexes, all together
    /// (each index has the table-level quota to itself: an upper bound).
    DataIndexWrites,
    /// DynamoDB write units on the rate-limit counter table.
    CounterWrites,
    /// EventBridge `PutEvents` calls.
    PutEvents,
}

struct Quota {
    service: &'static str,
    name: &'static str,
    /// The Service Quotas code to ask an increase under; `None` for the
    /// template's own setting.
    code: Option<&'static str>,
    /// A new account's default, in us-east-1.
    default: f64,
    unit: &'static str,
    resource: Resource,
}

/// The defaults in us-east-1 (several other regions have lower ones: API
/// Gateway 2,500 requests/s in some, EventBridge `PutEvents` 600 to 2,400).
const ACCOUNT_QUOTAS: [Quota; 7] = [
    Quota {
        service: "API Gateway",
        name: "Throttle rate (account, per region)",
        code: Some("L-8A5B8E43"),
        default: 10_000.0,
        unit: "requests/s",
        resource: Resource::Requests,
    },
    Quota {
        service: "Lambda",
        name: "Concurrent executions",
        code: Some("L-B99A9384"),
        default: 1_000.0,
        unit: "environments",
        resource: Resource::LambdaSeconds,
    },
    Quota {
        service: "DynamoDB",
        name: "Table-level read throughput limit (data table)",
        code: Some("L-CF0CBE56"),
        default: 40_000.0,
        unit: "read units/s",
        resource: Resource::DataReads,
    },
    Quota {
        service: "DynamoDB",
        name: "Table-level write throughput limit (data table)",
        code: Some("L-AB614373"),
        default: 40_000.0,
        unit: "write units/s",
        resource: Resource::DataTableWrites,
    },
    Quota {
        service: "DynamoDB",
        name: "Table-level write throughput limit (data table's indexes, together)",
        code: Some("L-AB614373"),
        default: 40_000.0,
        unit: "write units/s",
        resource: Resource::DataIndexWrites,
    },
    Quota {
        service: "DynamoDB",
        name: "Table-level write throughput limit (rate-limit table)",
        code: Some("L-AB614373"),
        default: 40_000.0,
        unit: "write units/s",
        resource: Resource::CounterWrites,
    },
    Quota {
        service: "EventBridge",
        name: "PutEvents throttle limit",
        code: Some("L-9B653E91"),
        default: 10_000.0,
        unit: "calls/s",
        resource: Resource::PutEvents,
    },
];

/// A mix's use of each resource per request, from the run's figures.
fn use_per_request(
    weights: &[(&str, f64)],
    calls: &BTreeMap<String, OperationCalls>,
    events_per_change: f64,
) -> Option<BTreeMap<Resource, f64>> {
    let total: f64 = weights.iter().map(|(_, w)| w).sum();
    let mut uses = BTreeMap::new();
    let mut add = |resource, amount: f64| *uses.entry(resource).or_insert(0.0) += amount;
    for (operation, weight) in weights {
        let share = weight / total;
        let one = calls.get(*operation)?;
        let own_ms = (one.request_ms - one.dynamodb_ms).max(0.0);
        let lambda_ms = own_ms + one.calls_per_request * DYNAMODB_ROUND_TRIP_MS;
        let counter: f64 = one
            .write_units_by_table
            .iter()
            .filter(|(table, _)| table.contains("ratelimit"))
            .map(|(_, units)| units)
            .sum();
        let data_writes: f64 = one.write_units_by_table.values().sum::<f64>() - counter;
        let changes = !operation.starts_with("GET ");
        add(Resource::Requests, share);
        add(Resource::LambdaSeconds, share * lambda_ms / 1e3);
        add(Resource::DataReads, share * one.read_units_per_request);
        let index = one.index_write_units_per_request;
        add(
            Resource::DataTableWrites,
            share * (data_writes - index).max(0.0),
        );
        add(Resource::DataIndexWrites, share * index);
        add(Resource::CounterWrites, share * counter);
        let events = if changes { events_per_change } else { 0.0 };
        add(Resource::PutEvents, share * events / EVENTS_PER_PUT_EVENTS);
    }
    Some(uses)
}

/// The stage's throttle: the first limit on every mix, and the template's
/// own (`OrderRate`'s `ThrottleRate`).
fn stage_throttle(template: &Template) -> Option<Quota> {
    Some(Quota {
        service: "API Gateway",
        name: "Stage throttle (template: OrderRate)",
        code: None,
        default: template.stage_throttle()?.rate,
        unit: "requests/s",
        resource: Resource::Requests,
    })
}

/// Where each quota binds for each mix, in order, and what 10,000 orders/s
/// with 50,000 reads/s needs of each. `None` when a mix's operations were
/// not all measured.
pub fn quotas(
    calls: &BTreeMap<String, OperationCalls>,
    events_per_change: f64,
    template: &Template,
) -> Option<Quotas> {
    let quotas: Vec<Quota> = stage_throttle(template)
        .into_iter()
        .chain(ACCOUNT_QUOTAS)
        .collect();
    let mut by_mix = Vec::new();
    let mut uses_by_mix = BTreeMap::new();
    for (mix, weights) in MIXES {
        let uses = use_per_request(weights, calls, events_per_change)?;
        let mut binds: Vec<QuotaBinding> = quotas
            .iter()
            .filter_map(|quota| {
                let per_request = *uses.get(&quota.resource)?;
                (per_request > 0.0).then(|| QuotaBinding {
                    quota: quota.name.into(),
                    per_request,
                    binds_at_requests_per_second: quota.default / per_request,
                })
            })
            .collect();
        binds.sort_by(|a, b| {
            a.binds_at_requests_per_second
                .total_cmp(&b.binds_at_requests_per_second)
        });
        by_mix.push(MixQuotas {
            mix: mix.into(),
            lambda_ms_per_request: uses.get(&Resource::LambdaSeconds).copied().unwrap_or(0.0) * 1e3,
            binds,
        });
        uses_by_mix.insert(mix, uses);
    }
    let target = target_load();
    let need = |resource: Resource| -> f64 {
        target
            .iter()
            .map(|(mix, rps)| rps * uses_by_mix[mix].get(&resource).copied().unwrap_or(0.0))
            .sum()
    };
    let needs: Vec<QuotaNeed> = quotas
        .iter()
        .map(|quota| {
            let needed = need(quota.resource);
            QuotaNeed {
                service: quota.service.into(),
                quota: quota.name.into(),
                code: quota.code.map(Into::into),
                unit: quota.unit.into(),
                default: quota.default,
                needed,
                request: (needed > quota.default).then(|| round_up(needed * HEADROOM)),
            }
        })
        .collect();
    let concurrency = need(Resource::LambdaSeconds);
    Some(Quotas {
        dynamodb_round_trip_ms: DYNAMODB_ROUND_TRIP_MS,
        region: "us-east-1".into(),
        target_orders_per_second: TARGET_ORDERS_PER_SECOND,
        target_reads_per_second: TARGET_READS_PER_SECOND,
        target_requests_per_second: target.iter().map(|(_, rps)| rps).sum(),
        by_mix,
        needs,
        // Two functions share the load (pets, store), each scaling at the
        // rate on its own: counted as if one took it all, an upper bound.
        lambda_ramp_seconds: 10.0 * (concurrency / LAMBDA_SCALING_PER_10_SECONDS).ceil(),
    })
}

/// The target as requests a second of each mix: the order mix sends its
/// weights' sum of requests per order placed.
fn target_load() -> Vec<(&'static str, f64)> {
    let (_, order_mix) = MIXES[1];
    let requests_per_order: f64 = order_mix.iter().map(|(_, w)| w).sum::<f64>() / order_mix[0].1;
    vec![
        ("read", TARGET_READS_PER_SECOND),
        ("order", TARGET_ORDERS_PER_SECOND * requests_per_order),
    ]
}

/// Up to two significant figures, as a quota request is written.
fn round_up(value: f64) -> f64 {
    let step = 10f64.powf(value.log10().floor() - 1.0).max(1.0);
    (value / step).ceil() * step
}

#[cfg(test)]
mod tests {
    use super::*;

    fn operation(
        request_ms: f64,
        calls: f64,
        reads: f64,
        writes: &[(&str, f64)],
    ) -> OperationCalls {
        OperationCalls {
            repeats: 1,
            statuses: Default::default(),
            calls_per_request: calls,
            by_call: Default::default(),
            read_units_per_request: reads,
            write_units_per_request: writes.iter().map(|(_, u)| u).sum(),
            index_write_units_per_request: 0.0,
            refused_write_units_per_request: 0.0,
            write_units_by_table: writes.iter().map(|(t, u)| (t.to_string(), *u)).collect(),
            dynamodb_bytes_per_request: 0.0,
            log_bytes_per_request: 0.0,
            log_lines_per_request: 0.0,
            request_ms,
            dynamodb_ms: 0.0,
        }
    }

    fn measured() -> BTreeMap<String, OperationCalls> {
        MIXES
            .iter()
            .flat_map(|(_, weights)| weights.iter())
            .map(|(op, _)| {
                let writes: &[(&str, f64)] = if op.starts_with("GET ") {
                    &[("petstore-ratelimits", 1.0)]
                } else {
                    &[("petstore", 6.0), ("petstore-ratelimits", 1.0)]
                };
                (op.to_string(), operation(2.0, 2.0, 0.5, writes))
            })
            .collect()
    }

    /// A stage throttle of 1,000 requests a second.
    fn template() -> Template {
        let text = concat!(
            "Resources:\n  Api:\n    Type: AWS::Serverless::HttpApi\n    Properties:\n",
            "      DefaultRouteSettings:\n",
            "        ThrottlingRateLimit: 1000\n        ThrottlingBurstLimit: 2000\n",
        );
        Template::parse(text).unwrap()
    }

    #[test]
    fn the_stage_throttle_is_the_templates_order_rate_at_its_default() {
        let template = Template::parse(include_str!("../../../template.yaml")).unwrap();
        let throttle = stage_throttle(&template).expect("the deployed stage's throttle");
        assert_eq!(throttle.default, 1000.0);
        assert!(stage_throttle(&Template::default()).is_none());
    }

    #[test]
    fn the_stage_throttle_binds_first_then_the_account_throttle() {
        let quotas = quotas(&measured(), 2.0, &template()).expect("every operation measured");
        let read = &quotas.by_mix[0];
        assert_eq!(read.mix, "read");
        assert_eq!(read.binds[0].binds_at_requests_per_second, 1_000.0);
        // 2 ms + 2 calls of 8 ms = 18 ms: 1,000 environments serve 55,555/s,
        // after API Gateway's 10,000/s and the counter table's 40,000, before
        // the data table's 80,000 (half a read unit a request).
        assert!((read.lambda_ms_per_request - 18.0).abs() < 1e-9);
        let order: Vec<&str> = read.binds.iter().map(|b| b.quota.as_str()).collect();
        assert_eq!(
            order,
            [
                "Stage throttle (template: OrderRate)",
                "Throttle rate (account, per region)",
                "Table-level write throughput limit (rate-limit table)",
                "Concurrent executions",
                "Table-level read throughput limit (data table)",
            ]
        );
    }

    #[test]
    fn the_target_asks_for_more_of_what_it_needs_only() {
        let quotas = quotas(&measured(), 2.0, &template()).expect("every operation measured");
        let need = |name: &str| {
            quotas
                .needs
                .iter()
                .find(|n| n.quota.starts_with(name))
                .expect("listed")
        };
        // 50,000 reads/s + 20,000 order-mix requests/s.
        assert_eq!(quotas.target_requests_per_second, 70_000.0);
        let api = need("Throttle rate");
        assert_eq!(api.needed, 70_000.0);
        assert_eq!(api.request, Some(110_000.0));
        // 20,000 changes/s x 2 events / 10 a call: 4,000 calls/s, under 10,000.
        let events = need("PutEvents");
        assert!((events.needed - 4_000.0).abs() < 1e-6);
        assert_eq!(events.request, None);
    }

    #[test]
    fn an_unmeasured_operation_gives_no_model() {
        let mut calls = measured();
        calls.remove("POST /store/orders");
        assert!(quotas(&calls, 2.0, &template()).is_none());
    }

    #[test]
    fn requests_round_up_to_two_figures() {
        assert_eq!(round_up(105_000.0), 110_000.0);
        assert_eq!(round_up(1_234.0), 1_300.0);
        assert_eq!(round_up(7.2), 8.0);
    }
}
