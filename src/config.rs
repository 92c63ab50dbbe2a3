//! Flags and environment → `Config`. Every knob has an environment variable so the
//! same binary runs from a terminal, a unit file or a container.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

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

    #[arg(long, env = "PERFJOURNAL_HEADER_READ_TIMEOUT", default_value_t = 30)]
    pub header_read_timeout_secs: u64,

    /// Seconds an upload's body may send nothing before the upload is dropped with 408.
    #[arg(long, env = "PERFJOURNAL_UPLOAD_IDLE_TIMEOUT", default_value_t = 60)]
    pub upload_idle_timeout_secs: u64,

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
    pub max_uploads_per_user: usize,
    pub max_uploads: usize,
    /// Proxies whose X-Forwarded-For names the client (see auth::throttle::client_ip).
    pub trusted_proxies: Vec<crate::auth::throttle::ProxyNet>,
    /// Grafana to annotate (see [`crate::grafana`]); unset: annotations wait, unsent.
    pub grafana: Option<crate::grafana::Target>,
    /// OTLP request spans (see [`crate::otlp`]).
    pub otlp: OtlpLimits,
}

/// How OTLP spans are received and kept.
#[derive(Debug, Clone)]
pub struct OtlpLimits {
    /// Seconds of one window.
    pub window_s: i64,
    pub max_rows_per_window: i64,
    pub body_limit: usize,
    pub max_decompressed: usize,
}

impl Default for OtlpLimits {
    fn default() -> Self {
        OtlpLimits {
            window_s: 3600,
            max_rows_per_window: 200_000,
            body_limit: 16 << 20,
            max_decompressed: 64 << 20,
        }
    }
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
            max_uploads_per_user: 4,
            max_uploads: 64,
            grafana: None,
            otlp: OtlpLimits::default(),
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
            header_read_timeout: Duration::from_secs(a.header_read_timeout_secs.max(1)),
            upload_idle_timeout: Duration::from_secs(a.upload_idle_timeout_secs.max(1)),
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
            },
            ..Config::default()
        }
    }
}
