//! Lenient scalars for the streaming JSON readers: a field that should hold a number
//! or a string may hold either, or null, a bool, an array or an object, and one such
//! value must not fail a whole upload. A [`Scalar`] says what each JSON shape becomes;
//! [`Lenient`] drives it from serde (arrays and objects are skipped whole).

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// What each JSON shape of one value becomes. Integers default to the float reading;
/// bools, null, arrays and objects default to [`Scalar::other`].
pub(super) trait Scalar: Sized {
    type Value;
    /// What the value should have been, for serde's messages.
    const EXPECTING: &'static str;
    fn float<E: de::Error>(self, v: f64) -> Result<Self::Value, E>;
    fn text<E: de::Error>(self, v: &str) -> Result<Self::Value, E>;
    /// Anything that is neither a number nor a string.
    fn other(self) -> Self::Value;
    fn int<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        self.float(v as f64)
    }
    fn uint<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        self.float(v as f64)
    }
    fn flag(self, _: bool) -> Self::Value {
        self.other()
    }
    fn null(self) -> Self::Value {
        self.other()
    }
    /// An array or an object, already skipped.
    fn nested(self) -> Self::Value {
        self.other()
    }
}

/// Reads one value through a [`Scalar`]: never an error for the value's type.
pub(super) struct Lenient<S>(pub S);

impl<'de, S: Scalar> DeserializeSeed<'de> for Lenient<S> {
    type Value = S::Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<S::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, S: Scalar> Visitor<'de> for Lenient<S> {
    type Value = S::Value;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(S::EXPECTING)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<S::Value, E> {
        self.0.int(v)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<S::Value, E> {
        self.0.uint(v)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<S::Value, E> {
        self.0.float(v)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<S::Value, E> {
        self.0.text(v)
    }
    fn visit_bool<E>(self, v: bool) -> Result<S::Value, E> {
        Ok(self.0.flag(v))
    }
    fn visit_unit<E>(self) -> Result<S::Value, E> {
        Ok(self.0.null())
    }
    fn visit_none<E>(self) -> Result<S::Value, E> {
        Ok(self.0.null())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<S::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(self.0.nested())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<S::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(self.0.nested())
    }
}

/// A number (or numeric string) as f64; null and anything else as NaN.
pub(super) struct Float;

impl Scalar for Float {
    type Value = f64;
    const EXPECTING: &'static str = "a number";
    fn float<E>(self, v: f64) -> Result<f64, E> {
        Ok(v)
    }
    fn text<E>(self, v: &str) -> Result<f64, E> {
        Ok(v.trim().parse().unwrap_or(f64::NAN))
    }
    fn other(self) -> f64 {
        f64::NAN
    }
}

/// A string, number or bool copied as text into a reused buffer (no allocation per
/// value); null, arrays and objects leave it empty.
pub(super) struct TextInto<'a>(pub &'a mut String);

impl TextInto<'_> {
    fn set<E>(self, v: &str) -> Result<(), E> {
        self.0.clear();
        self.0.push_str(v);
        Ok(())
    }
}

impl Scalar for TextInto<'_> {
    type Value = ();
    const EXPECTING: &'static str = "a string";
    fn float<E>(self, v: f64) -> Result<(), E> {
        self.set(&v.to_string())
    }
    fn int<E>(self, v: i64) -> Result<(), E> {
        self.set(&v.to_string())
    }
    fn uint<E>(self, v: u64) -> Result<(), E> {
        self.set(&v.to_string())
    }
    fn text<E>(self, v: &str) -> Result<(), E> {
        self.set(v)
    }
    fn flag(self, v: bool) {
        self.0.clear();
        self.0.push_str(if v { "true" } else { "false" });
    }
    fn other(self) {
        self.0.clear();
    }
}
