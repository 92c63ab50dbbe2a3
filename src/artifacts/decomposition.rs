//! The request-log decomposition over stored rows: the page's filters checked, and the
//! phase percentiles per filter (and per tenant or model version) from the artifact's
//! column copy, or by ordered-set aggregates in SQL for logs without one.

use crate::core::window::parse_optional_time;
use sqlx::PgPool;

use super::columns;
use crate::core::analyze::request_columns::{
    self, Filter as ColumnFilter, GroupBy, GroupNumbers, PHASES, TTFT_PARTS,
};
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

const WHERE: &str = "artifact_id = $1 AND ($2::text IS NULL OR tenant = $2)
     AND ($3::text IS NULL OR model_version = $3)
     AND ($4::float8 IS NULL OR arrival_ts >= $4) AND ($5::float8 IS NULL OR arrival_ts < $5)";

/// At most this many groups are listed, most requests first.
const MAX_GROUPS: usize = 50;

fn phase_select() -> String {
    let mut cols: Vec<String> = PHASES
        .iter()
        .map(|p| {
            format!(
                "percentile_cont(ARRAY[0.5, 0.9, 0.95, 0.99]) WITHIN GROUP (ORDER BY {p}) AS {p}_q, avg({p}) AS {p}_mean"
            )
        })
        .collect();
    // Totals over the requests that have a TTFT, for the share of each part.
    cols.push("sum(first_token_ms) AS ttft_total".into());
    for i in TTFT_PARTS {
        let p = PHASES[i];
        cols.push(format!(
            "sum({p}) FILTER (WHERE first_token_ms IS NOT NULL) AS {p}_in_ttft"
        ));
    }
    cols.join(", ")
}

/// The numbers of one result row of [`phase_select`].
fn numbers_of_row(row: &sqlx::postgres::PgRow) -> sqlx::Result<GroupNumbers> {
    use sqlx::Row;
    let mut g = GroupNumbers {
        group: row.try_get("grp")?,
        rows: row.try_get::<i64, _>("n")?.max(0) as u64,
        ttft_total: row.try_get("ttft_total")?,
        ..GroupNumbers::default()
    };
    for (p, out) in PHASES.iter().zip(g.phases.iter_mut()) {
        let q: Option<Vec<f64>> = row.try_get(format!("{p}_q").as_str())?;
        out.quantiles = q.and_then(|q| <[f64; 4]>::try_from(q).ok());
        out.mean = row.try_get(format!("{p}_mean").as_str())?;
    }
    for (k, i) in TTFT_PARTS.iter().enumerate() {
        g.in_ttft[k] = row.try_get(format!("{}_in_ttft", PHASES[*i]).as_str())?;
    }
    Ok(g)
}

/// The decomposition's numbers over the filtered rows, and per group when the filter
/// groups: from the column copy when there is one, by SQL otherwise.
pub async fn numbers(
    pool: &PgPool,
    id: i64,
    f: &RequestFilter,
) -> sqlx::Result<(Vec<GroupNumbers>, Option<Vec<GroupNumbers>>)> {
    if let Some(found) = numbers_from_columns(pool, id, f, f.by).await? {
        return Ok(found);
    }
    let all = numbers_in_sql(pool, id, f, None).await?;
    let grouped = match f.by {
        Some(col) => Some(numbers_in_sql(pool, id, f, Some(col)).await?),
        None => None,
    };
    Ok((all, grouped))
}

/// Phase percentiles over the filtered rows by ordered-set aggregates in SQL, one entry
/// per group (or one in all). The page uses this only for logs without a column copy
/// (loaded before it existed, or with too many tenant/model pairs).
pub async fn numbers_in_sql(
    pool: &PgPool,
    id: i64,
    f: &RequestFilter,
    group: Option<&'static str>,
) -> sqlx::Result<Vec<GroupNumbers>> {
    let rows = sqlx::query(&decomposition_sql(group))
        .bind(id)
        .bind(&f.tenant)
        .bind(&f.model_version)
        .bind(f.from)
        .bind(f.to)
        .fetch_all(pool)
        .await?;
    rows.iter().map(numbers_of_row).collect()
}

/// The SQL of [`numbers_in_sql`] (binds: artifact id, tenant, model version, from, to).
pub fn decomposition_sql(group: Option<&str>) -> String {
    match group {
        Some(col) => format!(
            "SELECT {col} AS grp, count(*) AS n, {} FROM request_rows WHERE {WHERE} \
             GROUP BY {col} ORDER BY count(*) DESC, {col} NULLS FIRST LIMIT {MAX_GROUPS}",
            phase_select()
        ),
        None => format!(
            "SELECT NULL::text AS grp, count(*) AS n, {} FROM request_rows WHERE {WHERE}",
            phase_select()
        ),
    }
}

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

/// The same numbers from the artifact's column copy: the chunks the filter can select
/// are read, then the rows are filtered and the order statistics selected off the async
/// threads. `None` when the artifact has no column copy.
pub async fn numbers_from_columns(
    pool: &PgPool,
    id: i64,
    f: &RequestFilter,
    group: Option<&'static str>,
) -> sqlx::Result<Option<(Vec<GroupNumbers>, Option<Vec<GroupNumbers>>)>> {
    if !columns::exists(pool, id).await? {
        return Ok(None);
    }
    let (tenant, model, from, to) = (f.tenant.clone(), f.model_version.clone(), f.from, f.to);
    let chunks = columns::load(pool, id, &column_filter(&tenant, &model, from, to)).await?;
    let computed = crate::memory::spawn_blocking(move || {
        let f = column_filter(&tenant, &model, from, to);
        let all = request_columns::decompose(&chunks, &f, None);
        let grouped = group.map(|col| {
            let mut g = request_columns::decompose(&chunks, &f, Some(group_by(col)));
            g.truncate(MAX_GROUPS);
            g
        });
        (all, grouped)
    })
    .await
    .map_err(|e| sqlx::Error::Protocol(format!("the decomposition failed: {e}")))?;
    Ok(Some(computed))
}

/// Distinct tenants and model versions of an artifact's rows (for the filter menus), from
/// its column copy when it has one (a few rows per pair) rather than every request row.
pub async fn facets(pool: &PgPool, id: i64) -> sqlx::Result<(Vec<String>, Vec<String>)> {
    let table = if columns::exists(pool, id).await? {
        "request_column_chunks"
    } else {
        "request_rows"
    };
    let mut out = Vec::new();
    for col in ["tenant", "model_version"] {
        out.push(
            sqlx::query_scalar(&format!(
                "SELECT DISTINCT {col} FROM {table} WHERE artifact_id = $1 AND {col} IS NOT NULL ORDER BY 1 LIMIT 200"
            ))
            .bind(id)
            .fetch_all(pool)
            .await?,
        );
    }
    let models = out.pop().unwrap_or_default();
    let tenants = out.pop().unwrap_or_default();
    Ok((tenants, models))
}
