use super::*;
use crate::webhooks::attempt::{Failure, FailureKind};
use crate::webhooks::deliver::items::DeliveryState;

fn delivery() -> Delivery {
    Delivery {
        partition: "WEBHOOK#1#0".into(),
        webhook_id: 1,
        event_id: "e".into(),
        event_type: "stock.changed".into(),
        body: r#"{"type":"stock.changed","timestamp":"2026-11-26T20:00:00.000Z","data":{}}"#.into(),
        state: DeliveryState::Pending,
        attempts: vec![],
        attempt_count: 0,
        schedule_step: 0,
        next_attempt_at: None,
        created_at: None,
        claims: None,
        schedule_claim: None,
        stored: true,
    }
}

#[test]
fn a_success_counts_its_duration_and_the_delay_since_the_event() {
    let now: DateTime<Utc> = "2026-11-26T20:00:01.500Z".parse().unwrap();
    let attempt = Attempt {
        at: now,
        duration_ms: 40,
        outcome: Outcome::Delivered { status: 200 },
    };
    let line = emf(&delivery(), &attempt, now);
    assert_eq!(line["WebhookDeliveryDelay"], 1500);
    assert_eq!(line["WebhookAttempts"], 1);
    let directives = line["_aws"]["CloudWatchMetrics"].as_array().unwrap();
    assert_eq!(directives.len(), 1);
    assert_eq!(directives[0]["Metrics"].as_array().unwrap().len(), 3);
}

#[test]
fn a_failure_is_counted_by_its_kind() {
    let now = Utc::now();
    let failure = Failure {
        kind: FailureKind::BlockedAddress,
        status: None,
        retry_after: None,
    };
    let attempt = Attempt {
        at: now,
        duration_ms: 1,
        outcome: Outcome::Failed(failure),
    };
    let line = emf(&delivery(), &attempt, now);
    assert_eq!(line["ErrorKind"], "blocked_address");
    assert_eq!(
        line["_aws"]["CloudWatchMetrics"][1]["Dimensions"],
        json!([["Function", "ErrorKind"]])
    );
    assert!(line.get("WebhookDeliveryDelay").is_none());
}

#[test]
fn in_lambda_the_attempt_s_one_line_is_its_metrics_with_its_ids() {
    let now = Utc::now();
    let attempt = Attempt {
        at: now,
        duration_ms: 7,
        outcome: Outcome::Delivered { status: 204 },
    };
    let next = NextState {
        state: DeliveryState::Delivered,
        next_attempt_at: None,
        schedule_step: 1,
    };
    let line = attempt_line(&delivery(), &attempt, &next, false, now);
    assert_eq!(line["message"], "webhook attempt");
    assert_eq!(line["webhook_id"], 1);
    assert_eq!(line["event_id"], "e");
    assert_eq!(line["status"], 204);
    assert_eq!(line["state"], "delivered");
    assert_eq!(line["WebhookAttempts"], 1);
    // Said once: the duration is the metric's, not a second field.
    assert_eq!(line["WebhookAttemptDuration"], 7);
    assert!(line.get("duration_ms").is_none());
}
