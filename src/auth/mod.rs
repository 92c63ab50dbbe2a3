//! Accounts, roles, sessions, API tokens, CSRF and the login throttle.

pub mod cache;
pub mod csrf;
pub mod external;
pub mod extract;
pub mod oidc;
pub mod password;
pub mod throttle;
pub mod tokens;
pub mod users;

pub use extract::{ApiUser, CurrentUser};
pub use users::{Role, User};

/// Session keys.
pub(crate) const SESSION_USER: &str = "uid";
pub(crate) const SESSION_AUTH_AT: &str = "auth_at";
/// The user's session generation at sign-in; a session from an older generation has ended.
pub(crate) const SESSION_GENERATION: &str = "gen";
pub(crate) const SESSION_CSRF: &str = "csrf";
