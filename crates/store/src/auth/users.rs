//! The users table: local accounts with a role.

use serde::Serialize;
use sqlx::PgPool;

use super::cache::UserCopies;
use crate::core::FieldError;

/// What a user may do. Ordered: each role includes the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Reads everything.
    Viewer,
    /// Also writes investigations, journal entries, uploads.
    Editor,
    /// Also manages users.
    Admin,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Viewer, Role::Editor, Role::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Editor => "editor",
            Role::Admin => "admin",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == s.trim())
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct User {
    pub id: i64,
    pub name: String,
    pub role: Role,
    /// Raised by a password change or reset and by disabling; older sessions have ended.
    #[serde(skip)]
    pub session_generation: i32,
    pub disabled: bool,
}

#[derive(sqlx::FromRow)]
struct UserRow {
    id: i64,
    name: String,
    role: String,
    session_generation: i32,
    disabled: bool,
}

/// The columns a [`UserRow`] reads.
const USER_COLUMNS: &str =
    "id, name, role, session_generation, disabled_at IS NOT NULL AS disabled";

impl From<UserRow> for User {
    fn from(r: UserRow) -> Self {
        User {
            id: r.id,
            name: r.name,
            role: Role::parse(&r.role).unwrap_or(Role::Viewer),
            session_generation: r.session_generation,
            disabled: r.disabled,
        }
    }
}

/// A user name: 1–64 of letters, digits, `.`, `_`, `-` (the table enforces the same).
pub fn validate_name(name: &str) -> Result<String, FieldError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(FieldError::new("name", "a user name is required"));
    }
    if name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        return Err(FieldError::new(
            "name",
            "use up to 64 letters, digits, '.', '_' or '-'",
        ));
    }
    Ok(name.to_string())
}

/// Passwords: at least 10 characters; no other rules (length beats composition rules).
pub fn validate_password(password: &str) -> Result<(), FieldError> {
    if password.chars().count() < 10 {
        return Err(FieldError::new("password", "use at least 10 characters"));
    }
    if password.len() > 1024 {
        return Err(FieldError::new("password", "at most 1024 bytes"));
    }
    Ok(())
}

pub async fn count(pool: &PgPool) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT count(*) FROM users")
        .fetch_one(pool)
        .await
}

/// The user with this id, disabled or not (callers that authenticate check `disabled`).
pub async fn by_id(pool: &PgPool, id: i64) -> sqlx::Result<Option<User>> {
    let row: Option<UserRow> =
        sqlx::query_as(&format!("SELECT {USER_COLUMNS} FROM users WHERE id = $1"))
            .bind(id)
            .fetch_optional(pool)
            .await?;
    Ok(row.map(User::from))
}

/// The user and the stored password hash, for a login attempt.
pub async fn credentials(pool: &PgPool, name: &str) -> sqlx::Result<Option<(User, String)>> {
    #[derive(sqlx::FromRow)]
    struct WithHash {
        #[sqlx(flatten)]
        user: UserRow,
        password_hash: String,
    }
    let row: Option<WithHash> = sqlx::query_as(&format!(
        "SELECT {USER_COLUMNS}, password_hash FROM users WHERE lower(name) = lower($1)"
    ))
    .bind(name)
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|r| (r.user.into(), r.password_hash)))
}

pub async fn list(pool: &PgPool) -> sqlx::Result<Vec<User>> {
    let rows: Vec<UserRow> = sqlx::query_as(&format!(
        "SELECT {USER_COLUMNS} FROM users ORDER BY lower(name)"
    ))
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(User::from).collect())
}

#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    #[error("a user named {0} already exists")]
    Taken(String),
    #[error("setup is already done: an account exists")]
    NotFirst,
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

/// Inserts a user. With `only_if_first`, succeeds only while the table is empty (the
/// setup page), checked under a table lock so two racing set-ups cannot both win.
pub async fn create(
    pool: &PgPool,
    name: &str,
    password_hash: &str,
    role: Role,
    only_if_first: bool,
) -> Result<User, CreateError> {
    let mut tx = pool.begin().await?;
    if only_if_first {
        sqlx::query("LOCK TABLE users IN EXCLUSIVE MODE")
            .execute(&mut *tx)
            .await?;
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM users")
            .fetch_one(&mut *tx)
            .await?;
        if n > 0 {
            return Err(CreateError::NotFirst);
        }
    }
    let row: Result<UserRow, sqlx::Error> = sqlx::query_as(
        &format!(
            "INSERT INTO users (name, password_hash, role) VALUES ($1, $2, $3) RETURNING {USER_COLUMNS}"
        ),
    )
    .bind(name)
    .bind(password_hash)
    .bind(role.as_str())
    .fetch_one(&mut *tx)
    .await;
    let row = match row {
        Ok(r) => r,
        Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
            return Err(CreateError::Taken(name.to_string()))
        }
        Err(e) => return Err(e.into()),
    };
    tx.commit().await?;
    Ok(row.into())
}

/// The setters below also drop this process's copy of the user ([`UserCopies`]), so the
/// change applies to its next request here (other replicas: within a second).
pub async fn set_role(
    pool: &PgPool,
    copies: &UserCopies,
    id: i64,
    role: Role,
) -> sqlx::Result<bool> {
    let done = sqlx::query("UPDATE users SET role = $2 WHERE id = $1")
        .bind(id)
        .bind(role.as_str())
        .execute(pool)
        .await?;
    copies.forget(id);
    Ok(done.rows_affected() == 1)
}

/// Sets a new password and raises the session generation, which ends every session signed
/// in before; returns the new generation (the caller re-stamps the session it keeps).
pub async fn set_password(
    pool: &PgPool,
    copies: &UserCopies,
    id: i64,
    password_hash: &str,
) -> sqlx::Result<i32> {
    let generation = sqlx::query_scalar(
        "UPDATE users SET password_hash = $2, session_generation = session_generation + 1
         WHERE id = $1 RETURNING session_generation",
    )
    .bind(id)
    .bind(password_hash)
    .fetch_one(pool)
    .await;
    copies.forget(id);
    generation
}

/// Disables (ending the user's sessions; their API tokens stop working) or enables a user.
pub async fn set_disabled(
    pool: &PgPool,
    copies: &UserCopies,
    id: i64,
    disabled: bool,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE users SET disabled_at = CASE WHEN $2 THEN coalesce(disabled_at, now()) END,
                          session_generation = session_generation + CASE WHEN $2 THEN 1 ELSE 0 END
         WHERE id = $1",
    )
    .bind(id)
    .bind(disabled)
    .execute(pool)
    .await?;
    copies.forget(id);
    Ok(done.rows_affected() == 1)
}

pub async fn count_admins(pool: &PgPool) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT count(*) FROM users WHERE role = 'admin' AND disabled_at IS NULL")
        .fetch_one(pool)
        .await
}
