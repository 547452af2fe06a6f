use super::*;
use chrono::TimeZone;

#[test]
fn a_cursor_names_one_event_and_is_refused_in_any_other_form() {
    let position = ListPosition::of_event("19f1d8ce200-e1-0");
    let cursor = position.cursor();
    assert_eq!(cursor, "d31396631643863653230302d65312d30");
    assert_eq!(ListPosition::from_cursor(&cursor), Some(position));
    for refused in [
        "",
        "d",
        "d3",
        "d313",
        "D3139",
        "d31Z9",
        "d3A39",
        "p0000000000003039",
    ] {
        let read = ListPosition::from_cursor(refused);
        assert!(read.is_none(), "{refused}: {read:?}");
    }
    assert_eq!(ListPosition::from_cursor("dfd"), None, "not ASCII");
    assert_eq!(
        ListPosition::from_cursor("d1f"),
        None,
        "a control character"
    );
    // Every cursor of the documented pattern is a position.
    for first in b'2'..=b'7' {
        for second in b"0123456789abcdef" {
            let cursor = format!("d{}{}", first as char, *second as char);
            assert!(ListPosition::from_cursor(&cursor).is_some(), "{cursor}");
        }
    }
    let long = format!("d{}", "61".repeat(MAX_EVENT_ID + 1));
    assert_eq!(ListPosition::from_cursor(&long), None);
}

#[test]
fn event_ids_sort_as_their_times_and_keep_their_shard() {
    let at = |seconds| Utc.timestamp_opt(seconds, 0).single().unwrap_or_default();
    let earlier = timed_event_id(at(1_700_000_000), "ffff-9");
    let later = timed_event_id(at(1_700_000_001), "0000-0");
    assert!(earlier < later, "{earlier} < {later}");
    assert_eq!(earlier, "18bcfe56800-ffff-9");
    // Part of the stored layout: a delivery's key depends on these.
    let shards: Vec<u16> = ["a", "b", "19f1d8ce200-e1-0"]
        .iter()
        .map(|id| shard_of_event(id, 8))
        .collect();
    assert_eq!(shards, [0, 5, 5]);
    assert_eq!(shard_of_event("anything", 1), 0);
    let spread: std::collections::HashSet<u16> = (0..200)
        .map(|i| shard_of_event(&format!("19f1d8ce200-e{i}-0"), 8))
        .collect();
    assert_eq!(spread.len(), 8, "every shard is used");
}

/// `is_event_id` is openapi.yaml's `EventId` parameter, its pattern and
/// its `maxLength`: what the retry answers 404 to without a read is what
/// the document says no delivery has.
/// The contract as the build writes it from `openapi.yaml` (the document
/// `http::openapi` serves), read here without the edge's layer.
const OPENAPI_JSON: &str = include_str!(concat!(env!("OUT_DIR"), "/openapi.json"));

#[test]
fn an_event_id_is_of_the_documented_form_and_no_other() {
    let document: serde_json::Value = serde_json::from_str(OPENAPI_JSON).unwrap_or_default();
    let schema = &document["components"]["parameters"]["EventId"]["schema"];
    let pattern = schema["pattern"].as_str().unwrap_or_default();
    let documented = regex::Regex::new(pattern).unwrap_or_else(|e| panic!("{pattern}: {e}"));
    let longest = schema["maxLength"].as_u64().unwrap_or_default() as usize;
    assert_eq!(longest, MAX_EVENT_ID, "EventId's maxLength");
    let at = Utc
        .timestamp_opt(1_700_000_000, 0)
        .single()
        .unwrap_or_default();
    let ping = timed_event_id(at, &format!("ping_{:032x}", 7_u128));
    let streamed = timed_event_id(at, "c4ca4238a0b923820dcc509a6f75849b-0");
    let local = timed_event_id(at, "1f0e8a4c-6b2d-4e7a-9c3b-5d6e7f8a9b0c-2");
    let longest_id = format!("{}-{}", "0".repeat(11), "a".repeat(MAX_EVENT_ID - 12));
    for accepted in [ping, streamed, local, longest_id] {
        assert!(is_event_id(&accepted), "{accepted}");
        assert!(documented.is_match(&accepted), "{accepted}");
        assert!(accepted.len() <= longest, "{accepted}");
    }
    let too_long = format!("{}-{}", "0".repeat(11), "a".repeat(MAX_EVENT_ID - 11));
    for refused in [
        "",
        "0",
        "-1",
        "9223372036854775808",
        "evt_unknown",
        "ping_x",
        "18bcfe56800-",
        "18bcfe5680-ping",
        "18BCFE56800-ping",
        "18bcfe56800-ping x",
        "18bcfe56800-ping/x",
        "18bcfe56800-pingé",
        too_long.as_str(),
    ] {
        assert!(!is_event_id(refused), "{refused}");
        let documented_form = documented.is_match(refused) && refused.len() <= longest;
        assert!(!documented_form, "{refused}");
    }
}
