use super::*;

fn key(role: Role) -> KeyState {
    KeyState {
        role,
        revoked: false,
        expires_at: None,
        banned_until: None,
    }
}

#[test]
fn the_key_s_state_now_decides_and_says_why_not() {
    let now = Utc::now();
    let staff = key(Role::Staff);
    assert_eq!(decide(true, Some(&staff), now), Ok(Role::Staff));
    assert_eq!(decide(true, None, now), Err(NotReceiving::KeyDeleted));
    let revoked = KeyState {
        revoked: true,
        ..staff.clone()
    };
    assert_eq!(
        decide(false, Some(&revoked), now),
        Err(NotReceiving::KeyRevoked)
    );
    let until = now + chrono::Duration::minutes(5);
    let banned = KeyState {
        banned_until: Some(until),
        ..staff.clone()
    };
    assert_eq!(
        decide(true, Some(&banned), now),
        Err(NotReceiving::KeyBanned { until })
    );
    let ban_over = KeyState {
        banned_until: Some(now - chrono::Duration::seconds(1)),
        ..staff.clone()
    };
    assert_eq!(decide(true, Some(&ban_over), now), Ok(Role::Staff));
    let ended = KeyState {
        expires_at: Some(now.timestamp()),
        ..staff.clone()
    };
    assert_eq!(
        decide(true, Some(&ended), now),
        Err(NotReceiving::KeyExpired)
    );
    assert_eq!(
        decide(false, Some(&staff), now),
        Err(NotReceiving::Disabled)
    );
    for why in [
        NotReceiving::Disabled,
        NotReceiving::KeyRevoked,
        NotReceiving::KeyDeleted,
        NotReceiving::KeyExpired,
        NotReceiving::KeyBanned { until },
    ] {
        assert!(NotReceiving::REASONS.contains(&why.reason()));
    }
}

#[test]
fn what_an_endpoint_takes_follows_the_role_it_receives_as() {
    let every: Vec<String> = Vec::new();
    let placed = vec!["order.placed".to_string()];
    assert!(takes(Role::Staff, 1, &every, EventType::StockChanged, None));
    assert!(takes(
        Role::Staff,
        1,
        &every,
        EventType::OrderPlaced,
        Some(2)
    ));
    assert!(!takes(
        Role::Customer,
        1,
        &every,
        EventType::StockChanged,
        None
    ));
    assert!(!takes(
        Role::Customer,
        1,
        &every,
        EventType::OrderPlaced,
        Some(2)
    ));
    assert!(takes(
        Role::Customer,
        1,
        &every,
        EventType::OrderPlaced,
        Some(1)
    ));
    assert!(takes(
        Role::Customer,
        1,
        &placed,
        EventType::OrderPlaced,
        Some(1)
    ));
    assert!(!takes(
        Role::Customer,
        1,
        &placed,
        EventType::OrderCancelled,
        Some(1)
    ));
    // Subscribed to a catalogue type as staff, and staff no more.
    let pets = vec!["pet.created".to_string()];
    assert!(!takes(
        Role::Customer,
        1,
        &pets,
        EventType::PetCreated,
        None
    ));
}
