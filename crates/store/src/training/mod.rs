//! Training's storage: attempts, self-check answers, replay answers and the "good for
//! training" mark. Everything here writes only to the `training_*` tables; the
//! investigations and the journal are read, never changed.

use chrono::{DateTime, NaiveDate, Utc};
use serde::Serialize;
use sqlx::PgPool;

use crate::auth::User;
use crate::core::training::drills;
use crate::core::training::progress::Attempt;
use crate::error::{Error, Result};

/// Stores one graded (or, for replays, ungraded) attempt.
pub async fn record_attempt(
    pool: &PgPool,
    user: i64,
    kind: &str,
    estimator: Option<&str>,
    drill: &str,
    answer: &serde_json::Value,
    correct: Option<bool>,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO training_attempts (user_id, kind, estimator, drill, answer, correct) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(user)
    .bind(kind)
    .bind(estimator)
    .bind(drill)
    .bind(answer)
    .bind(correct)
    .execute(pool)
    .await?;
    Ok(())
}

type AttemptRow = (i64, String, Option<String>, Option<bool>, NaiveDate);

const ATTEMPT_COLUMNS: &str =
    "user_id, kind, estimator, correct, (at AT TIME ZONE 'UTC')::date AS day";

fn attempt(row: AttemptRow) -> Attempt {
    Attempt {
        kind: row.1,
        estimator: row.2,
        correct: row.3,
        day: row.4,
    }
}

/// Every attempt of one learner, oldest first.
pub async fn attempts(pool: &PgPool, user: i64) -> sqlx::Result<Vec<Attempt>> {
    let rows: Vec<AttemptRow> = sqlx::query_as(&format!(
        "SELECT {ATTEMPT_COLUMNS} FROM training_attempts WHERE user_id = $1 ORDER BY at, id"
    ))
    .bind(user)
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(attempt).collect())
}

/// Active users in id order after `after` (at most `fetch`), each with their attempts.
pub async fn team(
    pool: &PgPool,
    after: Option<i64>,
    fetch: i64,
) -> sqlx::Result<Vec<(User, Vec<Attempt>)>> {
    let users: Vec<(i64, String, String)> = sqlx::query_as(
        "SELECT id, name, role FROM users WHERE disabled_at IS NULL \
         AND ($1::bigint IS NULL OR id > $1) ORDER BY id LIMIT $2",
    )
    .bind(after)
    .bind(fetch)
    .fetch_all(pool)
    .await?;
    let ids: Vec<i64> = users.iter().map(|u| u.0).collect();
    let rows: Vec<AttemptRow> = sqlx::query_as(&format!(
        "SELECT {ATTEMPT_COLUMNS} FROM training_attempts WHERE user_id = ANY($1) ORDER BY at, id"
    ))
    .bind(&ids)
    .fetch_all(pool)
    .await?;
    let mut out: Vec<(User, Vec<Attempt>)> = users
        .into_iter()
        .map(|(id, name, role)| {
            let user = User {
                id,
                name,
                role: crate::auth::Role::parse(&role).unwrap_or(crate::auth::Role::Viewer),
                session_generation: 0,
                disabled: false,
            };
            (user, Vec::new())
        })
        .collect();
    for row in rows {
        if let Some((_, list)) = out.iter_mut().find(|(u, _)| u.id == row.0) {
            list.push(attempt(row));
        }
    }
    Ok(out)
}

/// Stores (or replaces) a learner's answer to a guide question.
pub async fn save_check(
    pool: &PgPool,
    user: i64,
    page: &str,
    question: i16,
    answer: &str,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO training_checks (user_id, page, question, answer) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (user_id, page, question) DO UPDATE SET answer = EXCLUDED.answer, at = now()",
    )
    .bind(user)
    .bind(page)
    .bind(question)
    .bind(answer)
    .execute(pool)
    .await?;
    Ok(())
}

/// A learner's answers on one guide page, by question number.
pub async fn checks(pool: &PgPool, user: i64, page: &str) -> sqlx::Result<Vec<(i16, String)>> {
    sqlx::query_as("SELECT question, answer FROM training_checks WHERE user_id = $1 AND page = $2")
        .bind(user)
        .bind(page)
        .fetch_all(pool)
        .await
}

/// One replayable investigation in the list.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct Replayable {
    pub id: i64,
    pub title: String,
    pub service: String,
    pub symptom: String,
    pub marked: bool,
    pub answered: bool,
}

const PUBLISHED: &str = "EXISTS (SELECT 1 FROM journal_entries j \
     WHERE j.investigation_id = i.id AND j.published_at IS NOT NULL)";

/// Investigations with a published entry, marked ones first, newest first: the
/// `fetch` after investigation `after` in that order (keyset on (marked, id)).
pub async fn replayable(
    pool: &PgPool,
    user: i64,
    after: Option<i64>,
    fetch: i64,
) -> sqlx::Result<Vec<Replayable>> {
    sqlx::query_as(&format!(
        "SELECT * FROM (SELECT i.id, i.title, i.service, i.symptom, \
           EXISTS (SELECT 1 FROM training_marks m WHERE m.investigation_id = i.id) AS marked, \
           EXISTS (SELECT 1 FROM training_replays r WHERE r.investigation_id = i.id \
             AND r.user_id = $1) AS answered \
         FROM investigations i WHERE {PUBLISHED}) x \
         WHERE ($2::bigint IS NULL OR (x.marked, x.id) < \
           (EXISTS (SELECT 1 FROM training_marks m WHERE m.investigation_id = $2), $2)) \
         ORDER BY x.marked DESC, x.id DESC LIMIT $3"
    ))
    .bind(user)
    .bind(after)
    .bind(fetch)
    .fetch_all(pool)
    .await
}

/// 404 unless investigation `id` exists and has a published journal entry.
pub async fn require_replayable(pool: &PgPool, id: i64) -> Result<()> {
    let ok: Option<bool> = sqlx::query_scalar(&format!(
        "SELECT {PUBLISHED} FROM investigations i WHERE i.id = $1"
    ))
    .bind(id)
    .fetch_optional(pool)
    .await?;
    match ok {
        Some(true) => Ok(()),
        Some(false) => Err(Error::not_found(format!(
            "investigation {id} has no published journal entry, so it cannot be replayed yet"
        ))),
        None => Err(Error::not_found(format!("there is no investigation {id}"))),
    }
}

/// What a learner wrote before the reveal.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct ReplayAnswer {
    pub diagnosis: String,
    pub next_measurement: String,
    pub at: DateTime<Utc>,
}

pub async fn replay_answer(
    pool: &PgPool,
    user: i64,
    investigation: i64,
) -> sqlx::Result<Option<ReplayAnswer>> {
    sqlx::query_as(
        "SELECT diagnosis, next_measurement, at FROM training_replays \
         WHERE user_id = $1 AND investigation_id = $2",
    )
    .bind(user)
    .bind(investigation)
    .fetch_optional(pool)
    .await
}

/// Checks a replay answer: both parts written, neither too long.
pub fn check_replay_answer(
    diagnosis: &str,
    next_measurement: &str,
) -> std::result::Result<(), Vec<crate::core::FieldError>> {
    use crate::core::FieldError;
    let mut errors = Vec::new();
    for (field, text, what) in [
        ("diagnosis", diagnosis, "what you think is wrong"),
        (
            "next_measurement",
            next_measurement,
            "the measurement you would take next",
        ),
    ] {
        let n = text.trim().chars().count();
        if n == 0 {
            errors.push(FieldError::new(
                field,
                format!("is required: write {what} before the reveal"),
            ));
        } else if n > 4000 {
            errors.push(FieldError::new(
                field,
                format!("is {n} characters; keep it under 4,000"),
            ));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Stores a learner's first answer (a later one keeps the first: the reveal has been
/// seen) and counts it as a replay attempt. Returns the stored answer.
pub async fn answer_replay(
    pool: &PgPool,
    user: i64,
    investigation: i64,
    diagnosis: &str,
    next_measurement: &str,
) -> Result<ReplayAnswer> {
    check_replay_answer(diagnosis, next_measurement).map_err(Error::Invalid)?;
    let mut tx = pool.begin().await?;
    let inserted = sqlx::query(
        "INSERT INTO training_replays (user_id, investigation_id, diagnosis, next_measurement) \
         VALUES ($1, $2, $3, $4) ON CONFLICT (user_id, investigation_id) DO NOTHING",
    )
    .bind(user)
    .bind(investigation)
    .bind(diagnosis.trim())
    .bind(next_measurement.trim())
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if inserted == 1 {
        sqlx::query(
            "INSERT INTO training_attempts (user_id, kind, drill, answer) \
             VALUES ($1, 'replay', $2, $3)",
        )
        .bind(user)
        .bind(format!("replay.{investigation}"))
        .bind(serde_json::json!({"diagnosis": diagnosis.trim(), "next_measurement": next_measurement.trim()}))
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    replay_answer(pool, user, investigation)
        .await?
        .ok_or_else(|| Error::Internal(anyhow::anyhow!("replay answer vanished")))
}

pub async fn is_marked(pool: &PgPool, investigation: i64) -> sqlx::Result<bool> {
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM training_marks WHERE investigation_id = $1)")
        .bind(investigation)
        .fetch_one(pool)
        .await
}

/// Sets or clears the "good for training" mark.
pub async fn set_mark(pool: &PgPool, investigation: i64, user: i64, on: bool) -> sqlx::Result<()> {
    if on {
        sqlx::query(
            "INSERT INTO training_marks (investigation_id, marked_by) VALUES ($1, $2) \
             ON CONFLICT (investigation_id) DO NOTHING",
        )
        .bind(investigation)
        .bind(user)
        .execute(pool)
        .await?;
    } else {
        sqlx::query("DELETE FROM training_marks WHERE investigation_id = $1")
            .bind(investigation)
            .execute(pool)
            .await?;
    }
    Ok(())
}

/// Seeds are 0 to this, short enough to read out and share.
pub const MAX_SEED: u64 = 999_999_999;

/// A fresh seed for "new drill" links (reading it writes nothing).
pub fn random_seed() -> u64 {
    rand::random_range(0..=MAX_SEED)
}

/// `seed` and `level` from a query string: a seed out of range or a level other than
/// `step`/`chain` is a 422 naming the parameter. No seed: `None`.
pub fn read_drill_query(raw: Option<&str>) -> Result<(Option<u64>, drills::Level)> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(raw.unwrap_or(""))
        .map_err(|e| Error::BadRequest(format!("the query string is malformed: {e}")))?;
    let mut seed = None;
    let mut level = drills::Level::Chain;
    for (k, v) in pairs {
        match k.as_str() {
            "seed" if !v.trim().is_empty() => {
                seed = Some(
                    v.trim()
                        .parse::<u64>()
                        .ok()
                        .filter(|s| *s <= MAX_SEED)
                        .ok_or_else(|| {
                            Error::field(
                                "seed",
                                format!("must be a whole number from 0 to {MAX_SEED}, got {v:?}"),
                            )
                        })?,
                )
            }
            "level" => {
                level = match v.trim() {
                    "" | "chain" => drills::Level::Chain,
                    "step" => drills::Level::Step,
                    other => {
                        return Err(Error::field(
                            "level",
                            format!("must be chain or step, got {other:?}"),
                        ))
                    }
                }
            }
            _ => {}
        }
    }
    Ok((seed, level))
}

/// The drill, or 404 naming what exists.
pub fn pose(estimator: &str, seed: u64, level: drills::Level) -> Result<drills::Drill> {
    if crate::core::estimate::find(estimator).is_none() {
        return Err(Error::not_found(format!(
            "no estimator named {estimator}; the drills are: {}",
            crate::core::estimate::registry()
                .iter()
                .map(|e| e.name)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    if !drills::has_level(estimator, level) {
        return Err(Error::not_found(format!(
            "{estimator} has no single-step drill; use level=chain"
        )));
    }
    drills::generate(estimator, seed, level).ok_or_else(|| {
        Error::not_found(format!(
            "seed {seed} gives no {estimator} drill; try another"
        ))
    })
}

/// The drill a drill id names, or 404.
pub fn pose_id(id: &str) -> Result<drills::Drill> {
    let (estimator, seed, level) = drills::parse_drill_id(id).ok_or_else(|| {
        Error::not_found(format!(
            "{id:?} is not a drill id; ids look like decode-floor.42 or decode-floor.42.step"
        ))
    })?;
    if seed > MAX_SEED {
        return Err(Error::not_found(format!(
            "seeds go from 0 to {MAX_SEED}; {seed} is out of range"
        )));
    }
    pose(estimator, seed, level)
}

/// Grades an answer and stores the attempt.
pub async fn submit_drill(
    pool: &PgPool,
    user: i64,
    drill: &drills::Drill,
    answer: &drills::Answer,
) -> Result<drills::Grade> {
    let grade = drills::grade(drill, answer);
    record_attempt(
        pool,
        user,
        drill.level.slug(),
        Some(drill.estimator),
        &drill.id(),
        &serde_json::json!({"value": answer.value, "steps": answer.steps}),
        Some(grade.correct),
    )
    .await?;
    Ok(grade)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_answers_need_both_parts() {
        assert!(check_replay_answer("queue-bound", "running batch").is_ok());
        let errs = check_replay_answer(" ", "").unwrap_err();
        assert_eq!(errs.len(), 2);
        assert_eq!(errs[0].field, "diagnosis");
    }
}
