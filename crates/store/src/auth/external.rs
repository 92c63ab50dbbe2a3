//! Users who are vouched for by someone else: an OpenID provider ([`super::oidc`]) or a
//! trusted reverse proxy. Each identity (issuer, subject) is tied to one local user in
//! `external_identities`; the user is made at the first sign-in and their role follows
//! their groups at every sign-in when a role map is set.

use std::net::IpAddr;

use sqlx::PgPool;

use super::cache::UserCopies;
use super::throttle::ProxyNet;
use super::users::{self, Role, User};
use crate::core::sso::{self, MappedRole, RoleMap};

/// The password hash of an account made by single sign-on: not a PHC string, so no
/// password ever matches it (an admin may still set one on the users page).
pub const NO_PASSWORD: &str = "!external";

impl From<MappedRole> for Role {
    fn from(r: MappedRole) -> Role {
        match r {
            MappedRole::Viewer => Role::Viewer,
            MappedRole::Editor => Role::Editor,
            MappedRole::Admin => Role::Admin,
        }
    }
}

/// Who the provider (or proxy) says is signing in.
#[derive(Debug, Clone)]
pub struct Identity {
    /// The provider's issuer URL, or `proxy:HEADER`.
    pub issuer: String,
    /// The provider's stable id for the person (`sub`), or the proxy header's value.
    pub subject: String,
    pub preferred_username: Option<String>,
    pub email: Option<String>,
    /// `None`: the provider said nothing about groups (the role is then left as it is).
    pub groups: Option<Vec<String>>,
}

/// What the operator allows at sign-in.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// Only people with an account already: a first sign-in must match an existing
    /// account by name (which it is then tied to); nobody new is made.
    pub known_users_only: bool,
    /// A first sign-in whose name matches an existing account is tied to that account
    /// (instead of making a new one with a `-2` suffix).
    pub link_by_name: bool,
    /// Groups → role, applied at every sign-in. Unset: new users are viewers and roles are
    /// set by admins.
    pub role_map: Option<RoleMap>,
}

#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    #[error(
        "there is no perfjournal account named {0:?} and this server lets only existing \
         accounts sign in; ask an admin to add the account"
    )]
    Unknown(String),
    #[error("the account {0} is disabled; ask an admin to enable it")]
    Disabled(String),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

/// The role an identity earns, if the operator maps roles and the provider named groups.
fn mapped_role(identity: &Identity, policy: &Policy) -> Option<Role> {
    let map = policy.role_map.as_ref()?;
    let groups = identity.groups.as_deref()?;
    Some(map.role_for(groups).into())
}

/// Signs an identity in: finds its user (or ties it to an existing account, or makes a new
/// one, as the policy says), records the groups, and sets the role from them.
pub async fn sign_in(
    pool: &PgPool,
    copies: &UserCopies,
    identity: &Identity,
    policy: &Policy,
) -> Result<User, SignInError> {
    let groups: Vec<String> = identity.groups.clone().unwrap_or_default();
    let linked: Option<i64> = sqlx::query_scalar(
        "SELECT user_id FROM external_identities WHERE issuer = $1 AND subject = $2",
    )
    .bind(&identity.issuer)
    .bind(&identity.subject)
    .fetch_optional(pool)
    .await?;
    let user_id = match linked {
        Some(id) => {
            // A disabled account's sign-in is refused before anything is recorded.
            if let Some(user) = users::by_id(pool, id).await?.filter(|u| u.disabled) {
                return Err(SignInError::Disabled(user.name));
            }
            sqlx::query(
                "UPDATE external_identities SET last_sign_in_at = now(), groups = $3, email = $4
                 WHERE issuer = $1 AND subject = $2",
            )
            .bind(&identity.issuer)
            .bind(&identity.subject)
            .bind(&groups)
            .bind(&identity.email)
            .execute(pool)
            .await?;
            id
        }
        None => first_sign_in(pool, identity, policy, &groups).await?,
    };
    let Some(mut user) = users::by_id(pool, user_id).await? else {
        return Err(sqlx::Error::RowNotFound.into());
    };
    if user.disabled {
        return Err(SignInError::Disabled(user.name));
    }
    if let Some(role) = mapped_role(identity, policy) {
        if role != user.role {
            tracing::info!(user = %user.name, from = %user.role, to = %role, "role set from the provider's groups");
            users::set_role(pool, copies, user.id, role).await?;
            user.role = role;
        }
    }
    Ok(user)
}

/// The user a first sign-in is tied to: an existing account by name when allowed, else a
/// new one (refused in known-users-only mode).
async fn first_sign_in(
    pool: &PgPool,
    identity: &Identity,
    policy: &Policy,
    groups: &[String],
) -> Result<i64, SignInError> {
    let base = sso::user_name_for(
        identity.preferred_username.as_deref(),
        identity.email.as_deref(),
    );
    let mut tx = pool.begin().await?;
    let existing: Option<i64> = if policy.known_users_only || policy.link_by_name {
        // Only an account no identity of this issuer has claimed yet.
        sqlx::query_scalar(
            "SELECT u.id FROM users u WHERE lower(u.name) = lower($1)
               AND NOT EXISTS (SELECT 1 FROM external_identities e
                               WHERE e.user_id = u.id AND e.issuer = $2)",
        )
        .bind(&base)
        .bind(&identity.issuer)
        .fetch_optional(&mut *tx)
        .await?
    } else {
        None
    };
    let user_id = match existing {
        Some(id) => id,
        None if policy.known_users_only => return Err(SignInError::Unknown(base)),
        None => {
            let role = mapped_role(identity, policy).unwrap_or(Role::Viewer);
            let mut made = None;
            for n in 1..=50u32 {
                let name = sso::nth_name(&base, n);
                let id: Option<i64> = sqlx::query_scalar(
                    "INSERT INTO users (name, password_hash, role) VALUES ($1, $2, $3)
                     ON CONFLICT DO NOTHING RETURNING id",
                )
                .bind(&name)
                .bind(NO_PASSWORD)
                .bind(role.as_str())
                .fetch_optional(&mut *tx)
                .await?;
                if let Some(id) = id {
                    tracing::info!(user = %name, issuer = %identity.issuer, "account made at first sign-in");
                    made = Some(id);
                    break;
                }
            }
            made.ok_or_else(|| SignInError::Unknown(base.clone()))?
        }
    };
    let tied: Option<i64> = sqlx::query_scalar(
        "INSERT INTO external_identities (issuer, subject, user_id, email, groups)
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (issuer, subject) DO NOTHING RETURNING user_id",
    )
    .bind(&identity.issuer)
    .bind(&identity.subject)
    .bind(user_id)
    .bind(&identity.email)
    .bind(groups)
    .fetch_optional(&mut *tx)
    .await?;
    if tied.is_none() {
        // The same person's other sign-in (another tab, another replica) got there first:
        // drop what this one made and use theirs.
        tx.rollback().await?;
        return Ok(sqlx::query_scalar(
            "SELECT user_id FROM external_identities WHERE issuer = $1 AND subject = $2",
        )
        .bind(&identity.issuer)
        .bind(&identity.subject)
        .fetch_one(pool)
        .await?);
    }
    tx.commit().await?;
    Ok(user_id)
}

/// The trusted reverse-proxy mode: a proxy in front (oauth2-proxy and the like) signs
/// people in and names them in a header; the header is believed only from its addresses.
#[derive(Debug, Clone)]
pub struct ProxyAuth {
    /// The header, lower-case (`x-forwarded-user`).
    pub header: String,
    /// A header listing the user's groups (comma-separated), lower-case, if the proxy sends one.
    pub groups_header: Option<String>,
    pub trusted: Vec<ProxyNet>,
}

/// What to do with a request, by the proxy header and the peer's address.
#[derive(Debug, PartialEq, Eq)]
pub enum ProxyVerdict {
    /// No header: the request goes on as any other (session, login page).
    Absent,
    /// From a trusted proxy: sign this user in.
    User(String),
    /// Refuse the request, saying why.
    Refuse(String),
}

impl ProxyAuth {
    pub fn issuer(&self) -> String {
        format!("proxy:{}", self.header)
    }

    pub fn verdict(&self, peer: Option<IpAddr>, value: Option<&[u8]>) -> ProxyVerdict {
        let Some(value) = value else {
            return ProxyVerdict::Absent;
        };
        let trusted = peer.is_some_and(|ip| self.trusted.iter().any(|n| n.contains(ip)));
        if !trusted {
            let from = peer.map_or("an unknown address".to_string(), |ip| ip.to_string());
            return ProxyVerdict::Refuse(format!(
                "the {} header is accepted only from the trusted proxies, and this request came from {from}",
                self.header
            ));
        }
        let Ok(text) = std::str::from_utf8(value) else {
            return ProxyVerdict::Refuse(format!("the {} header is not UTF-8", self.header));
        };
        match sso::proxy_user(text) {
            Ok(user) => ProxyVerdict::User(user.to_string()),
            Err(why) => ProxyVerdict::Refuse(format!("{}: {why}", self.header)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_proxy_header_is_believed_only_from_trusted_addresses() {
        let proxy = ProxyAuth {
            header: "x-forwarded-user".into(),
            groups_header: None,
            trusted: vec!["10.0.0.0/8".parse().unwrap(), "127.0.0.1".parse().unwrap()],
        };
        let ip = |s: &str| Some(s.parse::<IpAddr>().unwrap());
        assert_eq!(proxy.verdict(ip("10.1.2.3"), None), ProxyVerdict::Absent);
        assert_eq!(
            proxy.verdict(ip("10.1.2.3"), Some(b"ada")),
            ProxyVerdict::User("ada".into())
        );
        assert_eq!(
            proxy.verdict(ip("::ffff:127.0.0.1"), Some(b"ada")),
            ProxyVerdict::User("ada".into())
        );
        match proxy.verdict(ip("192.168.1.5"), Some(b"ada")) {
            ProxyVerdict::Refuse(why) => assert!(why.contains("192.168.1.5"), "{why}"),
            v => panic!("{v:?}"),
        }
        assert!(matches!(
            proxy.verdict(None, Some(b"ada")),
            ProxyVerdict::Refuse(_)
        ));
        assert!(matches!(
            proxy.verdict(ip("10.1.2.3"), Some(b" ")),
            ProxyVerdict::Refuse(_)
        ));
    }
}
