//! A step's form filled from one of the investigation's analyzed artifacts.

use crate::core::method::{evidence, setup_check};
use crate::core::pairs::Pairs;
use crate::error::{AppError, Result};
use crate::investigations::{Loaded, EVIDENCE_FIELD};
use crate::state::AppState;

/// The hidden form field naming the artifact a form was filled from.
/// The hidden field naming the version of the step the form was opened on.
pub(super) const VERSION_FIELD: &str = "version";

/// What a fill did, shown above the form: where the numbers came from, which fields
/// changed and which were kept, and any way the artifact's setup differs from step 0.
pub struct FillNotice {
    pub ok: bool,
    pub text: String,
    pub changed: Vec<String>,
    pub kept: Vec<String>,
    pub setup_warnings: Vec<String>,
}

pub(super) struct Fill {
    pub(super) filled: Option<Pairs>,
    pub(super) notice: FillNotice,
}

/// A step's form values from one of this investigation's analyzed artifacts, with a
/// sentence saying where the numbers came from (or why there are none).
pub(super) async fn filled_values(
    state: &AppState,
    loaded: &Loaded,
    step: u8,
    artifact: i64,
) -> Result<Fill> {
    let investigation = loaded.investigation.id;
    let found = crate::artifacts::get(&state.pool, artifact)
        .await?
        .filter(|a| a.investigation_id == Some(investigation))
        .ok_or_else(|| {
            AppError::not_found(format!(
                "artifact {artifact} is not attached to this investigation"
            ))
        })?;
    let metric = loaded.records.metric.map(|m| m.metric);
    let filled = found
        .analysis
        .as_ref()
        .and_then(|a| evidence::fill_for(step, a, metric));
    let setup_warnings = match (&loaded.records.reproduce, &found.analysis) {
        (Some(step0), Some(analysis)) => {
            setup_check::mismatches(step0, &evidence::claimed_setup(analysis))
                .iter()
                .map(|m| {
                    format!(
                        "{} was measured on another setup than step 0 — {}.",
                        found.name,
                        m.sentence()
                    )
                })
                .collect()
        }
        _ => Vec::new(),
    };
    Ok(match filled {
        Some((pairs, what)) => Fill {
            filled: Some(
                evidence::with_row_sources(step, pairs, artifact)
                    .with(EVIDENCE_FIELD, artifact.to_string()),
            ),
            notice: FillNotice {
                ok: true,
                text: format!(
                    "Filled from {} ({what}). Review the numbers, then save the step.",
                    found.name
                ),
                changed: Vec::new(),
                kept: Vec::new(),
                setup_warnings,
            },
        },
        None => Fill {
            filled: None,
            notice: FillNotice {
                ok: false,
                text: format!(
                    "{} cannot fill step {step} (kind {}, status {}): nothing was changed.",
                    found.name, found.kind, found.status
                ),
                changed: Vec::new(),
                kept: Vec::new(),
                setup_warnings,
            },
        },
    })
}
