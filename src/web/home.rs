//! The home page.

use askama::Template;
use axum::response::Html;
use axum::routing::get;
use axum::Router;

use super::{render, PageCtx};
use crate::error::Result;
use crate::state::AppState;

pub fn routes() -> Router<AppState> {
    Router::new().route("/", get(home))
}

#[derive(Template)]
#[template(path = "home.html")]
struct HomePage {
    ctx: PageCtx,
}

async fn home(ctx: PageCtx) -> Result<Html<String>> {
    render(&HomePage { ctx })
}
