use super::*;

fn at(text: &str) -> DateTime<Utc> {
    text.parse().unwrap()
}

#[test]
fn the_default_is_section_9_s_ten_attempts_over_about_three_days() {
    let schedule = RetrySchedule::default();
    assert_eq!(schedule, RetrySchedule::parse(DEFAULT_SCHEDULE).unwrap());
    assert_eq!(schedule.max_attempts(), 10);
    let total: i64 = schedule.waits.iter().map(|w| w.num_seconds()).sum();
    assert_eq!(total, 272_105); // 3 days and 3.6 hours
}

#[test]
fn garbage_is_refused_naming_the_variable_and_the_part() {
    for (text, part) in [
        ("5,x,10", "`x`"),
        ("", "``"),
        ("5,,10", "``"),
        ("-5", "`-5`"),
        ("1.5", "`1.5`"),
    ] {
        let message = RetrySchedule::parse(text).unwrap_err().to_string();
        assert!(
            message.starts_with(SCHEDULE_VARIABLE) && message.contains(part),
            "{message}"
        );
    }
    assert!(RetrySchedule::parse("86401").is_err());
    let two_weeks = vec!["86400"; 13].join(",");
    assert!(RetrySchedule::parse(&two_weeks).is_err());
    assert_eq!(RetrySchedule::parse(" 1, 2 ").unwrap().max_attempts(), 3);
}

#[test]
fn each_wait_is_jittered_within_ten_percent() {
    let schedule = RetrySchedule::parse("100,200").unwrap();
    let now = at("2026-11-26T20:00:00Z");
    assert_eq!(
        schedule.next_attempt(1, now, None, 0.9),
        Some(now + Duration::seconds(90))
    );
    assert_eq!(
        schedule.next_attempt(2, now, None, 1.1),
        Some(now + Duration::seconds(220))
    );
    assert_eq!(
        schedule.next_attempt(1, now, None, 5.0),
        Some(now + Duration::seconds(110))
    );
    assert_eq!(
        schedule.next_attempt(3, now, None, 1.0),
        None,
        "the last attempt"
    );
    assert_eq!(schedule.next_attempt(0, now, None, 1.0), None);
    for _ in 0..1000 {
        assert!(JITTER.contains(&jitter()));
    }
}

#[test]
fn retry_after_is_never_anticipated_nor_shortens_the_schedule() {
    let schedule = RetrySchedule::parse("100").unwrap();
    let now = at("2026-11-26T20:00:00Z");
    let later = RetryAfter::Delay(std::time::Duration::from_secs(3600));
    assert_eq!(
        schedule.next_attempt(1, now, Some(later), 1.0),
        Some(at("2026-11-26T21:00:00Z"))
    );
    let date = RetryAfter::At(at("2026-11-26T22:00:00Z"));
    assert_eq!(
        schedule.next_attempt(1, now, Some(date), 1.0),
        Some(at("2026-11-26T22:00:00Z"))
    );
    let sooner = RetryAfter::Delay(std::time::Duration::from_secs(1));
    assert_eq!(
        schedule.next_attempt(1, now, Some(sooner), 1.0),
        Some(now + Duration::seconds(100))
    );
    let past = RetryAfter::At(at("2020-01-01T00:00:00Z"));
    assert_eq!(
        schedule.next_attempt(1, now, Some(past), 1.0),
        Some(now + Duration::seconds(100))
    );
    let absurd = RetryAfter::Delay(std::time::Duration::from_secs(u64::MAX));
    assert_eq!(
        schedule.next_attempt(1, now, Some(absurd), 1.0),
        Some(now + LONGEST_WAIT)
    );
    let next_month = RetryAfter::At(at("2026-12-26T20:00:00Z"));
    assert_eq!(
        schedule.next_attempt(1, now, Some(next_month), 1.0),
        Some(now + LONGEST_WAIT),
        "a Retry-After past the queue's retention counts as 24 hours"
    );
}

#[test]
fn the_default_schedule_at_its_longest_ends_within_the_queue_s_retention() {
    let longest = RetrySchedule::default().longest();
    assert!(longest < QUEUE_RETENTION - Duration::days(1), "{longest}");
    assert!(longest >= Duration::days(9), "{longest}");
}

#[test]
fn three_days_of_failures_disable_and_thirty_days_close_the_manual_window() {
    let since = at("2026-11-01T00:00:00Z");
    assert!(!disables(since, at("2026-11-03T23:59:59Z")));
    assert!(disables(since, at("2026-11-04T00:00:00Z")));
    assert!(manual_retry_allowed(since, at("2026-11-30T23:59:59Z")));
    assert!(!manual_retry_allowed(since, at("2026-12-01T00:00:00Z")));
    assert_eq!(expires_at(since), at("2026-12-01T00:00:00Z").timestamp());
}
