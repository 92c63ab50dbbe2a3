//! The home page and the areas that later work fills, each with an honest empty state.

use askama::Template;
use axum::response::Html;
use axum::routing::get;
use axum::Router;

use super::{render, PageCtx};
use crate::error::Result;
use crate::state::AppState;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(home))
        .route("/drills", get(drills))
}

#[derive(Template)]
#[template(path = "home.html")]
struct HomePage {
    ctx: PageCtx,
}

async fn home(ctx: PageCtx) -> Result<Html<String>> {
    render(&HomePage { ctx })
}

/// An area with nothing in it yet: what it will hold, and what to do meanwhile.
#[derive(Template)]
#[template(path = "areas/empty.html")]
struct EmptyArea {
    ctx: PageCtx,
    title: &'static str,
    lead: &'static str,
    empty: &'static str,
    meanwhile: &'static str,
}

async fn drills(ctx: PageCtx) -> Result<Html<String>> {
    render(&EmptyArea {
        ctx,
        title: "Drills",
        lead: "Drills train new engineers to predict a number before looking it up: given a chain's inputs, compute the expected value, then compare with the worked chain.",
        empty: "No drills yet: practice items are not part of this version.",
        meanwhile: "Open an estimator, cover the result, and work the chain by hand.",
    })
}
