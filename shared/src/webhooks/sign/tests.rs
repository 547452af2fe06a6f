use super::*;

/// The specification's own example (standard-webhooks.md, "Signature scheme").
#[test]
fn signs_the_specification_s_published_example() {
    let header = signature_header(
        &["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
        "msg_p5jXN8AQM9LWM0D4loKWxJek",
        1614265330,
        r#"{"test": 2432232314}"#,
    );
    assert_eq!(
        header.as_deref(),
        Ok("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
    );
}

/// The reference libraries' test vector (libraries/rust/src/lib.rs, `test_sign`).
#[test]
fn signs_the_reference_library_s_vector() {
    let header = signature_header(
        &["whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"],
        "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk",
        1649367553,
        r#"{"email":"test@example.com","username":"test_user"}"#,
    );
    assert_eq!(
        header.as_deref(),
        Ok("v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=")
    );
}

#[test]
fn signs_once_per_secret_space_separated_in_the_order_given() {
    let (new, old) = (new_secret(), new_secret());
    let both = signature_header(&[&new, &old], "id", 1, "{}").unwrap();
    let one = |s: &str| signature_header(&[s], "id", 1, "{}").unwrap();
    assert_eq!(both, format!("{} {}", one(&new), one(&old)));
    assert_ne!(one(&new), one(&old));
}

#[test]
fn a_new_secret_is_the_prefix_and_32_random_bytes() {
    let secret = new_secret();
    let key = BASE64
        .decode(secret.strip_prefix(SECRET_PREFIX).unwrap())
        .unwrap();
    assert_eq!(key.len(), 32);
    assert_ne!(secret, new_secret());
}

#[test]
fn a_damaged_secret_is_an_error_not_a_panic() {
    assert_eq!(signature_header(&["nope"], "id", 1, "{}"), Err(BadSecret));
    assert_eq!(
        signature_header(&["whsec_!!"], "id", 1, "{}"),
        Err(BadSecret)
    );
}
