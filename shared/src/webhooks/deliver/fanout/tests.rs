use super::*;
use serde_json::json;

#[test]
fn the_payload_is_compact_type_timestamp_data_with_the_detail_as_data() {
    let detail = json!({
        "order": {"id": 9, "ownerId": 7}, "lapsed": true,
        "eventId": "e1", "occurredAt": "2026-11-26T20:00:00.123Z", "sequence": "42"
    });
    let body = payload(EventType::OrderCancelled, &detail).unwrap();
    assert_eq!(
        body,
        r#"{"type":"order.cancelled","timestamp":"2026-11-26T20:00:00.123Z","data":{"eventId":"e1","lapsed":true,"occurredAt":"2026-11-26T20:00:00.123Z","order":{"id":9,"ownerId":7},"sequence":"42"}}"#
    );
}
