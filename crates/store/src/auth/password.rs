//! argon2id password hashing, on a blocking thread (a hash takes tens of milliseconds).

use argon2::password_hash::{phc::PasswordHash, PasswordHasher, PasswordVerifier};
use argon2::Argon2;

pub async fn hash(password: String) -> anyhow::Result<String> {
    tokio::task::spawn_blocking(move || {
        Argon2::default()
            .hash_password(password.as_bytes())
            .map(|h| h.to_string())
            .map_err(|e| anyhow::anyhow!("hashing a password: {e}"))
    })
    .await?
}

/// True when `password` matches the stored PHC string. An account made by single sign-on
/// stores a marker instead of a hash (see `external::NO_PASSWORD`): nothing matches it.
pub async fn verify(password: String, stored: String) -> anyhow::Result<bool> {
    // Such an account costs the same as a real check, so timing does not tell it apart.
    let usable = !stored.starts_with('!');
    let stored = if usable {
        stored
    } else {
        decoy_hash().to_string()
    };
    tokio::task::spawn_blocking(move || {
        let parsed = PasswordHash::new(&stored)
            .map_err(|e| anyhow::anyhow!("stored password hash is malformed: {e}"))?;
        Ok(Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
            && usable)
    })
    .await?
}

/// A valid hash of a random string, verified against when a login names no account.
pub fn decoy_hash() -> &'static str {
    static DECOY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DECOY.get_or_init(|| {
        Argon2::default()
            .hash_password(b"no such account; this hash only costs time")
            .map(|h| h.to_string())
            .unwrap_or_default()
    })
}
