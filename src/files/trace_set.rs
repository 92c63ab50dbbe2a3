//! A trace set's upload as HTTP carries it: the multipart body's `name` field and files,
//! each file handed to [`crate::trace_sets::upload`] as a byte stream (a trace stored as
//! an artifact, an archive unpacked into them); all of them are kept, or none.

use axum::extract::{FromRequest, Multipart, Request};

use crate::artifacts::{self, Artifact, ArtifactStore, Owner};
use crate::error::AppError;
use crate::trace_sets::upload::{archive_of, check_trace, unpack_into};
use crate::trace_sets::{self, Ask};

/// Receives the traces of an upload (files or archives) and makes the set of them; the
/// name (query, or a form field before the files) is checked before any file is read.
/// Returns the set's id.
pub async fn upload(
    store: &ArtifactStore,
    req: Request,
    raw_query: Option<&str>,
    user: &crate::auth::User,
) -> Result<i64, AppError> {
    let (query, owner) = super::parse_upload_query(raw_query)?;
    let (name, traces) = receive_traces(store, req, owner, user, query.name).await?;
    let ask = Ask {
        name,
        artifacts: traces.iter().map(|a| a.id).collect(),
        investigation: owner.investigation_id,
    };
    let id = trace_sets::create(&store.pool, &ask, user.id).await?;
    store.jobs.notify_one();
    Ok(id)
}

/// The traces stored so far by one upload; deleted again unless kept.
struct Stored<'a> {
    store: &'a ArtifactStore,
    user: &'a crate::auth::User,
    list: Vec<Artifact>,
}

impl Stored<'_> {
    async fn undo(self) {
        for a in self.list {
            if let Err(e) =
                artifacts::delete(&self.store.pool, &self.store.blobs, a.id, self.user).await
            {
                tracing::error!(id = a.id, error = %e, "removing a trace of a refused set upload");
            }
        }
    }
}

/// Receives every file of the body (unpacking archives) as trace artifacts; all of them,
/// or nothing and the reason. The set's name comes from the query, or from a `name`
/// field before the files (as a form sends it); it is checked before the first file.
async fn receive_traces(
    store: &ArtifactStore,
    req: Request,
    owner: Owner,
    user: &crate::auth::User,
    name: Option<String>,
) -> Result<(String, Vec<Artifact>), AppError> {
    let mut stored = Stored {
        store,
        user,
        list: Vec::new(),
    };
    match receive_all(store, req, owner, user.id, name, &mut stored.list).await {
        Ok(name) => Ok((name, stored.list)),
        Err(e) => {
            stored.undo().await;
            Err(e)
        }
    }
}

async fn receive_all(
    store: &ArtifactStore,
    req: Request,
    owner: Owner,
    user_id: i64,
    mut set_name: Option<String>,
    list: &mut Vec<Artifact>,
) -> Result<String, AppError> {
    let mut form = Multipart::from_request(req, &())
        .await
        .map_err(|e| AppError::BadRequest(format!("the multipart body is malformed: {e}")))?;
    let mut files = 0;
    while let Some(field) = form
        .next_field()
        .await
        .map_err(|e| AppError::BadRequest(format!("the multipart body is malformed: {e}")))?
    {
        if field.file_name().is_none() && field.name() == Some("name") {
            let text = field.text().await.map_err(|e| {
                AppError::BadRequest(format!("the multipart body is malformed: {e}"))
            })?;
            set_name = Some(text);
            continue;
        }
        if field.file_name().is_none() && field.name() != Some("file") {
            continue;
        }
        if files == 0 {
            let mut errors = Vec::new();
            match trace_sets::clean_set_name(set_name.as_deref(), &mut errors) {
                Some(n) => set_name = Some(n),
                None => return Err(AppError::Invalid(errors)),
            }
        }
        files += 1;
        let name =
            artifacts::clean_name(field.file_name()).map_err(|e| AppError::Invalid(vec![e]))?;
        match archive_of(&name) {
            None => {
                let a = artifacts::receive(store, owner, &name, field, user_id, None).await?;
                let checked = check_trace(&a, &name, list.len());
                // Kept in the list either way, so a refusal deletes it too.
                list.push(a);
                checked?;
            }
            Some(kind) => unpack_into(store, owner, user_id, &name, kind, field, list).await?,
        }
    }
    if files == 0 {
        return Err(AppError::field(
            "file",
            "no file in the form: choose the rank traces, or an archive of the profiler folder",
        ));
    }
    if list.is_empty() {
        return Err(AppError::field(
            "file",
            "no trace in the upload: the archives hold no .json or .json.gz file",
        ));
    }
    Ok(set_name.unwrap_or_default())
}
