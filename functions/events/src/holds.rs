//! The hold sweep (contract 3, "Holds lapse"): an EventBridge schedule
//! invokes this function, which lapses every hold that is due
//! (`petstore::db::holds`). Its removals reach the stream like any other and
//! are announced by the same consumer, as `OrderCancelled` marked `lapsed`.

use chrono::{DateTime, Utc};
use petstore::db::holds::Swept;
use petstore::db::{Db, DbError};
use serde_json::Value;

/// Whether `payload` is the schedule's invocation rather than a stream batch.
pub fn is_sweep(payload: &Value) -> bool {
    payload.get("Records").is_none()
        && payload.get("detail-type").and_then(Value::as_str) == Some("Scheduled Event")
}

/// Lapses the holds due at `now`, its calls recorded as this function's.
pub async fn sweep(db: &Db, now: DateTime<Utc>) -> Result<Swept, DbError> {
    let changes = db.unrecorded();
    let swept =
        petstore::aws_calls::within(crate::recorded_as_events(), changes.sweep_holds(now)).await?;
    tracing::info!(
        examined = swept.examined,
        lapsed = swept.lapsed,
        "hold sweep"
    );
    Ok(swept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_schedule_is_told_from_a_stream_batch() {
        let scheduled =
            json!({"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}});
        assert!(is_sweep(&scheduled));
        assert!(!is_sweep(&json!({"Records": []})));
        assert!(!is_sweep(&json!({"detail-type": "OrderPlaced"})));
    }
}
