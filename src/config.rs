//! Flags and environment → `Config`. Every knob has an environment variable so the
//! same binary runs from a terminal, a unit file or a container.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::otlp::OtlpLimits;

/// Settings shared by every subcommand that touches the database.
#[derive(Debug, Clone, Args)]
pub struct DbArgs {
    /// PostgreSQL server to use. Unset: the app runs its own private cluster under the data dir.
    #[arg(long, env = "DATABASE_URL", global = true, hide_env_values = true)]
    pub database_url: Option<String>,

    /// Where the embedded cluster, uploaded files and backups live.
    #[arg(
        long,
        env = "PERFJOURNAL_DATA_DIR",
        default_value = "./data",
        global = true
    )]
    pub data_dir: PathBuf,
}

/// Settings of the web server.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "PERFJOURNAL_BIND", default_value = "127.0.0.1:8080")]
    pub bind: String,

    /// The address users reach the app by; an https:// URL marks session cookies Secure.
    #[arg(long, env = "PERFJOURNAL_PUBLIC_URL")]
    pub public_url: Option<String>,

    /// Log as JSON lines instead of human-readable text.
    #[arg(long, env = "PERFJOURNAL_LOG_JSON")]
    pub log_json: bool,

    /// Seconds before a request is answered with 408.
    #[arg(long, env = "PERFJOURNAL_REQUEST_TIMEOUT", default_value_t = 30)]
    pub request_timeout_secs: u64,

    /// Largest accepted form or JSON body, in bytes (uploads have their own limit).
    #[arg(long, env = "PERFJOURNAL_BODY_LIMIT", default_value_t = 2 * 1024 * 1024)]
    pub body_limit: usize,

    /// Largest accepted upload, in bytes (default 2 GiB).
    #[arg(long, env = "PERFJOURNAL_UPLOAD_LIMIT", default_value_t = 2 * 1024 * 1024 * 1024)]
    pub upload_limit: u64,

    /// Analysis stops once a compressed upload has expanded past this many bytes
    /// (gzip-bomb guard; default 64 GiB).
    #[arg(long, env = "PERFJOURNAL_MAX_DECOMPRESSED", default_value_t = 64 << 30)]
    pub max_decompressed_bytes: u64,

    /// Keep uploaded files in this S3-compatible bucket (credentials, region and endpoint
    /// from the AWS_* variables) instead of the data directory.
    #[arg(long, env = "PERFJOURNAL_S3_BUCKET")]
    pub s3_bucket: Option<String>,

    /// Grafana to annotate with each recorded CHANGE and published entry (its base URL,
    /// e.g. https://grafana.example.com); needs a service-account token.
    #[arg(long, env = "PERFJOURNAL_GRAFANA_URL")]
    pub grafana_url: Option<String>,

    /// The Grafana service-account token (Editor role, or annotations:write).
    #[arg(long, env = "PERFJOURNAL_GRAFANA_TOKEN", hide_env_values = true)]
    pub grafana_token: Option<String>,

    /// A file holding the Grafana token, instead of --grafana-token.
    #[arg(long, env = "PERFJOURNAL_GRAFANA_TOKEN_FILE")]
    pub grafana_token_file: Option<PathBuf>,

    /// Seconds a client has to send a request's headers before the connection is closed.
    /// Minutes of one OTLP span window: spans received on /v1/traces are kept per
    /// service and window, and a window is analysed when it closes.
    #[arg(long, env = "PERFJOURNAL_OTLP_WINDOW_MINUTES", default_value_t = 60)]
    pub otlp_window_minutes: u32,

    /// Most request spans kept per service and window (the rest are counted and refused
    /// in the export's partial success).
    #[arg(
        long,
        env = "PERFJOURNAL_OTLP_MAX_ROWS_PER_WINDOW",
        default_value_t = 200_000
    )]
    pub otlp_max_rows_per_window: u32,

    /// Largest OTLP export body accepted on /v1/traces, in bytes as sent (16 MiB).
    #[arg(long, env = "PERFJOURNAL_OTLP_BODY_LIMIT", default_value_t = 16 << 20)]
    pub otlp_body_limit: usize,

    /// Largest OTLP export body once gzip is undone, in bytes (64 MiB).
    #[arg(long, env = "PERFJOURNAL_OTLP_MAX_DECOMPRESSED", default_value_t = 64 << 20)]
    pub otlp_max_decompressed: usize,

    /// Most spans read from one OTLP export; more are counted and refused in its
    /// partial success.
    #[arg(
        long,
        env = "PERFJOURNAL_OTLP_MAX_SPANS_PER_EXPORT",
        default_value_t = 16_384
    )]
    pub otlp_max_spans_per_export: u32,

    /// Days back a span's start may lie (older spans are refused); also the stretch
    /// over which the service and window limits count.
    #[arg(long, env = "PERFJOURNAL_OTLP_RETENTION_DAYS", default_value_t = 30)]
    pub otlp_retention_days: u32,

    /// Most services (service.name) with windows in the retention period; spans of a
    /// new service beyond it are refused.
    #[arg(long, env = "PERFJOURNAL_OTLP_MAX_SERVICES", default_value_t = 100)]
    pub otlp_max_services: u32,

    /// Most span windows in the retention period, all users together.
    #[arg(long, env = "PERFJOURNAL_OTLP_MAX_WINDOWS", default_value_t = 20_000)]
    pub otlp_max_windows: u32,

    /// Most span windows in the retention period opened by one user's tokens.
    #[arg(
        long,
        env = "PERFJOURNAL_OTLP_MAX_WINDOWS_PER_USER",
        default_value_t = 5_000
    )]
    pub otlp_max_windows_per_user: u32,

    #[arg(long, env = "PERFJOURNAL_HEADER_READ_TIMEOUT", default_value_t = 30)]
    pub header_read_timeout_secs: u64,

    /// Seconds an upload's body may send nothing before the upload is dropped with 408.
    #[arg(long, env = "PERFJOURNAL_UPLOAD_IDLE_TIMEOUT", default_value_t = 60)]
    pub upload_idle_timeout_secs: u64,

    /// Seconds a request log's rows may be loaded while its body arrives. A body still
    /// arriving after that has its load rolled back (freeing the database connection and
    /// ending the open transaction) and is loaded from the stored file once complete.
    #[arg(long, env = "PERFJOURNAL_STREAMED_LOAD_SECS", default_value_t = 60)]
    pub streamed_load_secs: u64,

    /// Uploads one user may have running at once (more answer 429).
    #[arg(long, env = "PERFJOURNAL_MAX_UPLOADS_PER_USER", default_value_t = 4)]
    pub max_uploads_per_user: usize,

    /// Uploads the server receives at once, all users together (more answer 503).
    #[arg(long, env = "PERFJOURNAL_MAX_UPLOADS", default_value_t = 64)]
    pub max_uploads: usize,

    /// Minutes of inactivity after which a session ends.
    #[arg(long, env = "PERFJOURNAL_SESSION_IDLE_MINUTES", default_value_t = 120)]
    pub session_idle_minutes: i64,

    /// Hours after login after which a session ends, active or not.
    #[arg(long, env = "PERFJOURNAL_SESSION_MAX_HOURS", default_value_t = 24)]
    pub session_max_hours: i64,

    /// host:port pairs added to the live-capture allowlist at start-up (comma-separated;
    /// they stay listed until an admin removes them on /admin/capture-hosts).
    #[arg(
        long = "capture-host",
        env = "PERFJOURNAL_CAPTURE_HOSTS",
        value_delimiter = ','
    )]
    pub capture_hosts: Vec<String>,

    /// Reverse proxies (addresses or CIDR blocks, comma-separated) whose X-Forwarded-For is
    /// believed: from them, the client address for the login throttle is the right-most
    /// address in that header that is not itself a trusted proxy. Unset: the peer's address.
    #[arg(
        long = "trusted-proxies",
        env = "PERFJOURNAL_TRUSTED_PROXIES",
        value_delimiter = ','
    )]
    pub trusted_proxies: Vec<crate::auth::throttle::ProxyNet>,

    /// Link-local networks (CIDR blocks, comma-separated) webhooks may reach although
    /// such addresses, where clouds answer instance metadata, are refused by default.
    #[arg(
        long = "webhook-allow-cidr",
        env = "PERFJOURNAL_WEBHOOK_ALLOW_CIDRS",
        value_delimiter = ','
    )]
    pub webhook_allow_cidrs: Vec<crate::auth::throttle::ProxyNet>,

    /// (Boxed: the single sign-on flags would make every command as large as `serve`.)
    #[command(flatten)]
    pub sso: Box<SsoArgs>,
}

/// Single sign-on: an OpenID Connect provider, a trusted reverse proxy, or both.
#[derive(Debug, Clone, Args)]
pub struct SsoArgs {
    /// The OpenID provider's issuer URL (its discovery document is read from
    /// ISSUER/.well-known/openid-configuration); enables "Sign in with …".
    #[arg(long, env = "PERFJOURNAL_OIDC_ISSUER")]
    pub oidc_issuer: Option<String>,

    /// This app's client id at the provider.
    #[arg(long, env = "PERFJOURNAL_OIDC_CLIENT_ID")]
    pub oidc_client_id: Option<String>,

    /// This app's client secret at the provider (unset: a public client, PKCE only).
    #[arg(long, env = "PERFJOURNAL_OIDC_CLIENT_SECRET", hide_env_values = true)]
    pub oidc_client_secret: Option<String>,

    /// A file holding the client secret, instead of --oidc-client-secret.
    #[arg(long, env = "PERFJOURNAL_OIDC_CLIENT_SECRET_FILE")]
    pub oidc_client_secret_file: Option<PathBuf>,

    /// Scopes asked for, separated by spaces or commas (openid is always asked for).
    #[arg(
        long,
        env = "PERFJOURNAL_OIDC_SCOPES",
        default_value = "openid profile email"
    )]
    pub oidc_scopes: String,

    /// The claim that lists the person's groups (a dotted path reaches into objects,
    /// e.g. realm_access.roles); read from the ID token, else from the userinfo endpoint.
    #[arg(long, env = "PERFJOURNAL_OIDC_GROUPS_CLAIM", default_value = "groups")]
    pub oidc_groups_claim: String,

    /// The provider's name on the sign-in button ("Sign in with NAME").
    #[arg(long, env = "PERFJOURNAL_OIDC_NAME", default_value = "single sign-on")]
    pub oidc_name: String,

    /// Groups → roles, e.g. admin=perf-admins,editor=perf-eng (nobody matched: viewer),
    /// applied at every sign-in. Unset: new users are viewers; admins set roles.
    #[arg(long, env = "PERFJOURNAL_OIDC_ROLE_MAP")]
    pub oidc_role_map: Option<String>,

    /// Only people who already have an account (same user name) may sign in through the
    /// provider or the proxy; nobody new is made.
    #[arg(long, env = "PERFJOURNAL_OIDC_KNOWN_USERS_ONLY")]
    pub oidc_known_users_only: bool,

    /// A first single sign-on whose user name matches an existing account is tied to that
    /// account (only when the provider's names can be trusted).
    #[arg(long, env = "PERFJOURNAL_OIDC_LINK_BY_NAME")]
    pub oidc_link_by_name: bool,

    /// Whether the user name and password form is offered (false: single sign-on only).
    #[arg(long, env = "PERFJOURNAL_PASSWORD_SIGN_IN", default_value_t = true, action = clap::ArgAction::Set)]
    pub password_sign_in: bool,

    /// A header a trusted reverse proxy (oauth2-proxy, …) names the signed-in user in,
    /// e.g. X-Forwarded-User; needs --auth-proxy-trusted.
    #[arg(long, env = "PERFJOURNAL_AUTH_PROXY_HEADER")]
    pub auth_proxy_header: Option<String>,

    /// A header the proxy lists the user's groups in (comma-separated), mapped to roles
    /// by --oidc-role-map, e.g. X-Forwarded-Groups.
    #[arg(long, env = "PERFJOURNAL_AUTH_PROXY_GROUPS_HEADER")]
    pub auth_proxy_groups_header: Option<String>,

    /// The proxies (addresses or CIDR blocks, comma-separated) whose user header is
    /// believed; the header from any other address is refused.
    #[arg(long, env = "PERFJOURNAL_AUTH_PROXY_TRUSTED", value_delimiter = ',')]
    pub auth_proxy_trusted: Vec<crate::auth::throttle::ProxyNet>,
}

/// How people sign in: the resolved single sign-on settings.
#[derive(Debug, Clone)]
pub struct SignIn {
    pub oidc: Option<crate::auth::oidc::OidcSettings>,
    pub proxy: Option<crate::auth::external::ProxyAuth>,
    pub policy: crate::auth::external::Policy,
    /// The user name and password form is offered and accepted.
    pub password: bool,
}

impl Default for SignIn {
    fn default() -> Self {
        SignIn {
            oidc: None,
            proxy: None,
            policy: Default::default(),
            password: true,
        }
    }
}

impl SsoArgs {
    /// The settings, checked: each mistake is named with the flag to fix.
    pub fn resolve(&self) -> anyhow::Result<SignIn> {
        use anyhow::bail;
        let given = |o: &Option<String>| {
            o.as_deref()
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_string)
        };
        let role_map = match given(&self.oidc_role_map) {
            Some(text) => Some(
                crate::core::sso::RoleMap::parse(&text)
                    .map_err(|e| anyhow::anyhow!("--oidc-role-map: {e}"))?,
            ),
            None => None,
        };
        let oidc = match (given(&self.oidc_issuer), given(&self.oidc_client_id)) {
            (None, None) => None,
            (Some(_), None) => bail!("--oidc-issuer is set but --oidc-client-id is not"),
            (None, Some(_)) => bail!("--oidc-client-id is set but --oidc-issuer is not"),
            (Some(issuer), Some(client_id)) => {
                if !(issuer.starts_with("https://") || issuer.starts_with("http://")) {
                    bail!("--oidc-issuer {issuer:?} is not an http(s) URL");
                }
                let client_secret = match &self.oidc_client_secret_file {
                    Some(f) => Some(
                        std::fs::read_to_string(f)
                            .map_err(|e| {
                                anyhow::anyhow!("--oidc-client-secret-file {}: {e}", f.display())
                            })?
                            .trim()
                            .to_string(),
                    ),
                    None => given(&self.oidc_client_secret),
                };
                let scopes: Vec<String> = self
                    .oidc_scopes
                    .split([' ', ','])
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect();
                if self.oidc_groups_claim.trim().is_empty() {
                    bail!("--oidc-groups-claim is empty");
                }
                Some(crate::auth::oidc::OidcSettings {
                    // Exactly as given: discovery checks that the provider names itself so
                    // (some issuers end in '/').
                    issuer,
                    client_id,
                    client_secret,
                    scopes,
                    groups_claim: self.oidc_groups_claim.trim().to_string(),
                    name: self.oidc_name.trim().to_string(),
                })
            }
        };
        let proxy = match given(&self.auth_proxy_header) {
            None => {
                if !self.auth_proxy_trusted.is_empty() {
                    bail!("--auth-proxy-trusted is set but --auth-proxy-header is not");
                }
                None
            }
            Some(header) => {
                if axum::http::HeaderName::from_bytes(header.as_bytes()).is_err() {
                    bail!("--auth-proxy-header {header:?} is not a header name");
                }
                if self.auth_proxy_trusted.is_empty() {
                    bail!(
                        "--auth-proxy-header {header} needs --auth-proxy-trusted: the addresses of \
                         the proxies whose header is believed (from anywhere else it is refused)"
                    );
                }
                Some(crate::auth::external::ProxyAuth {
                    header: header.to_ascii_lowercase(),
                    groups_header: given(&self.auth_proxy_groups_header)
                        .map(|h| h.to_ascii_lowercase()),
                    trusted: self.auth_proxy_trusted.clone(),
                })
            }
        };
        if !self.password_sign_in && oidc.is_none() && proxy.is_none() {
            bail!(
                "--password-sign-in false leaves no way to sign in: set --oidc-issuer or \
                 --auth-proxy-header too"
            );
        }
        Ok(SignIn {
            oidc,
            proxy,
            policy: crate::auth::external::Policy {
                known_users_only: self.oidc_known_users_only,
                link_by_name: self.oidc_link_by_name,
                role_map,
            },
            password: self.password_sign_in,
        })
    }
}

/// The resolved configuration the app state is built from.
#[derive(Debug, Clone)]
pub struct Config {
    pub secure_cookies: bool,
    /// The address users reach the app by (no trailing slash); absolute links (the Atom
    /// feed) are built from it. Unset: from the request's Host header, which a proxy or a
    /// client can set to anything, so set it behind a proxy.
    pub public_url: Option<String>,
    pub request_timeout: Duration,
    pub body_limit: usize,
    pub upload_limit: u64,
    pub max_decompressed_bytes: u64,
    pub session_idle: Duration,
    pub session_max_age: chrono::Duration,
    /// Failed login attempts allowed within five minutes for one user name / one address
    /// (successful sign-ins are not counted; see auth::throttle).
    pub login_per_minute_user: u32,
    pub login_per_minute_ip: u32,
    pub header_read_timeout: Duration,
    pub upload_idle_timeout: Duration,
    /// How long a request log's rows may be loaded while its body arrives (see
    /// [`ServeArgs::streamed_load_secs`]).
    pub streamed_load_budget: Duration,
    pub max_uploads_per_user: usize,
    pub max_uploads: usize,
    /// Proxies whose X-Forwarded-For names the client (see auth::client::client_ip).
    pub trusted_proxies: Vec<crate::auth::throttle::ProxyNet>,
    /// Grafana to annotate (see [`crate::grafana`]); unset: annotations wait, unsent.
    pub grafana: Option<crate::grafana::Target>,
    /// Single sign-on and whether passwords are accepted (see [`SsoArgs`]).
    pub sign_in: SignIn,
    /// OTLP request spans (see [`crate::otlp`]).
    pub otlp: OtlpLimits,
    /// Link-local networks webhooks may reach (see [`crate::webhooks::Allowed`]).
    pub webhook_allowed: crate::webhooks::Allowed,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            secure_cookies: false,
            public_url: None,
            request_timeout: Duration::from_secs(30),
            body_limit: 2 * 1024 * 1024,
            upload_limit: 2 * 1024 * 1024 * 1024,
            max_decompressed_bytes: 64 << 30,
            session_idle: Duration::from_secs(120 * 60),
            session_max_age: chrono::Duration::hours(24),
            login_per_minute_user: 5,
            login_per_minute_ip: 20,
            trusted_proxies: Vec::new(),
            header_read_timeout: Duration::from_secs(30),
            upload_idle_timeout: Duration::from_secs(60),
            streamed_load_budget: Duration::from_secs(60),
            max_uploads_per_user: 4,
            max_uploads: 64,
            grafana: None,
            sign_in: SignIn::default(),
            otlp: OtlpLimits::default(),
            webhook_allowed: crate::webhooks::Allowed::default(),
        }
    }
}

impl From<&ServeArgs> for Config {
    fn from(a: &ServeArgs) -> Self {
        Config {
            secure_cookies: a
                .public_url
                .as_deref()
                .is_some_and(|u| u.starts_with("https://")),
            public_url: a
                .public_url
                .as_deref()
                .map(|u| u.trim().trim_end_matches('/').to_string())
                .filter(|u| !u.is_empty()),
            request_timeout: Duration::from_secs(a.request_timeout_secs.max(1)),
            body_limit: a.body_limit,
            upload_limit: a.upload_limit,
            max_decompressed_bytes: a.max_decompressed_bytes,
            session_idle: Duration::from_secs(a.session_idle_minutes.max(1) as u64 * 60),
            session_max_age: chrono::Duration::hours(a.session_max_hours.max(1)),
            trusted_proxies: a.trusted_proxies.clone(),
            webhook_allowed: crate::webhooks::Allowed(a.webhook_allow_cidrs.clone()),
            header_read_timeout: Duration::from_secs(a.header_read_timeout_secs.max(1)),
            upload_idle_timeout: Duration::from_secs(a.upload_idle_timeout_secs.max(1)),
            streamed_load_budget: Duration::from_secs(a.streamed_load_secs.max(1)),
            max_uploads_per_user: a.max_uploads_per_user.max(1),
            max_uploads: a.max_uploads.max(1),
            grafana: a.grafana_url.as_deref().and_then(|url| {
                let token = match &a.grafana_token_file {
                    Some(f) => std::fs::read_to_string(f).ok(),
                    None => a.grafana_token.clone(),
                }?;
                Some(crate::grafana::Target {
                    url: url.trim().trim_end_matches('/').to_string(),
                    token: token.trim().to_string(),
                })
            }),
            otlp: OtlpLimits {
                window_s: a.otlp_window_minutes.max(1) as i64 * 60,
                max_rows_per_window: a.otlp_max_rows_per_window.max(1) as i64,
                body_limit: a.otlp_body_limit.max(1024),
                max_decompressed: a.otlp_max_decompressed.max(1024),
                max_spans_per_export: u64::from(a.otlp_max_spans_per_export.max(1)),
                retention_s: i64::from(a.otlp_retention_days.max(1)) * 86_400,
                max_services: i64::from(a.otlp_max_services.max(1)),
                max_windows: i64::from(a.otlp_max_windows.max(1)),
                max_windows_per_user: i64::from(a.otlp_max_windows_per_user.max(1)),
            },
            ..Config::default()
        }
    }
}
