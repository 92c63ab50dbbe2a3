//! Single sign-on, the pure part: the operator's group → role map, reading a groups claim,
//! and turning what a provider says about a person into a user name the app accepts.

use serde_json::Value;

/// The app's roles as the map names them, lowest first (the shell maps them onto its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum MappedRole {
    Viewer,
    Editor,
    Admin,
}

impl MappedRole {
    fn parse(s: &str) -> Option<MappedRole> {
        match s {
            "viewer" => Some(MappedRole::Viewer),
            "editor" => Some(MappedRole::Editor),
            "admin" => Some(MappedRole::Admin),
            _ => None,
        }
    }
}

/// `admin=perf-admins,editor=perf-eng`: who gets which role by their groups. The highest
/// role with a matching group wins; nobody matched is a viewer. A role may be named more
/// than once (`editor=perf-eng,editor=sre`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoleMap {
    rules: Vec<(MappedRole, String)>,
}

impl RoleMap {
    /// Parses the operator's map; the error names the part that is wrong.
    pub fn parse(text: &str) -> Result<RoleMap, String> {
        let mut rules = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((role, group)) = part.split_once('=') else {
                return Err(format!(
                    "{part:?} is not ROLE=GROUP (for example admin=perf-admins)"
                ));
            };
            let role = role.trim();
            let group = group.trim();
            let Some(mapped) = MappedRole::parse(role) else {
                return Err(format!(
                    "{part:?}: {role:?} is not a role; use viewer, editor or admin"
                ));
            };
            if group.is_empty() {
                return Err(format!("{part:?}: the group after '=' is empty"));
            }
            rules.push((mapped, group.to_string()));
        }
        if rules.is_empty() {
            return Err("the role map is empty; write ROLE=GROUP pairs separated by commas".into());
        }
        Ok(RoleMap { rules })
    }

    /// The highest role one of `groups` earns; viewer when none matches.
    pub fn role_for(&self, groups: &[String]) -> MappedRole {
        self.rules
            .iter()
            .filter(|(_, g)| groups.iter().any(|have| have == g))
            .map(|(r, _)| *r)
            .max()
            .unwrap_or(MappedRole::Viewer)
    }
}

/// The groups in a claim value: an array of strings (Keycloak, Entra ID, most providers) or
/// one string of names separated by commas or spaces. `claim` may be a dotted path into
/// nested objects (`realm_access.roles`). Anything else yields no groups.
pub fn groups_in(claims: &Value, claim: &str) -> Option<Vec<String>> {
    let mut at = claims;
    for key in claim.split('.') {
        at = at.get(key)?;
    }
    match at {
        Value::Array(items) => Some(
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
        ),
        Value::String(s) => Some(
            s.split([',', ' '])
                .map(str::trim)
                .filter(|g| !g.is_empty())
                .map(str::to_string)
                .collect(),
        ),
        _ => None,
    }
}

/// The longest user name the users table takes.
const NAME_MAX: usize = 64;

/// A user name for someone signing in through a provider: their preferred user name,
/// else the part of their e-mail address before '@', else `user`; characters a name may
/// not hold become '-', and it is cut to leave room for a `-N` suffix on a clash.
pub fn user_name_for(preferred: Option<&str>, email: Option<&str>) -> String {
    let raw = preferred
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .or_else(|| {
            email
                .and_then(|e| e.split('@').next())
                .map(str::trim)
                .filter(|e| !e.is_empty())
        })
        .unwrap_or("user");
    let cleaned: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .take(NAME_MAX - 4)
        .collect();
    if cleaned.chars().all(|c| c == '-') {
        "user".into()
    } else {
        cleaned
    }
}

/// The `n`th candidate name (1 is the name itself, then `name-2`, `name-3`, …).
pub fn nth_name(base: &str, n: u32) -> String {
    if n <= 1 {
        base.to_string()
    } else {
        format!("{base}-{n}")
    }
}

/// The user a trusted proxy names in its header: trimmed, non-empty, at most 256 bytes, no
/// control characters. The error says what is wrong with it.
pub fn proxy_user(value: &str) -> Result<&str, String> {
    let v = value.trim();
    if v.is_empty() {
        return Err("the header is empty".into());
    }
    if v.len() > 256 {
        return Err("the header is longer than 256 bytes".into());
    }
    if v.chars().any(char::is_control) {
        return Err("the header holds control characters".into());
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_highest_matching_role_wins_and_nobody_matched_is_a_viewer() {
        let map = RoleMap::parse("admin=perf-admins, editor=perf-eng,editor=sre").unwrap();
        let g = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(map.role_for(&g(&["perf-eng"])), MappedRole::Editor);
        assert_eq!(map.role_for(&g(&["sre"])), MappedRole::Editor);
        assert_eq!(
            map.role_for(&g(&["perf-eng", "perf-admins"])),
            MappedRole::Admin
        );
        assert_eq!(map.role_for(&g(&["sales"])), MappedRole::Viewer);
        assert_eq!(map.role_for(&[]), MappedRole::Viewer);
        // Group names are matched exactly (case and all).
        assert_eq!(map.role_for(&g(&["Perf-Eng"])), MappedRole::Viewer);
    }

    #[test]
    fn a_bad_role_map_names_the_bad_part() {
        let e = RoleMap::parse("admin=perf-admins,boss=perf-eng").unwrap_err();
        assert!(
            e.contains("\"boss=perf-eng\"") && e.contains("not a role"),
            "{e}"
        );
        let e = RoleMap::parse("admin").unwrap_err();
        assert!(e.contains("\"admin\"") && e.contains("ROLE=GROUP"), "{e}");
        let e = RoleMap::parse("editor=").unwrap_err();
        assert!(e.contains("empty"), "{e}");
        assert!(RoleMap::parse(" , ").is_err());
    }

    #[test]
    fn groups_are_read_from_arrays_strings_and_nested_claims() {
        let claims = json!({
            "groups": ["perf-eng", 7, "sre"],
            "roles": "a, b c",
            "realm_access": {"roles": ["admin-role"]},
            "flag": true
        });
        assert_eq!(
            groups_in(&claims, "groups").unwrap(),
            vec!["perf-eng", "sre"]
        );
        assert_eq!(groups_in(&claims, "roles").unwrap(), vec!["a", "b", "c"]);
        assert_eq!(
            groups_in(&claims, "realm_access.roles").unwrap(),
            vec!["admin-role"]
        );
        assert_eq!(groups_in(&claims, "flag"), None);
        assert_eq!(groups_in(&claims, "missing"), None);
    }

    #[test]
    fn user_names_come_from_the_preferred_name_or_the_mail_address() {
        assert_eq!(user_name_for(Some("ada"), Some("x@y")), "ada");
        assert_eq!(user_name_for(None, Some("grace.h@example.com")), "grace.h");
        assert_eq!(user_name_for(Some(" "), None), "user");
        assert_eq!(user_name_for(Some("Ada Lovelace"), None), "Ada-Lovelace");
        assert_eq!(user_name_for(Some("名前"), None), "user");
        assert_eq!(user_name_for(Some(&"a".repeat(100)), None).len(), 60);
        assert_eq!(nth_name("ada", 1), "ada");
        assert_eq!(nth_name("ada", 3), "ada-3");
    }

    #[test]
    fn a_proxy_header_must_name_someone() {
        assert_eq!(proxy_user(" ada "), Ok("ada"));
        assert!(proxy_user("  ").unwrap_err().contains("empty"));
        assert!(proxy_user(&"x".repeat(300)).unwrap_err().contains("256"));
        assert!(proxy_user("a\u{7}b").unwrap_err().contains("control"));
    }
}
