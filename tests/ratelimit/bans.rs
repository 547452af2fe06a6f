//! Bans: a key that calls on after refusals is banned, on every instance,
//! until it ends or the admin tool lifts it; a second ban within a day lasts
//! longer, up to a cap.

use super::{config, pinned, NOW};
use crate::helpers::TestApp;
use petstore::ratelimit::Plan;

pub(super) const BAN_CONFIG: &[(&str, &str)] = &[
    ("BAN_THRESHOLD", "3"),
    ("BAN_BASE_SECONDS", "120"),
    ("BAN_MAX_SECONDS", "300"),
    ("REFUSAL_FLUSH_EVERY", "5"),
];

/// Spends a 1-a-minute key's minute, then makes `refusals` refused calls.
pub(super) async fn provoke(app: &TestApp, refusals: usize) {
    app.get("/categories").await.assert_status(200);
    for _ in 0..refusals {
        app.get("/categories")
            .await
            .assert_error(429, "RATE_LIMITED");
    }
}

#[tokio::test]
async fn calling_on_after_refusals_earns_a_ban_which_unban_lifts() {
    // Given a key allowing 1 a minute, and a ban after 3 refusals
    let (app, clock) = pinned(config(BAN_CONFIG)).await;
    let app = app.with_new_key(Plan::Enterprise, Some((1, 1_000))).await;

    // When it is refused 3 times
    provoke(&app, 3).await;

    // Then it is banned, here and on any other instance
    for instance in [app.clone(), app.another_instance().await] {
        let response = instance.get("/categories").await;
        response.assert_error(429, "API_KEY_BANNED");
        assert_eq!(response.header("retry-after"), Some("120"));
        assert_eq!(response.header("x-ratelimit-remaining"), Some("0"));
        let reset = (NOW + 120).to_string();
        assert_eq!(response.header("x-ratelimit-reset"), Some(reset.as_str()));
    }

    // When the admin tool's unban runs
    let was_banned = app.app.limiter.unban(super::key_id(&app)).await.unwrap();
    assert!(was_banned);

    // Then it is merely over its minute, and served in the next
    app.get("/categories")
        .await
        .assert_error(429, "RATE_LIMITED");
    clock.advance(60);
    app.get("/categories").await.assert_status(200);
}

#[tokio::test]
async fn a_second_ban_within_a_day_lasts_twice_as_long_up_to_the_cap() {
    let (app, clock) = pinned(config(BAN_CONFIG)).await;
    let app = app.with_new_key(Plan::Enterprise, Some((1, 1_000))).await;

    provoke(&app, 3).await;
    let response = app.get("/categories").await;
    assert_eq!(response.header("retry-after"), Some("120"));

    // After the ban, the same again: 240 s
    clock.advance(180);
    provoke(&app, 3).await;
    let response = app.get("/categories").await;
    response.assert_error(429, "API_KEY_BANNED");
    assert_eq!(response.header("retry-after"), Some("240"));

    // And again: capped at 300 s
    clock.advance(300);
    provoke(&app, 3).await;
    let response = app.get("/categories").await;
    response.assert_error(429, "API_KEY_BANNED");
    assert_eq!(response.header("retry-after"), Some("300"));
}
