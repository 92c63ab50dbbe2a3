//! The request-log decomposition over stored rows: the page's filters checked, and the
//! phase percentiles per filter (and per tenant or model version) from the artifact's
//! column chunks.

use crate::core::window::parse_optional_time;
use sqlx::PgPool;

use super::columns;
use crate::core::analyze::request_columns::{self, Filter as ColumnFilter, GroupBy, GroupNumbers};
use crate::core::FieldError;

/// Filters of the decomposition page, validated.
pub struct RequestFilter {
    pub tenant: Option<String>,
    pub model_version: Option<String>,
    pub from: Option<f64>,
    pub to: Option<f64>,
    pub by: Option<&'static str>,
}

impl RequestFilter {
    pub fn parse(
        tenant: &str,
        model: &str,
        from: &str,
        to: &str,
        by: &str,
    ) -> Result<Self, Vec<FieldError>> {
        let mut errors = Vec::new();
        let from = parse_optional_time("from", from)
            .map_err(|e| errors.push(e))
            .ok()
            .flatten();
        let to = parse_optional_time("to", to)
            .map_err(|e| errors.push(e))
            .ok()
            .flatten();
        if let (Some(f), Some(t)) = (from, to) {
            if t <= f {
                errors.push(FieldError::new("to", "the window ends before it starts"));
            }
        }
        let by = match by.trim() {
            "" => None,
            "tenant" => Some("tenant"),
            "model_version" => Some("model_version"),
            other => {
                errors.push(FieldError::new(
                    "by",
                    format!("group by tenant or model_version, not {other:?}"),
                ));
                None
            }
        };
        if !errors.is_empty() {
            return Err(errors);
        }
        let text = |s: &str| Some(s.trim().to_string()).filter(|s| !s.is_empty());
        Ok(RequestFilter {
            tenant: text(tenant),
            model_version: text(model),
            from,
            to,
            by,
        })
    }
}

/// At most this many groups are listed, most requests first.
const MAX_GROUPS: usize = 50;

fn column_filter<'a>(
    tenant: &'a Option<String>,
    model_version: &'a Option<String>,
    from: Option<f64>,
    to: Option<f64>,
) -> ColumnFilter<'a> {
    ColumnFilter {
        tenant: tenant.as_deref(),
        model_version: model_version.as_deref(),
        from,
        to,
    }
}

fn group_by(col: &str) -> GroupBy {
    if col == "tenant" {
        GroupBy::Tenant
    } else {
        GroupBy::ModelVersion
    }
}

/// The decomposition's numbers over the filtered rows, and per group when the filter
/// groups (at most [`MAX_GROUPS`], most requests first): the chunks the filter can select
/// are read, then the rows are filtered and the order statistics selected off the async
/// threads.
pub async fn numbers(
    pool: &PgPool,
    id: i64,
    f: &RequestFilter,
) -> sqlx::Result<(Vec<GroupNumbers>, Option<Vec<GroupNumbers>>)> {
    let (tenant, model, from, to) = (f.tenant.clone(), f.model_version.clone(), f.from, f.to);
    let chunks = columns::load(pool, id, &column_filter(&tenant, &model, from, to)).await?;
    let group = f.by;
    crate::memory::spawn_blocking(move || {
        let f = column_filter(&tenant, &model, from, to);
        let all = request_columns::decompose(&chunks, &f, None, 1);
        let grouped = group
            .map(|col| request_columns::decompose(&chunks, &f, Some(group_by(col)), MAX_GROUPS));
        (all, grouped)
    })
    .await
    .map_err(|e| sqlx::Error::Protocol(format!("the decomposition failed: {e}")))
}

/// Distinct tenants and model versions of an artifact's rows (for the filter menus).
pub async fn facets(pool: &PgPool, id: i64) -> sqlx::Result<(Vec<String>, Vec<String>)> {
    columns::facets(pool, id).await
}
