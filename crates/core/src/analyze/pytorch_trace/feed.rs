//! The trace fold fed row by row from a source other than a Kineto JSON document (an
//! Nsight Systems SQLite export): the same [`State`], the same event handling and the
//! same [`finish`], so GPU work read from such a source gets exactly the definitions of
//! the module docs (temporal, kernel and idle breakdowns, launch delays).
//!
//! Times are trace microseconds, as in a Kineto trace: a caller with nanoseconds
//! divides by 1000.

use super::super::Options;
use super::assemble::finish;
use super::state::{Args, Cat, Id, State};
use super::TraceAnalysis;
use serde_json::json;

/// What kind of GPU work one interval is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuWork {
    Kernel,
    Memcpy,
    Memset,
}

/// A trace fold that takes one event at a time (see the module docs).
#[derive(Default)]
pub struct TraceFold {
    st: State,
}

impl TraceFold {
    pub fn new() -> Self {
        TraceFold::default()
    }

    /// One interval of GPU work on `device`/`stream` from `start_us` to `end_us`, named
    /// `name`, launched by the host call with correlation id `correlation` (if known).
    #[allow(clippy::too_many_arguments)]
    pub fn gpu(
        &mut self,
        work: GpuWork,
        device: i64,
        stream: i64,
        start_us: f64,
        end_us: f64,
        correlation: Option<u64>,
        name: &str,
    ) {
        let cat = match work {
            GpuWork::Kernel => Cat::Kernel,
            GpuWork::Memcpy => Cat::Memcpy,
            GpuWork::Memset => Cat::Memset,
        };
        self.event(
            cat,
            start_us,
            end_us,
            correlation,
            Some(stream),
            Some(device),
            name,
        );
    }

    /// One host call of the CUDA runtime or driver (`cudaLaunchKernel`,
    /// `cudaGraphLaunch`, `cudaMemcpyAsync` …) with its correlation id.
    pub fn runtime_call(
        &mut self,
        start_us: f64,
        end_us: f64,
        correlation: Option<u64>,
        name: &str,
    ) {
        self.event(
            Cat::Runtime,
            start_us,
            end_us,
            correlation,
            None,
            None,
            name,
        );
    }

    /// A host–device synchronisation on a GPU stream (counted as sync, not work).
    pub fn sync(&mut self, stream: i64, start_us: f64, end_us: f64, correlation: Option<u64>) {
        self.event(
            Cat::Sync,
            start_us,
            end_us,
            correlation,
            Some(stream),
            None,
            "",
        );
    }

    /// A GPU the source describes (its device id as the GPU work names it).
    pub fn device(
        &mut self,
        id: i64,
        name: Option<&str>,
        total_mem: Option<u64>,
        sms: Option<u64>,
    ) {
        self.st.device_props.push(json!({
            "id": id,
            "name": name,
            "totalGlobalMem": total_mem,
            "numSms": sms,
        }));
    }

    /// The rank the work belongs to (a single-process export: 0).
    pub fn rank(&mut self, rank: i64) {
        self.st.rank = Some(rank);
    }

    /// The wall clock (ns since 1970) at trace time 0.
    pub fn base_time_ns(&mut self, ns: u64) {
        self.st.base_time_ns = Some(ns);
    }

    /// The analysis, as for a trace; `notes` come first in its notes.
    pub fn finish(self, opts: &Options, notes: Vec<String>) -> TraceAnalysis {
        finish(self.st, opts, notes)
    }

    #[allow(clippy::too_many_arguments)]
    fn event(
        &mut self,
        cat: Cat,
        start_us: f64,
        end_us: f64,
        correlation: Option<u64>,
        stream: Option<i64>,
        device: Option<i64>,
        name: &str,
    ) {
        self.st.name_buf.clear();
        self.st.name_buf.push_str(name);
        let args = Args {
            correlation,
            stream,
            device,
            ..Args::default()
        };
        self.st.fold_event(
            true,
            cat,
            Id::Missing,
            Id::Missing,
            Some(start_us),
            Some(end_us - start_us),
            args,
        );
    }
}
