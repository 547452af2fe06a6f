use super::*;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

#[tokio::test]
async fn a_sealed_secret_opens_for_its_endpoint_only() {
    let keyring = Keyring::ephemeral();
    let sealed = keyring.seal(7, SECRET).await.expect("seals");
    assert!(sealed.starts_with(SEALED_PREFIX));
    assert!(!sealed.contains("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"));
    assert_eq!(keyring.open(7, &sealed).await.expect("opens"), SECRET);
    assert!(matches!(
        keyring.open(8, &sealed).await,
        Err(SecretsError::Damaged)
    ));
    let again = keyring.seal(7, SECRET).await.expect("seals");
    assert_ne!(sealed, again, "a fresh nonce each time");
}

#[tokio::test]
async fn another_master_key_opens_nothing_and_damage_is_an_error() {
    let (one, other) = (Keyring::ephemeral(), Keyring::ephemeral());
    let sealed = one.seal(7, SECRET).await.expect("seals");
    assert!(matches!(
        other.open(7, &sealed).await,
        Err(SecretsError::Damaged)
    ));
    for damaged in [
        SECRET.to_string(),
        format!("{SEALED_PREFIX}AAAA"),
        String::new(),
    ] {
        let error = one.open(7, &damaged).await.expect_err("does not open");
        assert!(!error.to_string().contains(SECRET));
    }
    let mut flipped = sealed.clone().into_bytes();
    let last = flipped.len() - 2;
    flipped[last] = if flipped[last] == b'A' { b'B' } else { b'A' };
    let flipped = String::from_utf8(flipped).expect("ASCII");
    assert!(one.open(7, &flipped).await.is_err(), "the tag holds");
}

#[tokio::test]
async fn a_local_key_file_is_made_once_owner_only_and_reused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("petstore-secrets-{}", rand::rng().next_u64()));
    let path = dir.join("key");
    let first = Keyring::local_file(&path).expect("made");
    let mode = std::fs::metadata(&path)
        .expect("there")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let sealed = first.seal(3, SECRET).await.expect("seals");
    let second = Keyring::local_file(&path).expect("read");
    assert_eq!(second.open(3, &sealed).await.expect("opens"), SECRET);
    std::fs::write(&path, "short").expect("written");
    assert!(Keyring::local_file(&path).is_err());
    let _ = std::fs::remove_dir_all(dir);
}
