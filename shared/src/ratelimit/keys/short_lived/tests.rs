use super::*;
use crate::db::{n, s, DbError, Item};
use crate::ratelimit::keys::item::record_of;

const NOW: i64 = 1_900_000_000;

/// An item as the pre-traffic check's IAM lets it be put: only PK, SK, id,
/// plan, name, createdAt, revoked and expiresAt, with whatever values.
fn hook_item(id: u64, plan: &str, expires_at: Option<i64>) -> Item {
    let mut item = Item::from([
        ("PK".to_string(), s("APIKEY#minted")),
        ("SK".to_string(), s("APIKEY")),
        ("id".to_string(), n(id)),
        ("plan".to_string(), s(plan)),
        ("name".to_string(), s("pre-traffic check")),
        ("createdAt".to_string(), s("2030-03-17T17:46:40Z")),
    ]);
    if let Some(at) = expires_at {
        item.insert("expiresAt".to_string(), n(at));
    }
    item
}

#[test]
fn a_key_the_hook_could_put_acts_as_no_one_on_the_free_plan() -> Result<(), DbError> {
    // Claiming an existing customer's id, the enterprise plan (with no
    // limits of its own: not even a broken item), and any expiry.
    for plan in ["enterprise", "business", "free"] {
        for expires_at in [None, Some(NOW + 1_800), Some(NOW + 10 * 365 * 86_400)] {
            let (_, record) = record_of(hook_item(1_234_567_890_123, plan, expires_at))?;
            assert_eq!(record.id, Id::clamped(IDENTITY));
            assert_eq!((record.plan, record.role), (Plan::Free, Role::Customer));
            assert_eq!(record.limits(), Limits::FREE);
            assert_eq!((record.max_open_orders, record.max_webhooks), (None, None));
            // Known only while its expiry is within the hour.
            assert_eq!(
                record.expired(NOW),
                expires_at != Some(NOW + 1_800),
                "{expires_at:?}"
            );
        }
    }
    Ok(())
}

#[test]
fn a_short_lived_key_is_known_until_its_hour_ends() {
    let at = Some(NOW + 3_600);
    assert!(!expired(at, NOW));
    assert!(
        !expired(at, NOW - 300),
        "a host whose clock is five minutes behind"
    );
    assert!(expired(at, NOW - 301));
    assert!(expired(at, NOW + 3_600));
    assert!(!expired(None, NOW), "a listed key does not expire");
}

#[test]
fn a_listed_key_is_the_items() -> Result<(), DbError> {
    let mut item = hook_item(42, "pro", None);
    item.insert("GSI1PK".to_string(), s("APIKEY"));
    let (_, record) = record_of(item)?;
    assert_eq!((record.id, record.plan), (Id::clamped(42), Plan::Pro));
    assert!(!record.expired(NOW));
    // The same item with an expiry: short-lived, whatever else it says.
    let mut item = hook_item(42, "pro", Some(NOW + 60));
    item.insert("GSI1PK".to_string(), s("APIKEY"));
    assert_eq!(record_of(item)?.1.id, Id::clamped(IDENTITY));
    Ok(())
}
