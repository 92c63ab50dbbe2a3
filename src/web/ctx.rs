//! What every page's layout needs: the user, the CSRF token, the current path.

use axum::extract::{FromRef, FromRequestParts};
use axum::http::request::Parts;

use crate::auth::extract::{session_of, session_user, AuthContext};
use crate::auth::{csrf, CurrentUser, Role, User};
use crate::core::FieldError;
use crate::error::AppError;
use crate::state::AppState;

pub struct PageCtx {
    pub user: Option<User>,
    pub csrf: String,
    pub path: String,
}

impl PageCtx {
    /// `class="active"` material for the navigation.
    pub fn nav(&self, prefix: &str) -> &'static str {
        if self.path == prefix || self.path.starts_with(&format!("{prefix}/")) {
            "active"
        } else {
            ""
        }
    }

    pub fn can_edit(&self) -> bool {
        self.user.as_ref().is_some_and(|u| u.role >= Role::Editor)
    }

    pub fn is_admin(&self) -> bool {
        self.user.as_ref().is_some_and(|u| u.role >= Role::Admin)
    }
}

impl FromRequestParts<AppState> for PageCtx {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, AppError> {
        let session = session_of(parts)?;
        let user = match parts.extensions.get::<CurrentUser>() {
            Some(u) => Some(u.0.clone()),
            None => session_user(&session, &AuthContext::from_ref(state)).await?,
        };
        Ok(PageCtx {
            user,
            csrf: csrf::token(&session).await?,
            path: parts.uri.path().to_string(),
        })
    }
}

/// Field errors of a submitted form, looked up by field name in templates.
#[derive(Debug, Default, Clone)]
pub struct FormErrors(pub Vec<FieldError>);

impl FormErrors {
    pub fn get(&self, field: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|e| e.field == field)
            .map(|e| e.message.as_str())
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn all(&self) -> &[FieldError] {
        &self.0
    }
}

impl From<Vec<FieldError>> for FormErrors {
    fn from(v: Vec<FieldError>) -> Self {
        FormErrors(v)
    }
}
