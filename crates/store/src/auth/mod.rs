//! Accounts, roles, API tokens, single sign-on and the login throttle. Sessions, CSRF and
//! the request extractors that read them are the binary's (`src/auth/`).

pub mod cache;
pub mod external;
pub mod oidc;
pub mod password;
pub mod throttle;
pub mod tokens;
pub mod users;

pub use users::{Role, User};
