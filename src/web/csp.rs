//! The pages' Content-Security-Policy, sent by the server on every response.

/// The Content-Security-Policy: scripts and styles only from this origin, no inline code,
/// no framing. htmx is configured (in base.html) so it needs neither eval nor inline style.
pub const CSP: &str =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
     font-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; \
     base-uri 'none'; object-src 'none'";

/// [`CSP`] with forms also allowed to lead to `origin` (the sign-in page's "Sign in with
/// …" form is answered by a redirect to the OpenID provider).
pub fn with_form_action(origin: &str) -> String {
    CSP.replace(
        "form-action 'self'",
        &format!("form-action 'self' {origin}"),
    )
}
