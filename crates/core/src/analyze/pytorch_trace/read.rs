//! Reading the trace: the splitter's parts parsed on a second thread with serde
//! visitors that borrow names and skip what the results do not need, each event
//! folded into the [`State`] as it is read.

use super::super::json_split::{Batch, PartKind, SplitError, Splitter};
use super::super::lenient::{Lenient, Scalar, TextInto};
use super::super::{out_of_range, AnalyzeError, MAX_MAGNITUDE};
use super::state::{Args, Cat, Id, State};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;
use std::fmt;
use std::io::Read;

/// A number, numeric string or hex string ("0x0") as i64.
fn parse_int_text(s: &str) -> Option<i64> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return i64::from_str_radix(h, 16).ok();
    }
    s.parse::<i64>().ok().or_else(|| {
        s.parse::<f64>()
            .ok()
            .filter(|x| x.fract() == 0.0)
            .map(|x| x as i64)
    })
}

/// Reads an [`Id`].
struct IdReader;

impl Scalar for IdReader {
    type Value = Id;
    const EXPECTING: &'static str = "an id";
    fn int<E>(self, v: i64) -> Result<Id, E> {
        Ok(Id::Num(v))
    }
    fn uint<E>(self, v: u64) -> Result<Id, E> {
        Ok(i64::try_from(v).map_or(Id::Text, Id::Num))
    }
    fn float<E>(self, v: f64) -> Result<Id, E> {
        Ok(if v.fract() == 0.0 && v.abs() < 9.0e18 {
            Id::Num(v as i64)
        } else {
            Id::Text
        })
    }
    fn text<E>(self, v: &str) -> Result<Id, E> {
        Ok(parse_int_text(v).map_or(Id::Text, Id::Num))
    }
    fn null(self) -> Id {
        Id::Missing
    }
    fn other(self) -> Id {
        Id::Text
    }
}

/// ts/dur: numbers (often floats with ns precision) or numeric strings. A value no clock
/// gives (beyond ±[`MAX_MAGNITUDE`] µs) is refused, naming the field: summed into the
/// breakdowns it would turn every figure of the trace into infinity.
struct TimeReader(&'static str);

impl TimeReader {
    fn checked<E: de::Error>(&self, v: f64) -> Result<Option<f64>, E> {
        if v.is_finite() && v.abs() > MAX_MAGNITUDE {
            return Err(E::custom(out_of_range(self.0, v, "µs")));
        }
        Ok(v.is_finite().then_some(v))
    }
}

impl Scalar for TimeReader {
    type Value = Option<f64>;
    const EXPECTING: &'static str = "a time in microseconds";
    fn float<E: de::Error>(self, v: f64) -> Result<Option<f64>, E> {
        self.checked(v)
    }
    fn text<E: de::Error>(self, v: &str) -> Result<Option<f64>, E> {
        match v.trim().parse::<f64>() {
            Ok(x) => self.checked(x),
            Err(_) => Ok(None),
        }
    }
    fn other(self) -> Option<f64> {
        None
    }
}

/// `ts`: a [`TimeReader`] that also says whether the value makes pandas' `ts` column
/// float (a JSON float, null or any non-number but a string), which is when HTA rounds
/// the trace's times (see the module docs).
struct TsReader;

impl Scalar for TsReader {
    type Value = (Option<f64>, bool);
    const EXPECTING: &'static str = "a time in microseconds";
    fn float<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok((TimeReader("ts").checked(v)?, true))
    }
    fn int<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok((TimeReader("ts").checked(v as f64)?, false))
    }
    fn uint<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok((TimeReader("ts").checked(v as f64)?, false))
    }
    fn text<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok((TimeReader("ts").text(v)?, false))
    }
    fn other(self) -> Self::Value {
        (None, true)
    }
}

/// Keys of an event we look at.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum EventKey {
    Ph,
    Cat,
    Name,
    Pid,
    Tid,
    Ts,
    Dur,
    Args,
    #[serde(other)]
    Other,
}

/// Keys of an event's `args` we look at.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum ArgKey {
    Correlation,
    Stream,
    Device,
    #[serde(rename = "Collective name")]
    CollectiveName,
    #[serde(rename = "In msg nelems")]
    InMsgNelems,
    #[serde(rename = "dtype")]
    Dtype,
    #[serde(other)]
    Other,
}

/// A short text argument (a collective's name, a dtype); anything else is dropped.
fn short_text(v: Value) -> Option<String> {
    match v {
        Value::String(s) if s.len() <= 64 => Some(s),
        _ => None,
    }
}

struct ArgsSeed;

impl<'de> DeserializeSeed<'de> for ArgsSeed {
    type Value = Args;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Args, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ArgsSeed {
    type Value = Args;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("event args")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Args, A::Error> {
        let mut a = Args::default();
        while let Some(k) = map.next_key::<ArgKey>()? {
            match k {
                ArgKey::Correlation => {
                    a.correlation = map
                        .next_value_seed(Lenient(IdReader))?
                        .num()
                        .filter(|c| *c >= 0)
                        .map(|c| c as u64)
                }
                ArgKey::Stream => a.stream = map.next_value_seed(Lenient(IdReader))?.num(),
                ArgKey::Device => a.device = map.next_value_seed(Lenient(IdReader))?.num(),
                ArgKey::CollectiveName => a.collective = short_text(map.next_value()?),
                ArgKey::InMsgNelems => a.nelems = map.next_value_seed(Lenient(IdReader))?.num(),
                ArgKey::Dtype => a.dtype = short_text(map.next_value()?),
                ArgKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(a)
    }
    fn visit_unit<E>(self) -> Result<Args, E> {
        Ok(Args::default())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Args, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Args::default())
    }
    fn visit_str<E>(self, _: &str) -> Result<Args, E> {
        Ok(Args::default())
    }
}

/// One element of `traceEvents`, folded into the state.
struct EventSeed<'a>(&'a mut State);

impl<'de> DeserializeSeed<'de> for EventSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for EventSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a trace event object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let st = self.0;
        let mut is_complete = false;
        let mut cat = Cat::Other;
        let mut pid = Id::Missing;
        let mut tid = Id::Missing;
        let mut ts = None;
        // An event without `ts` makes pandas' column float, as a float literal does.
        let mut float_ts = true;
        let mut dur = None;
        let mut args = Args::default();
        st.name_buf.clear();
        while let Some(k) = map.next_key::<EventKey>()? {
            match k {
                EventKey::Ph => {
                    map.next_value_seed(Lenient(TextInto(&mut st.cat_buf)))?;
                    is_complete = st.cat_buf == "X";
                }
                EventKey::Cat => {
                    map.next_value_seed(Lenient(TextInto(&mut st.cat_buf)))?;
                    cat = Cat::from_str(&st.cat_buf);
                }
                EventKey::Name => map.next_value_seed(Lenient(TextInto(&mut st.name_buf)))?,
                EventKey::Pid => pid = map.next_value_seed(Lenient(IdReader))?,
                EventKey::Tid => tid = map.next_value_seed(Lenient(IdReader))?,
                EventKey::Ts => (ts, float_ts) = map.next_value_seed(Lenient(TsReader))?,
                EventKey::Dur => dur = map.next_value_seed(Lenient(TimeReader("dur")))?,
                EventKey::Args => args = map.next_value_seed(ArgsSeed)?,
                EventKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        st.float_ts |= float_ts;
        st.fold_event(is_complete, cat, pid, tid, ts, dur, args);
        Ok(())
    }
    // Non-object elements are ignored (counted as events only).
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        self.0.counts.events += 1;
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
}

/// `traceEvents`: fold each element as it is parsed.
struct EventsSeed<'a>(&'a mut State);

impl<'de> DeserializeSeed<'de> for EventsSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for EventsSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of trace events")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(EventSeed(self.0))?.is_some() {}
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

/// Bytes read at a time.
pub(super) const BLOCK_BYTES: usize = 1 << 20;
/// The largest single event (or top-level field) accepted. Real events are a few
/// hundred bytes (a kernel with long template names a few KiB); the cap bounds what one
/// hostile part (a giant string, number or nesting) costs the reader, a few buffers of it.
pub(super) const MAX_PART_BYTES: usize = 32 << 20;

pub(super) enum Stop {
    /// Reading or splitting the document stopped (I/O, syntax, the input ended early).
    Split(SplitError),
    /// A part failed to parse.
    Fold(AnalyzeError),
}

/// Two stages on two threads: this one reads (and decompresses) the input and cuts it
/// into whole events; a second parses each event from memory and folds it into `st`.
/// Buffers go back and forth, so memory is a few blocks whatever the trace's size.
pub(super) fn split_and_fold<R: Read>(
    splitter: &mut Splitter<R>,
    st: &mut State,
) -> Result<(), Stop> {
    let (full_tx, full_rx) = std::sync::mpsc::sync_channel::<Batch>(3);
    let (empty_tx, empty_rx) = std::sync::mpsc::channel::<Batch>();
    std::thread::scope(|scope| {
        let folder = scope.spawn(move || -> Result<(), AnalyzeError> {
            for batch in full_rx {
                fold_batch(st, &batch)?;
                let _ = empty_tx.send(batch);
            }
            Ok(())
        });
        let mut split = Ok(());
        loop {
            let batch = empty_rx.try_recv().unwrap_or_default();
            match splitter.next_batch(batch) {
                Ok(Some(b)) => {
                    // A closed channel: the folder stopped on an error, reported below.
                    if full_tx.send(b).is_err() {
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    split = Err(e);
                    break;
                }
            }
        }
        drop(full_tx);
        let folded = folder
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        // The folder's error comes first in the document (it has every part before the
        // splitter's stop).
        folded.map_err(Stop::Fold)?;
        split.map_err(Stop::Split)
    })
}

fn fold_batch(st: &mut State, batch: &Batch) -> Result<(), AnalyzeError> {
    for part in &batch.parts {
        let bytes = batch.value(part);
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let folded = match part.kind {
            PartKind::Element => EventSeed(st).deserialize(&mut de),
            PartKind::Field => fold_field(st, batch.key(part), &mut de),
        };
        folded.map_err(|e| AnalyzeError::json_in_part(e, part.at))?;
    }
    Ok(())
}

/// A top-level field other than the event array.
fn fold_field(
    st: &mut State,
    key: &[u8],
    de: &mut serde_json::Deserializer<serde_json::de::SliceRead<'_>>,
) -> Result<(), serde_json::Error> {
    match key {
        // Not an array (else the splitter would have handed out its elements).
        b"traceEvents" => EventsSeed(st).deserialize(de)?,
        b"distributedInfo" => {
            let v = Value::deserialize(de)?;
            let int = |r: &Value| match r {
                Value::Number(n) => n.as_i64(),
                Value::String(s) => s.trim().parse().ok(),
                _ => None,
            };
            st.rank = v.get("rank").and_then(int);
            st.world_size = v.get("world_size").and_then(int).filter(|w| *w > 0);
        }
        b"deviceProperties" => {
            if let Value::Array(a) = Value::deserialize(de)? {
                st.device_props = a.into_iter().take(1024).collect();
            }
        }
        b"baseTimeNanoseconds" => {
            let v = Value::deserialize(de)?;
            st.base_time_ns = v.as_u64().or_else(|| v.as_f64().map(|x| x as u64));
        }
        _ => {
            IgnoredAny::deserialize(de)?;
        }
    }
    Ok(())
}
