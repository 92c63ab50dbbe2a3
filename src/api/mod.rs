//! The JSON API under `/api/v1`, described by an OpenAPI document generated from the
//! handlers themselves (utoipa), so the document cannot drift from the code.

pub(crate) mod artifacts;
pub(crate) mod comparisons;
mod estimate;
mod investigations;
mod journal;
pub(crate) mod proposals;
mod search;

use axum::Json;
use serde::Serialize;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::ApiUser;
use crate::state::AppState;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "perfjournal API",
        description = "Investigations, estimators and the journal for LLM serving performance. \
                       Authenticate with `Authorization: Bearer <token>` (tokens are created on \
                       the settings page)."
    ),
    modifiers(&BearerAuth),
    security(("bearer" = []))
)]
struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
        );
    }
}

/// Routes that stream large bodies (no timeout, no default body limit).
pub fn upload_router() -> OpenApiRouter<AppState> {
    artifacts::upload_router()
}

/// All other API routes (paths relative to `/api/v1`) and their OpenAPI description.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(whoami))
        .merge(estimate::router())
        .merge(artifacts::router())
        .merge(comparisons::router())
        .merge(proposals::router())
        .routes(routes!(
            investigations::create_investigation,
            investigations::list_investigations
        ))
        .routes(routes!(investigations::get_investigation))
        .routes(routes!(investigations::put_step))
        .routes(routes!(journal::list_entries))
        .routes(routes!(journal::get_entry))
        .routes(routes!(search::search_documents))
        .routes(routes!(search::similar_investigations))
}

#[derive(Serialize, ToSchema)]
pub struct Me {
    pub id: i64,
    pub name: String,
    /// viewer, editor or admin
    pub role: String,
}

/// The account the token or session belongs to.
#[utoipa::path(get, path = "/me", tag = "account",
    responses((status = 200, body = Me), (status = 401, body = crate::error::ErrorBody)))]
async fn whoami(ApiUser(user): ApiUser) -> Json<Me> {
    Json(Me {
        id: user.id,
        name: user.name,
        role: user.role.to_string(),
    })
}
