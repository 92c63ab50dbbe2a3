//! `app(state)` builds the whole router (tests drive it without a port); `serve` binds,
//! runs, and shuts down gracefully.

use axum::extract::ConnectInfo;
use axum::http::Request;
use tower::ServiceExt;

use crate::config::Config;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::compression::CompressionLayer;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;
use tower_sessions::cookie::SameSite;
use tower_sessions::{CachingSessionStore, Expiry, SessionManagerLayer};
use tower_sessions_sqlx_store::PostgresStore;

use crate::auth::extract::{require_api_user, require_login};
use crate::auth::sessions::SessionCopies;
use crate::error::{ApiError, AppError};
use crate::state::AppState;

pub fn app(state: AppState) -> Router {
    let timeout = || {
        TimeoutLayer::with_status_code(StatusCode::REQUEST_TIMEOUT, state.config.request_timeout)
    };
    let (api, mut openapi) = crate::api::router().split_for_parts();
    let (api_uploads, upload_doc) = crate::api::upload_router().split_for_parts();
    openapi.merge(upload_doc);
    let openapi = Arc::new(crate::api::complete(openapi));
    // The API document is served without a token (it describes the API, it holds no
    // data), so client generators can read it; `/api/openapi.json` leads to it.
    let document = Router::new()
        .route(
            "/api/v1/openapi.json",
            get(move || {
                let doc = openapi.clone();
                async move { Json(doc.as_ref().clone()) }
            }),
        )
        .route(
            "/api/openapi.json",
            get(|| async { axum::response::Redirect::permanent("/api/v1/openapi.json") }),
        )
        .layer(timeout());
    let api = api
        .layer(timeout())
        .merge(api_uploads.layer(DefaultBodyLimit::disable()))
        .fallback(|| async { ApiError(AppError::not_found("no such API route")) })
        .method_not_allowed_fallback(|method: axum::http::Method| async move {
            ApiError(AppError::MethodNotAllowed(format!(
                "this API route does not accept {method}"
            )))
        })
        .layer(from_fn_with_state(state.clone(), require_api_user));

    let private = crate::web::private_routes()
        .layer(timeout())
        .merge(crate::web::upload_routes().layer(DefaultBodyLimit::disable()))
        .fallback(|| async { AppError::not_found("there is no page at this address") })
        .method_not_allowed_fallback(crate::web::method_not_allowed)
        .layer(from_fn_with_state(state.clone(), require_login));

    // Sessions are read through a one-second copy in memory (crate::auth::cache).
    let store = CachingSessionStore::new(
        SessionCopies::default(),
        PostgresStore::new(state.pool.clone()),
    );
    let sessions = SessionManagerLayer::new(store)
        .with_name(crate::auth::csrf::SESSION_COOKIE)
        .with_http_only(true)
        .with_same_site(SameSite::Lax)
        .with_secure(state.config.secure_cookies)
        .with_expiry(Expiry::OnInactivity(
            tower_sessions::cookie::time::Duration::seconds(
                state.config.session_idle.as_secs() as i64
            ),
        ));

    Router::new()
        .merge(document)
        .nest("/api/v1", api)
        .merge(
            crate::web::public_routes()
                .method_not_allowed_fallback(crate::web::method_not_allowed)
                .layer(timeout()),
        )
        .merge(private)
        .layer(from_fn_with_state(
            state.clone(),
            crate::http_metrics::record,
        ))
        .layer(axum_htmx::AutoVaryLayer)
        .layer(from_fn_with_state(state.clone(), crate::auth::csrf::verify))
        .layer(from_fn_with_state(
            state.clone(),
            crate::web::sso::proxy_sign_in,
        ))
        .layer(sessions)
        .route("/static/{*file}", get(crate::web::assets::serve))
        // The OTLP/HTTP receiver: token-only (no session, no CSRF), its own body limits.
        .route(
            "/v1/traces",
            axum::routing::post(crate::api::otlp_receiver::receive),
        )
        .layer(DefaultBodyLimit::max(state.config.body_limit))
        .layer(
            ServiceBuilder::new()
                // A page may send its own (the sign-in page, see web::csp::with_form_action).
                .layer(SetResponseHeaderLayer::if_not_present(
                    header::CONTENT_SECURITY_POLICY,
                    HeaderValue::from_static(crate::web::csp::CSP),
                ))
                .layer(header_layer(header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
                .layer(header_layer(header::REFERRER_POLICY, "same-origin"))
                .layer(header_layer(header::X_FRAME_OPTIONS, "DENY"))
                .layer(CatchPanicLayer::custom(panic_response))
                .layer(TraceLayer::new_for_http())
                .layer(CompressionLayer::new()),
        )
        .with_state(state)
}

fn header_layer(name: HeaderName, value: &'static str) -> SetResponseHeaderLayer<HeaderValue> {
    SetResponseHeaderLayer::overriding(name, HeaderValue::from_static(value))
}

fn panic_response(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    AppError::Internal(anyhow::anyhow!("a handler panicked")).into_response()
}

/// Binds, serves until SIGINT/SIGTERM, then lets in-flight requests finish.
pub async fn serve(state: AppState, bind: &str) -> anyhow::Result<()> {
    match state.blobs.remove_interrupted_uploads() {
        Ok(0) => {}
        Ok(n) => tracing::info!(
            removed = n,
            "removed the partial files of interrupted uploads"
        ),
        Err(e) => {
            tracing::warn!(error = %e, "cannot remove the partial files of interrupted uploads")
        }
    }
    let listener = tokio::net::TcpListener::bind(bind)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {bind}: {e}"))?;
    let addr = listener.local_addr()?;
    tracing::info!("perfjournal listening on http://{addr}");

    let store = PostgresStore::new(state.pool.clone());
    let sweeper = tokio::spawn(
        tower_sessions::session_store::ExpiredDeletion::continuously_delete_expired(
            store,
            Duration::from_secs(600),
        ),
    );
    // Trace sets whose last rank just finished (here or in another replica) are
    // summarised at every pass of the analysis worker.
    let worker = tokio::spawn(crate::artifacts::ingest::run_worker(
        state.artifacts(),
        |pool| async move {
            if let Err(e) = crate::trace_sets::settle_all(&pool).await {
                tracing::error!(error = %e, "summarising trace sets");
            }
        },
    ));
    // Uploads are compressed once their analysis is over.
    let compactor = tokio::spawn(crate::artifacts::compact::run_compactor(state.artifacts()));
    let blob_sweeper = tokio::spawn(sweep_blobs(state.clone()));
    // OTLP span windows are analysed once they close.
    let span_windows = tokio::spawn(crate::otlp::sweep(state.artifacts()));
    // Webhook deliveries go out from their queue, never on a request's path.
    let hooks = tokio::spawn(crate::webhooks::run_worker(
        state.pool.clone(),
        state.config.webhook_allowed.clone(),
    ));
    // Grafana annotations, when a Grafana is configured; otherwise they wait in their table.
    let grafana = state.config.grafana.clone().map(|target| {
        tokio::spawn(crate::grafana::run_worker(
            state.pool.clone(),
            target,
            state.config.public_url.clone(),
        ))
    });
    // The OpenID provider is discovered now, so the log says at start whether it is
    // reachable (a few tries; sign-ins try again themselves).
    if let Some(oidc) = state.oidc.clone() {
        tokio::spawn(async move {
            for attempt in 1..=5u32 {
                match oidc.discover().await {
                    Ok(_) => return,
                    Err(e) => {
                        tracing::warn!(attempt, "OpenID provider not discovered yet: {e}");
                        tokio::time::sleep(Duration::from_secs(2u64.pow(attempt))).await;
                    }
                }
            }
        });
    }
    // Live captures cut off by a restart end `failed` instead of `capturing` for ever.
    let captures = tokio::spawn(crate::capture::settle_abandoned(state.pool.clone()));
    // The search index loads in the background, so the first search does not wait.
    let (search, pool) = (state.search.clone(), state.pool.clone());
    tokio::spawn(async move {
        let started = std::time::Instant::now();
        match search.warm(&pool).await {
            Ok((documents, bytes)) => tracing::info!(
                documents,
                mib = bytes / (1024 * 1024),
                ms = started.elapsed().as_millis() as u64,
                "search index loaded"
            ),
            Err(e) => tracing::warn!("search index not loaded yet: {e}"),
        }
    });
    // Changes reach the search index from here, never on a request's path.
    let indexer = tokio::spawn(state.search.clone().run_indexer(state.pool.clone()));
    let throttle = state.throttle.clone();
    let throttle_sweeper = tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(300));
        loop {
            tick.tick().await;
            throttle.sweep();
        }
    });

    serve_connections(listener, app(state.clone()), &state.config).await;
    sweeper.abort();
    throttle_sweeper.abort();
    indexer.abort();
    worker.abort();
    blob_sweeper.abort();
    compactor.abort();
    span_windows.abort();
    hooks.abort();
    if let Some(g) = grafana {
        g.abort();
    }
    captures.abort();
    tracing::info!("server stopped");
    Ok(())
}

/// Accepts connections until SIGINT/SIGTERM, then waits for in-flight requests. Each
/// connection is HTTP/1.1 with a header read timeout: a client that has not sent a
/// request's headers within `header_read_timeout` is disconnected, so slow senders cannot
/// hold connections open.
async fn serve_connections(listener: tokio::net::TcpListener, router: Router, config: &Config) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(config.header_read_timeout);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let shutdown = shutdown_signal();
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    // Out of file descriptors and the like: wait a moment instead of spinning.
                    tracing::warn!(error = %e, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let service = hyper::service::service_fn(move |mut req: Request<hyper::body::Incoming>| {
            req.extensions_mut().insert(ConnectInfo(peer));
            let router = router.clone();
            async move { router.oneshot(req.map(axum::body::Body::new)).await }
        });
        let conn = graceful.watch(builder.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// Hourly: blobs no artifact points to (interrupted or failed uploads, deleted rows)
/// go once they are a day old. Of several replicas, one sweeps each hour.
async fn sweep_blobs(state: AppState) {
    const EVERY: Duration = Duration::from_secs(3600);
    let mut tick = tokio::time::interval(Duration::from_secs(300));
    loop {
        tick.tick().await;
        match crate::db::claim_periodic(&state.pool, "blob_sweep", EVERY).await {
            Ok(true) => {}
            Ok(false) => continue,
            Err(e) => {
                tracing::warn!(error = %e, "blob sweep: cannot claim the run");
                continue;
            }
        }
        let pool = state.pool.clone();
        let result = state
            .blobs
            .sweep(Duration::from_secs(24 * 3600), |sha, encoding| {
                let pool = pool.clone();
                async move {
                    // When in doubt (database down), keep the blob.
                    crate::artifacts::blob_in_use(&pool, &sha, encoding)
                        .await
                        .unwrap_or(true)
                }
            })
            .await;
        match result {
            Ok(0) => {}
            Ok(n) => tracing::info!(removed = n, "swept unreferenced blobs"),
            Err(e) => tracing::warn!(error = %e, "blob sweep"),
        }
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        tokio::signal::ctrl_c().await.ok();
    };
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
    tracing::info!("shutdown signal received; finishing in-flight requests");
}
