//! What every handler can reach.

use std::sync::Arc;

use axum::extract::FromRef;
use sqlx::PgPool;
use tokio::sync::Notify;

use crate::artifacts::ArtifactStore;
use crate::auth::cache::UserCopies;
use crate::auth::extract::AuthContext;
use crate::auth::throttle::LoginThrottle;
use crate::config::Config;
use crate::http_metrics::HttpMetrics;
use crate::search::Searcher;
use crate::storage::BlobStore;

/// Cloned for every extractor of every request, so it is one shared pointer: cloning
/// the fields themselves (eight reference counts bumped and dropped from both cores)
/// was an eighth of the server's CPU on a cheap page under load.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl std::ops::Deref for AppState {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.0
    }
}

pub struct Shared {
    pub pool: PgPool,
    pub config: Arc<Config>,
    pub throttle: Arc<LoginThrottle>,
    pub metrics: Arc<HttpMetrics>,
    pub blobs: BlobStore,
    /// Wakes the analysis worker when an upload is queued.
    pub jobs: Arc<Notify>,
    /// Wakes the compactor when an analysis ends (see artifacts::compact).
    pub compactions: Arc<Notify>,
    /// The search index, kept in memory and in step with the database.
    pub search: Arc<Searcher>,
    /// Users as the session and token checks read them, for at most a second.
    pub users: Arc<UserCopies>,
    /// The embedded cluster's supervisor record, when the app runs its own cluster.
    pub embedded: Option<Arc<crate::db::supervisor::ClusterHealth>>,
    /// Uploads being received now (see artifacts::UploadSlots).
    pub upload_slots: Arc<crate::artifacts::UploadSlots>,
    /// Analyses running now (see artifacts::analysis_places).
    pub analyses: Arc<tokio::sync::Semaphore>,
    /// The OpenID provider, when sign-in through one is configured.
    pub oidc: Option<Arc<crate::auth::oidc::Oidc>>,
}

impl AppState {
    /// What the artifact upload and analysis code needs.
    pub fn artifacts(&self) -> ArtifactStore {
        ArtifactStore {
            pool: self.pool.clone(),
            blobs: self.blobs.clone(),
            jobs: self.jobs.clone(),
            compactions: self.compactions.clone(),
            upload_limit: self.config.upload_limit,
            max_decompressed_bytes: self.config.max_decompressed_bytes,
            upload_idle_timeout: self.config.upload_idle_timeout,
            streamed_load_budget: self.config.streamed_load_budget,
            upload_slots: self.upload_slots.clone(),
            analyses: self.analyses.clone(),
        }
    }

    pub fn new(pool: PgPool, config: Config, blobs: BlobStore) -> Self {
        AppState(Arc::new(Shared {
            pool,
            throttle: Arc::new(LoginThrottle::new(
                config.login_per_minute_user,
                config.login_per_minute_ip,
            )),
            upload_slots: Arc::new(crate::artifacts::UploadSlots::new(
                config.max_uploads_per_user,
                config.max_uploads,
            )),
            analyses: Arc::new(tokio::sync::Semaphore::new(
                crate::artifacts::analysis_places(),
            )),
            oidc: config
                .sign_in
                .oidc
                .clone()
                .map(|s| Arc::new(crate::auth::oidc::Oidc::new(s))),
            config: Arc::new(config),
            metrics: Arc::new(HttpMetrics::new()),
            blobs,
            jobs: Arc::new(Notify::new()),
            compactions: Arc::new(Notify::new()),
            search: Arc::new(Searcher::new()),
            users: Arc::new(UserCopies::default()),
            embedded: None,
        }))
    }

    /// The same state reporting the embedded cluster's supervisor in `/healthz`. Before
    /// the state is cloned.
    pub fn with_embedded(mut self, health: Arc<crate::db::supervisor::ClusterHealth>) -> Self {
        Arc::get_mut(&mut self.0)
            .expect("with_embedded is called before the state is shared")
            .embedded = Some(health);
        self
    }
}

impl FromRef<AppState> for PgPool {
    fn from_ref(state: &AppState) -> PgPool {
        state.pool.clone()
    }
}

impl FromRef<AppState> for Arc<Config> {
    fn from_ref(state: &AppState) -> Arc<Config> {
        state.config.clone()
    }
}

impl FromRef<AppState> for Arc<HttpMetrics> {
    fn from_ref(state: &AppState) -> Arc<HttpMetrics> {
        state.metrics.clone()
    }
}

impl FromRef<AppState> for AuthContext {
    fn from_ref(state: &AppState) -> AuthContext {
        AuthContext {
            pool: state.pool.clone(),
            config: state.config.clone(),
            users: state.users.clone(),
        }
    }
}
