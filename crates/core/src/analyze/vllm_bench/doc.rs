//! The streaming document model: a benchmark file's top-level objects read with a
//! serde visitor, per-request arrays straight into vectors, the rest kept while small.

use super::*;

/// Inter-token latencies flattened, with per-request offsets.
#[derive(Default)]
pub(super) struct Itls {
    pub(super) flat: Vec<f64>,
    /// `offsets[i]..offsets[i+1]` are request i's gaps.
    pub(super) offsets: Vec<usize>,
}

/// The `errors` array reduced to what we need.
#[derive(Default)]
pub(super) struct Errors {
    pub(super) failed: Vec<bool>,
    pub(super) count: u64,
    pub(super) first: Vec<String>,
}

/// One top-level JSON object of the file.
#[derive(Default)]
pub(super) struct RawDoc {
    pub(super) small: Map<String, Value>,
    pub(super) ttfts: Option<Vec<f64>>,
    pub(super) e2els: Option<Vec<f64>>,
    pub(super) tpots: Option<Vec<f64>>,
    pub(super) input_lens: Option<Vec<f64>>,
    pub(super) output_lens: Option<Vec<f64>>,
    pub(super) itls: Option<Itls>,
    pub(super) errors: Option<Errors>,
}

impl<'de> Deserialize<'de> for RawDoc {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(DocVisitor)
    }
}

pub(super) struct DocVisitor;

impl<'de> Visitor<'de> for DocVisitor {
    type Value = RawDoc;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a benchmark result object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawDoc, A::Error> {
        let mut doc = RawDoc::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "ttfts" => doc.ttfts = Some(map.next_value_seed(FloatList)?),
                "e2els" | "latencies" => doc.e2els = Some(map.next_value_seed(FloatList)?),
                "tpots" => doc.tpots = Some(map.next_value_seed(FloatList)?),
                "input_lens" => doc.input_lens = Some(map.next_value_seed(FloatList)?),
                "output_lens" => doc.output_lens = Some(map.next_value_seed(FloatList)?),
                "itls" => doc.itls = Some(map.next_value_seed(ItlSeed)?),
                "errors" => doc.errors = Some(map.next_value_seed(ErrorSeed)?),
                "generated_texts" | "start_times" => {
                    map.next_value::<IgnoredAny>()?;
                }
                "benchmarks" => {
                    let v = map.next_value_seed(Bounded { max_array: 4096 })?;
                    doc.small.insert(key, v);
                }
                _ => {
                    let v = map.next_value_seed(Bounded {
                        max_array: SMALL_ARRAY,
                    })?;
                    if doc.small.len() < SMALL_OBJECT * 4 {
                        doc.small.insert(key, v);
                    }
                }
            }
        }
        Ok(doc)
    }
}

/// A JSON array of numbers as f64 (NaN for null / non-numbers).
pub(super) struct FloatList;

impl<'de> DeserializeSeed<'de> for FloatList {
    type Value = Vec<f64>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<f64>, D::Error> {
        d.deserialize_any(FloatListVisitor)
    }
}

pub(super) struct FloatListVisitor;

impl<'de> Visitor<'de> for FloatListVisitor {
    type Value = Vec<f64>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of numbers")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<f64>, A::Error> {
        let mut v = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 20));
        while let Some(x) = seq.next_element_seed(Lenient(Float))? {
            if v.len() == MAX_REQUESTS {
                return Err(de::Error::custom(format!(
                    "more than {MAX_REQUESTS} per-request values in one list; this is not one benchmark run"
                )));
            }
            v.push(x);
        }
        Ok(v)
    }
    fn visit_unit<E>(self) -> Result<Vec<f64>, E> {
        Ok(Vec::new())
    }
}

/// `itls`: an array of per-request arrays, flattened on the fly.
pub(super) struct ItlSeed;

impl<'de> DeserializeSeed<'de> for ItlSeed {
    type Value = Itls;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Itls, D::Error> {
        d.deserialize_any(ItlVisitor)
    }
}

pub(super) struct ItlVisitor;

impl<'de> Visitor<'de> for ItlVisitor {
    type Value = Itls;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of arrays of inter-token latencies")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Itls, A::Error> {
        let mut itls = Itls {
            flat: Vec::new(),
            offsets: vec![0],
        };
        while seq
            .next_element_seed(ItlRow {
                flat: &mut itls.flat,
            })?
            .is_some()
        {
            if itls.offsets.len() > MAX_REQUESTS {
                return Err(de::Error::custom(format!(
                    "more than {MAX_REQUESTS} requests' inter-token latencies; this is not one benchmark run"
                )));
            }
            itls.offsets.push(itls.flat.len());
        }
        Ok(itls)
    }
    fn visit_unit<E>(self) -> Result<Itls, E> {
        Ok(Itls::default())
    }
}

pub(super) struct ItlRow<'a> {
    pub(super) flat: &'a mut Vec<f64>,
}

impl<'de> DeserializeSeed<'de> for ItlRow<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ItlRow<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of numbers")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(x) = seq.next_element_seed(Lenient(Float))? {
            if self.flat.len() == MAX_ITLS {
                return Err(de::Error::custom(format!(
                    "more than {MAX_ITLS} inter-token latencies; this is not one benchmark run"
                )));
            }
            self.flat.push(x);
        }
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, v: f64) -> Result<(), E> {
        self.flat.push(v);
        Ok(())
    }
}

/// `errors`: one string per request, empty on success.
pub(super) struct ErrorSeed;

impl<'de> DeserializeSeed<'de> for ErrorSeed {
    type Value = Errors;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Errors, D::Error> {
        d.deserialize_any(ErrorVisitor)
    }
}

pub(super) struct ErrorVisitor;

impl<'de> Visitor<'de> for ErrorVisitor {
    type Value = Errors;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of error strings")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Errors, A::Error> {
        let mut e = Errors::default();
        while let Some(v) = seq.next_element_seed(Bounded { max_array: 4 })? {
            let msg = match v {
                Value::Null => String::new(),
                Value::String(s) => s,
                Value::Bool(false) => String::new(),
                other => other.to_string(),
            };
            let failed = !msg.trim().is_empty();
            e.failed.push(failed);
            if failed {
                e.count += 1;
                let short: String = msg.trim().chars().take(300).collect();
                if e.first.len() < 3 && !e.first.contains(&short) {
                    e.first.push(short);
                }
            }
        }
        Ok(e)
    }
    fn visit_unit<E>(self) -> Result<Errors, E> {
        Ok(Errors::default())
    }
}

/// A JSON value kept only while small: long arrays become null, long strings
/// are cut, so metadata can't hold a whole upload in memory.
pub(super) struct Bounded {
    pub(super) max_array: usize,
}

impl<'de> DeserializeSeed<'de> for Bounded {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(BoundedVisitor {
            max_array: self.max_array,
        })
    }
}

pub(super) struct BoundedVisitor {
    pub(super) max_array: usize,
}

impl<'de> Visitor<'de> for BoundedVisitor {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.chars().take(SMALL_STRING).collect()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        if v.len() <= SMALL_STRING {
            Ok(Value::String(v))
        } else {
            Ok(Value::String(v.chars().take(SMALL_STRING).collect()))
        }
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut v = Vec::new();
        let mut too_long = false;
        loop {
            if v.len() >= self.max_array {
                if seq.next_element::<IgnoredAny>()?.is_none() {
                    break;
                }
                too_long = true;
                continue;
            }
            match seq.next_element_seed(Bounded {
                max_array: SMALL_ARRAY,
            })? {
                Some(x) => v.push(x),
                None => break,
            }
        }
        Ok(if too_long {
            Value::Null
        } else {
            Value::Array(v)
        })
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut m = Map::new();
        while let Some(k) = map.next_key::<String>()? {
            if m.len() >= SMALL_OBJECT {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            let v = map.next_value_seed(Bounded {
                max_array: SMALL_ARRAY,
            })?;
            m.insert(k, v);
        }
        Ok(Value::Object(m))
    }
}
