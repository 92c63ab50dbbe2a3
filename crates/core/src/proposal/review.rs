//! Review states, like a pull request: draft → in review → approved / changes
//! requested / rejected → rolled out. Comments anchor to a section.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Draft,
    InReview,
    Approved,
    ChangesRequested,
    Rejected,
    RolledOut,
}

impl State {
    pub const ALL: [State; 6] = [
        State::Draft,
        State::InReview,
        State::Approved,
        State::ChangesRequested,
        State::Rejected,
        State::RolledOut,
    ];

    pub fn slug(self) -> &'static str {
        match self {
            State::Draft => "draft",
            State::InReview => "in_review",
            State::Approved => "approved",
            State::ChangesRequested => "changes_requested",
            State::Rejected => "rejected",
            State::RolledOut => "rolled_out",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            State::Draft => "draft",
            State::InReview => "in review",
            State::Approved => "approved",
            State::ChangesRequested => "changes requested",
            State::Rejected => "rejected",
            State::RolledOut => "rolled out",
        }
    }

    pub fn from_slug(s: &str) -> Option<State> {
        State::ALL.into_iter().find(|st| st.slug() == s.trim())
    }

    fn slugs() -> String {
        State::ALL.map(State::slug).join(", ")
    }

    /// States a person may move to from here (the current state itself means "comment").
    pub fn next(self) -> &'static [State] {
        match self {
            State::Draft => &[State::InReview],
            State::InReview => &[State::Approved, State::ChangesRequested, State::Rejected],
            State::ChangesRequested => &[State::InReview, State::Draft],
            State::Approved => &[State::RolledOut, State::InReview],
            State::Rejected => &[State::Draft],
            State::RolledOut => &[],
        }
    }

    /// States this person may move to from here: [`State::next`] without the reviewer's
    /// verdicts (approve, request changes, reject) when they own the proposal.
    pub fn offered(self, is_owner: bool) -> Vec<State> {
        self.next()
            .iter()
            .copied()
            .filter(|to| !(is_owner && self == State::InReview && to.is_verdict()))
            .collect()
    }

    /// A reviewer's verdict on a proposal in review: for another editor than the owner.
    fn is_verdict(self) -> bool {
        matches!(
            self,
            State::Approved | State::ChangesRequested | State::Rejected
        )
    }

    /// Whether the inputs may still be edited (re-sized).
    pub fn editable(self) -> bool {
        matches!(
            self,
            State::Draft | State::ChangesRequested | State::InReview
        )
    }
}

/// Where a comment points.
pub const SECTIONS: [&str; 5] = ["general", "deployment", "workload", "sizing", "evidence"];

/// A checked review action.
#[derive(Debug, Clone, PartialEq)]
pub struct Review {
    pub to: State,
    pub comment: String,
    pub section: String,
}

/// Checks a review: `to` (None or the current state = a comment), a comment (needed
/// for a comment, a rejection or a change request), and whether this person may do it.
pub fn check(
    from: State,
    to: Option<&str>,
    comment: &str,
    section: Option<&str>,
    is_owner: bool,
) -> Result<Review, crate::FieldError> {
    use crate::FieldError;
    let to = match to.map(str::trim).filter(|s| !s.is_empty()) {
        None => from,
        Some(s) => State::from_slug(s).ok_or_else(|| {
            FieldError::new(
                "state",
                format!("unknown state `{s}`; known: {}", State::slugs()),
            )
        })?,
    };
    let section = section
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or("general");
    if !SECTIONS.contains(&section) {
        return Err(FieldError::new(
            "section",
            format!(
                "unknown section `{section}`; known: {}",
                SECTIONS.join(", ")
            ),
        ));
    }
    let comment = comment.trim();
    if comment.chars().count() > 5000 {
        return Err(FieldError::new(
            "comment",
            "must be at most 5000 characters",
        ));
    }
    if to != from && !from.next().contains(&to) {
        let allowed: Vec<_> = from.next().iter().map(|s| s.slug()).collect();
        return Err(FieldError::new(
            "state",
            if allowed.is_empty() {
                format!(
                    "a {} proposal takes comments and observations only",
                    from.label()
                )
            } else {
                format!(
                    "cannot go from {} to {}; from here: {}",
                    from.slug(),
                    to.slug(),
                    allowed.join(", ")
                )
            },
        ));
    }
    if from == State::InReview && to.is_verdict() && is_owner {
        return Err(FieldError::new(
            "state",
            format!(
                "the owner cannot {} their own proposal: another editor approves, requests \
                 changes or rejects it; you may comment meanwhile",
                match to {
                    State::Approved => "approve",
                    State::ChangesRequested => "request changes on",
                    _ => "reject",
                }
            ),
        ));
    }
    let needs_comment = to == from || matches!(to, State::ChangesRequested | State::Rejected);
    if needs_comment && comment.is_empty() {
        return Err(FieldError::new(
            "comment",
            if to == from {
                "is required for a comment (or choose a new state)".to_string()
            } else {
                format!(
                    "is required to move to {}: say what must change",
                    to.label()
                )
            },
        ));
    }
    Ok(Review {
        to,
        comment: comment.to_string(),
        section: section.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pull_request_flow() {
        let r = check(State::Draft, Some("in_review"), "", None, true).unwrap();
        assert_eq!(r.to, State::InReview);
        let e = check(State::InReview, Some("approved"), "ok", None, true).unwrap_err();
        assert!(e.message.contains("another editor"));
        let r = check(State::InReview, Some("approved"), "", Some("sizing"), false).unwrap();
        assert_eq!((r.to, r.section.as_str()), (State::Approved, "sizing"));
        let r = check(State::Approved, Some("rolled_out"), "", None, true).unwrap();
        assert_eq!(r.to, State::RolledOut);
        let e = check(State::RolledOut, Some("draft"), "", None, true).unwrap_err();
        assert!(e.message.contains("comments and observations"), "{e:?}");
    }

    #[test]
    fn the_owner_is_offered_no_verdict_on_their_own_proposal() {
        assert!(State::InReview.offered(true).is_empty());
        assert_eq!(
            State::InReview.offered(false),
            [State::Approved, State::ChangesRequested, State::Rejected]
        );
        assert_eq!(State::Draft.offered(true), [State::InReview]);
        assert_eq!(
            State::Approved.offered(true),
            [State::RolledOut, State::InReview]
        );
        // Whatever is offered is accepted.
        for from in State::ALL {
            for owner in [true, false] {
                for to in from.offered(owner) {
                    assert!(check(from, Some(to.slug()), "why", None, owner).is_ok());
                }
            }
        }
    }

    #[test]
    fn comments_and_refusals_need_words() {
        let e = check(State::InReview, None, " ", None, false).unwrap_err();
        assert_eq!(e.field, "comment");
        let e = check(State::InReview, Some("changes_requested"), "", None, false).unwrap_err();
        assert!(e.message.contains("changes requested"));
        let r = check(State::InReview, None, "KV fp8?", Some("workload"), true).unwrap();
        assert_eq!(r.to, State::InReview);
        let e = check(State::Draft, Some("approved"), "", None, false).unwrap_err();
        assert!(e.message.contains("from here: in_review"), "{e:?}");
        let e = check(State::Draft, Some("merged"), "", None, false).unwrap_err();
        assert!(e.message.contains("rolled_out"));
        let e = check(State::Draft, None, "x", Some("intro"), false).unwrap_err();
        assert_eq!(e.field, "section");
    }
}
