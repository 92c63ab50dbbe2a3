//! Values read from a JSON body by hand, the same way everywhere: whole numbers, ids,
//! id fields and lists of artifact ids, each problem a [`FieldError`](crate::FieldError)
//! naming its field.

/// A whole number in a JSON body, also when written with a zero fraction (`3.0`): JSON
/// does not tell the two apart, and neither does the document's `integer`.
pub fn whole_number(v: &serde_json::Value) -> Option<i64> {
    v.as_i64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
            .map(|f| f as i64)
    })
}

/// An id in a JSON body: a [`whole_number`] above zero (ids as typed in a form or a
/// query are read by the shell's query readers).
pub fn positive_id(v: &serde_json::Value) -> Option<i64> {
    whole_number(v).filter(|n| *n > 0)
}

/// An id field of a JSON body: `None` when it is absent or null (with an error when
/// `required` says what it must name), or when it is not an id (with an error).
pub fn id_field(
    field: &str,
    v: Option<&serde_json::Value>,
    required: Option<&str>,
    errors: &mut Vec<crate::FieldError>,
) -> Option<i64> {
    match v {
        None | Some(serde_json::Value::Null) => {
            if let Some(what) = required {
                errors.push(crate::FieldError::new(
                    field,
                    format!("is required: {what}"),
                ));
            }
            None
        }
        Some(x) => {
            let id = positive_id(x);
            if id.is_none() {
                errors.push(crate::FieldError::new(
                    field,
                    format!("must be an id (a positive integer), not {x}"),
                ));
            }
            id
        }
    }
}

/// A JSON array of 1 to `max` distinct artifact ids for `field` (`noun`: what they must
/// name, as "PyTorch trace"). Each problem is pushed to `errors` naming the field and the
/// item; `None` when the array's length is out of bounds.
pub fn artifact_ids(
    field: &str,
    items: &[serde_json::Value],
    max: usize,
    noun: &str,
    errors: &mut Vec<crate::FieldError>,
) -> Option<Vec<i64>> {
    if items.is_empty() || items.len() > max {
        errors.push(crate::FieldError::new(
            field,
            format!(
                "must hold 1 to {max} {noun} ids (one per rank), not {}",
                items.len()
            ),
        ));
        return None;
    }
    let mut ids = Vec::with_capacity(items.len());
    let mut seen = std::collections::HashSet::with_capacity(items.len());
    for (i, x) in items.iter().enumerate() {
        match positive_id(x) {
            Some(id) if !seen.insert(id) => errors.push(crate::FieldError::new(
                field,
                format!("names artifact {id} twice (item {i})"),
            )),
            Some(id) => ids.push(id),
            None => errors.push(crate::FieldError::new(
                field,
                format!("item {i} must be an id (a positive integer), not {x}"),
            )),
        }
    }
    Some(ids)
}

/// `Option<i32>` for serde, read with [`whole_number`]; a value that is not a whole
/// number in range fails like any other type error.
pub fn de_version<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i32>, D::Error> {
    use serde::Deserialize;
    match Option::<serde_json::Value>::deserialize(d)? {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(v) => whole_number(&v)
            .and_then(|n| i32::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| {
                serde::de::Error::custom(format!("expected a version (a whole number), got {v}"))
            }),
    }
}

/// An id as typed in a form, a query or a JSON string: a positive integer, blanks
/// around it ignored. Callers say in their own words what the id should have named.
pub fn typed_id(raw: &str) -> Option<i64> {
    raw.trim().parse::<i64>().ok().filter(|n| *n > 0)
}
