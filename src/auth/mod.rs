//! Sessions, CSRF and the extractors that tell a handler who is asking. Accounts, roles,
//! tokens, single sign-on and the throttle are the store's (`perfjournal_store::auth`),
//! re-exported here so a handler names one `auth`.

pub mod client;
pub mod csrf;
pub mod extract;
pub mod sessions;

pub use extract::{ApiUser, CurrentUser};
pub use perfjournal_store::auth::{
    cache, external, oidc, password, throttle, tokens, users, Role, User,
};

/// Session keys.
pub(crate) const SESSION_USER: &str = "uid";
pub(crate) const SESSION_AUTH_AT: &str = "auth_at";
/// The user's session generation at sign-in; a session from an older generation has ended.
pub(crate) const SESSION_GENERATION: &str = "gen";
pub(crate) const SESSION_CSRF: &str = "csrf";
