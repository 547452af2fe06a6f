//! The master key's side of [`super`]: wrapping and unwrapping data keys
//! with KMS or with the local key, and the local key's file.

use super::{aead_key, DataKey, SecretsError};
use aws_sdk_kms::primitives::Blob;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as BASE64URL;
use base64::Engine;
use rand::RngCore;
use ring::aead::{Aad, Nonce, NONCE_LEN};
use std::path::Path;

/// KMS's encryption context of every data key: a data key wrapped for
/// anything else does not unwrap here (and the key policy allows no other).
const CONTEXT: (&str, &str) = ("purpose", "petstore-webhook-secrets");
/// The local wrapping's additional data, for the same reason.
const LOCAL_WRAP_AAD: &[u8] = b"petstore webhook secrets data key";

/// What wraps the data keys.
pub(super) enum Master {
    Kms {
        client: aws_sdk_kms::Client,
        key_id: String,
    },
    Local([u8; 32]),
}

fn unavailable<E: std::error::Error + 'static>(error: E) -> SecretsError {
    SecretsError::Unavailable(aws_sdk_kms::error::DisplayErrorContext(error).to_string())
}

fn plain_key(plain: Option<Blob>) -> Result<[u8; 32], SecretsError> {
    let plain = plain.ok_or(SecretsError::Damaged)?;
    plain
        .into_inner()
        .try_into()
        .map_err(|_| SecretsError::Damaged)
}

pub(super) fn wrap_local(master: &[u8; 32], key: &[u8; 32]) -> Result<Vec<u8>, SecretsError> {
    let mut nonce = [0u8; NONCE_LEN];
    rand::rng().fill_bytes(&mut nonce);
    let mut wrapped = key.to_vec();
    aead_key(master)?
        .seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(LOCAL_WRAP_AAD),
            &mut wrapped,
        )
        .map_err(|_| SecretsError::Damaged)?;
    Ok([nonce.as_slice(), &wrapped].concat())
}

pub(super) fn unwrap_local(master: &[u8; 32], wrapped: &[u8]) -> Result<[u8; 32], SecretsError> {
    let (nonce, sealed) = wrapped
        .split_at_checked(NONCE_LEN)
        .ok_or(SecretsError::Damaged)?;
    let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| SecretsError::Damaged)?;
    let mut sealed = sealed.to_vec();
    let key = aead_key(master)?
        .open_in_place(nonce, Aad::from(LOCAL_WRAP_AAD), &mut sealed)
        .map_err(|_| SecretsError::Damaged)?;
    key.try_into().map_err(|_| SecretsError::Damaged)
}

pub(super) async fn generate_kms(
    client: &aws_sdk_kms::Client,
    key_id: &str,
) -> Result<DataKey, SecretsError> {
    let made = client
        .generate_data_key()
        .key_id(key_id)
        .key_spec(aws_sdk_kms::types::DataKeySpec::Aes256)
        .encryption_context(CONTEXT.0, CONTEXT.1)
        .send()
        .await
        .map_err(unavailable)?;
    let wrapped = made.ciphertext_blob.ok_or(SecretsError::Damaged)?;
    Ok(DataKey {
        wrapped: wrapped.into_inner(),
        key: plain_key(made.plaintext)?,
    })
}

pub(super) async fn decrypt_kms(
    client: &aws_sdk_kms::Client,
    key_id: &str,
    wrapped: &[u8],
) -> Result<[u8; 32], SecretsError> {
    let opened = client
        .decrypt()
        .key_id(key_id)
        .ciphertext_blob(Blob::new(wrapped))
        .encryption_context(CONTEXT.0, CONTEXT.1)
        .send()
        .await
        .map_err(unavailable)?;
    plain_key(opened.plaintext)
}

/// The 32 bytes (base64url) in `path`, made there first if it does not
/// exist: written whole beside it, then linked in, so a process starting
/// at the same time reads either nothing or the whole key.
pub(super) fn local_key(path: &Path) -> Result<[u8; 32], String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Ok(text) = std::fs::read_to_string(path) {
        let key = BASE64URL
            .decode(text.trim())
            .map_err(|_| "not base64url".to_string())?;
        return key.try_into().map_err(|_| "not 32 bytes".to_string());
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    let mut made = [0u8; 32];
    rand::rng().fill_bytes(&mut made);
    let beside = path.with_extension(format!("new{}", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&beside)
        .map_err(|e| e.to_string())?;
    let text = format!("{}\n", BASE64URL.encode(made));
    file.write_all(text.as_bytes()).map_err(|e| e.to_string())?;
    let linked = std::fs::hard_link(&beside, path);
    let _ = std::fs::remove_file(&beside);
    match linked {
        Ok(()) => Ok(made),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => local_key(path),
        Err(e) => Err(e.to_string()),
    }
}
