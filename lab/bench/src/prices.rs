//! The prices the cost model applies: one dated table, us-east-1 list
//! prices for arm64 functions and the standard table and log classes.

use crate::results::Price;

pub const PRICES_AS_OF: &str =
    "us-east-1 list prices, arm64, standard table class and log class, as of 2026-11";

/// The price table: every dollar figure the model uses.
pub struct Prices {
    /// HTTP API requests, first 300 million a month; a request of more than
    /// 512 KB counts once per 512 KB (ours are far smaller).
    pub http_api_per_million: f64,
    pub lambda_per_million_requests: f64,
    /// arm64, first 6 billion GB-seconds a month.
    pub lambda_per_gb_second: f64,
    /// On-demand, per million write and read request units.
    pub dynamodb_per_million_writes: f64,
    pub dynamodb_per_million_reads: f64,
    /// Standard log class, per GB ingested (GB of 1024³ bytes).
    pub logs_per_gb: f64,
    /// Per million traces recorded.
    pub xray_per_million_traces: f64,
    /// Per custom metric a month, first 10,000.
    pub metric_per_month: f64,
    /// Per million custom events put on a bus (each 64 KB chunk one event).
    pub eventbridge_per_million_events: f64,
    /// SQS standard queues, per million requests after the first million a
    /// month (a batch of up to 10 is one request; each 64 KB of payload one).
    pub sqs_per_million_requests: f64,
}

/// Sources: aws.amazon.com/api-gateway/pricing, /lambda/pricing,
/// /dynamodb/pricing/on-demand, /cloudwatch/pricing, /xray/pricing,
/// /eventbridge/pricing, /sqs/pricing.
pub const PRICES: Prices = Prices {
    http_api_per_million: 1.00,
    lambda_per_million_requests: 0.20,
    lambda_per_gb_second: 0.000_013_333_4,
    dynamodb_per_million_writes: 0.625,
    dynamodb_per_million_reads: 0.125,
    logs_per_gb: 0.50,
    xray_per_million_traces: 5.00,
    metric_per_month: 0.30,
    eventbridge_per_million_events: 1.00,
    sqs_per_million_requests: 0.40,
};

impl Prices {
    pub fn table(&self) -> Vec<Price> {
        let price = |item: &str, usd: f64, per: &str| Price {
            item: item.into(),
            usd,
            per: per.into(),
        };
        vec![
            price(
                "API Gateway HTTP API",
                self.http_api_per_million,
                "million requests",
            ),
            price(
                "Lambda requests",
                self.lambda_per_million_requests,
                "million requests",
            ),
            price(
                "Lambda duration, arm64",
                self.lambda_per_gb_second,
                "GB-second",
            ),
            price(
                "DynamoDB on-demand writes",
                self.dynamodb_per_million_writes,
                "million write units",
            ),
            price(
                "DynamoDB on-demand reads",
                self.dynamodb_per_million_reads,
                "million read units",
            ),
            price("CloudWatch Logs ingestion", self.logs_per_gb, "GB"),
            price(
                "X-Ray traces recorded",
                self.xray_per_million_traces,
                "million traces",
            ),
            price(
                "CloudWatch custom metrics",
                self.metric_per_month,
                "metric-month",
            ),
            price(
                "EventBridge custom events",
                self.eventbridge_per_million_events,
                "million events",
            ),
            price(
                "SQS standard queue requests",
                self.sqs_per_million_requests,
                "million requests",
            ),
        ]
    }
}
