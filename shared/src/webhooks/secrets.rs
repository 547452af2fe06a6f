//! Endpoint secrets at rest (contract section 9, "Secrets"): stored sealed,
//! opened only to sign an attempt ([`signing_secrets`]).
//!
//! Envelope encryption. A process makes one data key (AES-256) the first
//! time it seals, wrapped by the master key; each secret is sealed under it
//! with AES-256-GCM, its additional data the endpoint's id, so a sealed
//! secret copied onto another endpoint does not open. What is stored is
//! [`SEALED_PREFIX`] + base64url of: the wrapped data key's length (2 bytes,
//! big-endian), the wrapped data key, the nonce, the ciphertext and tag.
//! Opening unwraps each data key once per process (kept, at most
//! [`MOST_OPENED`]), so an attempt asks the master key only for a data key
//! its process has not met.
//!
//! The master key: in AWS the stack's KMS key (`WEBHOOK_SECRETS_KEY`; its
//! key policy lets only the webhooks function's role use it: template.yaml),
//! which wraps and unwraps data keys itself and never leaves KMS. Locally a
//! 32-byte key that the machine makes on first use and git never sees
//! (`WEBHOOK_SECRETS_KEY_FILE`, `.local/webhook-secrets.key` by default),
//! refused where Lambda runs the function; the tests use one made in memory.
//!
//! The stored item (and so the table's stream, backups and exports) holds
//! the sealed form only; no error here carries a secret or a key.

mod master;

use base64::engine::general_purpose::URL_SAFE_NO_PAD as BASE64URL;
use base64::Engine;
use master::{decrypt_kms, generate_kms, local_key, unwrap_local, wrap_local, Master};
use rand::RngCore;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// What every sealed secret starts with (its format's version).
pub const SEALED_PREFIX: &str = "whsealed_v1.";
/// The KMS key (id or ARN) that wraps data keys: the template sets it.
pub const KMS_KEY_VARIABLE: &str = "WEBHOOK_SECRETS_KEY";
/// The file of the local master key (`make run`, `make run-lambda`).
pub const KEY_FILE_VARIABLE: &str = "WEBHOOK_SECRETS_KEY_FILE";
/// Where the local master key is kept when no file is named.
pub const DEFAULT_KEY_FILE: &str = ".local/webhook-secrets.key";
/// Data keys a process keeps unwrapped.
pub const MOST_OPENED: usize = 256;

/// Why a secret could not be sealed or opened. No variant carries a secret.
#[derive(Debug, thiserror::Error)]
pub enum SecretsError {
    #[error("no key seals webhook secrets in this process (set {KMS_KEY_VARIABLE} or {KEY_FILE_VARIABLE})")]
    NoKey,
    #[error("the key that seals webhook secrets is unavailable: {0}")]
    Unavailable(String),
    #[error("a stored webhook secret does not open")]
    Damaged,
    #[error("the local webhook secrets key {path}: {reason}")]
    LocalKey { path: PathBuf, reason: String },
    #[error("a local key file seals webhook secrets only off Lambda; set {KMS_KEY_VARIABLE}")]
    LocalKeyInLambda,
}

#[derive(Clone)]
struct DataKey {
    wrapped: Vec<u8>,
    key: [u8; 32],
}

/// The master key, this process's data key, and the data keys it opened.
pub struct Keyring {
    master: Master,
    current: tokio::sync::Mutex<Option<DataKey>>,
    opened: Mutex<HashMap<Vec<u8>, [u8; 32]>>,
}

static INSTALLED: OnceLock<Keyring> = OnceLock::new();

/// Makes `keyring` the process's, unless one is already (the first stays:
/// every test of a process shares one). Answers whether this one was.
pub fn install(keyring: Keyring) -> bool {
    INSTALLED.set(keyring).is_ok()
}

fn installed() -> Result<&'static Keyring, SecretsError> {
    INSTALLED.get().ok_or(SecretsError::NoKey)
}

/// `secret` sealed for endpoint `webhook_id`, as it is stored.
pub async fn seal(webhook_id: u64, secret: &str) -> Result<String, SecretsError> {
    installed()?.seal(webhook_id, secret).await
}

/// The secrets that sign an attempt, from the stored (sealed) ones of
/// endpoint `webhook_id` that are active: the one place they are opened.
pub async fn signing_secrets<S: AsRef<str>>(
    webhook_id: u64,
    stored: &[S],
) -> Result<Vec<String>, SecretsError> {
    let keyring = installed()?;
    let mut secrets = Vec::with_capacity(stored.len());
    for sealed in stored {
        secrets.push(keyring.open(webhook_id, sealed.as_ref()).await?);
    }
    Ok(secrets)
}

/// Whether Lambda itself runs this process: `AWS_LAMBDA_FUNCTION_NAME` with
/// one of the variables Lambda sets for every runtime (OS-only ones too,
/// which have no `AWS_EXECUTION_ENV`) and `cargo lambda watch` (`make
/// run-lambda`, which sets the name) does not.
pub fn in_lambda() -> bool {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    set("AWS_LAMBDA_FUNCTION_NAME")
        && (set("LAMBDA_TASK_ROOT") || set("AWS_LAMBDA_INITIALIZATION_TYPE"))
}

impl Keyring {
    fn with(master: Master) -> Keyring {
        Keyring {
            master,
            current: tokio::sync::Mutex::new(None),
            opened: Mutex::new(HashMap::new()),
        }
    }

    /// Data keys from the KMS key `key_id`.
    pub fn kms(config: &aws_config::SdkConfig, key_id: impl Into<String>) -> Keyring {
        let client = aws_sdk_kms::Client::new(config);
        Keyring::with(Master::Kms {
            client,
            key_id: key_id.into(),
        })
    }

    /// Data keys wrapped by a local key made now, kept in memory (the tests).
    pub fn ephemeral() -> Keyring {
        let mut key = [0u8; 32];
        rand::rng().fill_bytes(&mut key);
        Keyring::with(Master::Local(key))
    }

    /// Data keys wrapped by the local key in `path`, made there (readable
    /// by its owner only) if there is none yet.
    pub fn local_file(path: &Path) -> Result<Keyring, SecretsError> {
        let key = local_key(path).map_err(|reason| SecretsError::LocalKey {
            path: path.to_path_buf(),
            reason,
        })?;
        Ok(Keyring::with(Master::Local(key)))
    }

    /// The KMS key of `WEBHOOK_SECRETS_KEY`; else, off Lambda only, the
    /// local key ([`Keyring::local_from_env`]).
    pub fn from_env(config: &aws_config::SdkConfig) -> Result<Keyring, SecretsError> {
        match std::env::var(KMS_KEY_VARIABLE) {
            Ok(key_id) if !key_id.is_empty() => Ok(Keyring::kms(config, key_id)),
            _ if in_lambda() => Err(SecretsError::NoKey),
            _ => Keyring::local_from_env(),
        }
    }

    /// The local key of `WEBHOOK_SECRETS_KEY_FILE`, or of
    /// [`DEFAULT_KEY_FILE`] (made there on first use); refused where Lambda
    /// runs the function, whose secrets only the stack's KMS key seals.
    pub fn local_from_env() -> Result<Keyring, SecretsError> {
        if in_lambda() {
            return Err(SecretsError::LocalKeyInLambda);
        }
        let file = std::env::var_os(KEY_FILE_VARIABLE).filter(|f| !f.is_empty());
        let file = file.map_or_else(|| PathBuf::from(DEFAULT_KEY_FILE), PathBuf::from);
        Keyring::local_file(&file)
    }

    /// `secret` sealed under this process's data key, bound to `webhook_id`.
    pub async fn seal(&self, webhook_id: u64, secret: &str) -> Result<String, SecretsError> {
        let data_key = self.data_key().await?;
        let mut nonce = [0u8; NONCE_LEN];
        rand::rng().fill_bytes(&mut nonce);
        let mut sealed = secret.as_bytes().to_vec();
        aead_key(&data_key.key)?
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad(webhook_id)),
                &mut sealed,
            )
            .map_err(|_| SecretsError::Damaged)?;
        let length = u16::try_from(data_key.wrapped.len()).map_err(|_| SecretsError::Damaged)?;
        let mut blob = length.to_be_bytes().to_vec();
        blob.extend_from_slice(&data_key.wrapped);
        blob.extend_from_slice(&nonce);
        blob.extend_from_slice(&sealed);
        Ok(format!("{SEALED_PREFIX}{}", BASE64URL.encode(blob)))
    }

    /// The secret `sealed` holds, if it was sealed for `webhook_id`.
    pub async fn open(&self, webhook_id: u64, sealed: &str) -> Result<String, SecretsError> {
        let parts = Parts::of(sealed).ok_or(SecretsError::Damaged)?;
        let key = self.unwrapped(&parts.wrapped).await?;
        let mut opened = parts.sealed;
        let plain = aead_key(&key)?
            .open_in_place(
                Nonce::assume_unique_for_key(parts.nonce),
                Aad::from(aad(webhook_id)),
                &mut opened,
            )
            .map_err(|_| SecretsError::Damaged)?;
        String::from_utf8(plain.to_vec()).map_err(|_| SecretsError::Damaged)
    }

    /// This process's data key, made (and wrapped) the first time.
    async fn data_key(&self) -> Result<DataKey, SecretsError> {
        let mut current = self.current.lock().await;
        if let Some(key) = current.as_ref() {
            return Ok(key.clone());
        }
        let made = match &self.master {
            Master::Kms { client, key_id } => generate_kms(client, key_id).await?,
            Master::Local(master) => {
                let mut key = [0u8; 32];
                rand::rng().fill_bytes(&mut key);
                let wrapped = wrap_local(master, &key)?;
                DataKey { wrapped, key }
            }
        };
        self.remember(&made.wrapped, made.key);
        *current = Some(made.clone());
        Ok(made)
    }

    /// The data key `wrapped` holds: kept from before, or unwrapped now.
    async fn unwrapped(&self, wrapped: &[u8]) -> Result<[u8; 32], SecretsError> {
        if let Some(key) = self.opened_key(wrapped) {
            return Ok(key);
        }
        let key = match &self.master {
            Master::Kms { client, key_id } => decrypt_kms(client, key_id, wrapped).await?,
            Master::Local(master) => unwrap_local(master, wrapped)?,
        };
        self.remember(wrapped, key);
        Ok(key)
    }

    fn opened_key(&self, wrapped: &[u8]) -> Option<[u8; 32]> {
        let opened = self.opened.lock().unwrap_or_else(|p| p.into_inner());
        opened.get(wrapped).copied()
    }

    fn remember(&self, wrapped: &[u8], key: [u8; 32]) {
        let mut opened = self.opened.lock().unwrap_or_else(|p| p.into_inner());
        if opened.len() >= MOST_OPENED {
            opened.clear();
        }
        opened.insert(wrapped.to_vec(), key);
    }
}

/// A sealed secret's parts.
struct Parts {
    wrapped: Vec<u8>,
    nonce: [u8; NONCE_LEN],
    sealed: Vec<u8>,
}

impl Parts {
    fn of(stored: &str) -> Option<Parts> {
        let blob = BASE64URL.decode(stored.strip_prefix(SEALED_PREFIX)?).ok()?;
        let (length, rest) = blob.split_at_checked(2)?;
        let length = usize::from(u16::from_be_bytes([length[0], length[1]]));
        let (wrapped, rest) = rest.split_at_checked(length)?;
        let (nonce, sealed) = rest.split_at_checked(NONCE_LEN)?;
        Some(Parts {
            wrapped: wrapped.to_vec(),
            nonce: nonce.try_into().ok()?,
            sealed: sealed.to_vec(),
        })
    }
}

fn aad(webhook_id: u64) -> Vec<u8> {
    format!("petstore webhook {webhook_id} secret").into_bytes()
}

fn aead_key(key: &[u8; 32]) -> Result<LessSafeKey, SecretsError> {
    let key = UnboundKey::new(&AES_256_GCM, key).map_err(|_| SecretsError::Damaged)?;
    Ok(LessSafeKey::new(key))
}

#[cfg(test)]
mod tests;
