//! A set of rank traces from one distributed run, summarised from each rank's analysis
//! (no trace is read again): per-rank temporal breakdown and communication overlap, the
//! set's kernel-type time summed over its ranks (as HTA's `get_gpu_kernel_breakdown`
//! sums them), collectives per step, and the straggler.
//!
//! Straggler: HTA 0.5.0 (`find_stragglers_with_late_start_comm_kernels`) flags, per
//! iteration, the rank whose last long communication kernel starts latest: the rank the
//! others wait for. Comparing start times across ranks needs their clocks aligned; we
//! read the same signal inside each rank's own steps instead: over the steps all ranks
//! share, each rank's computation and time in collectives (an NCCL kernel runs while it
//! waits for its peers). The straggler is the rank that computes longest while the
//! others spend longer in collectives; none when its computation exceeds the median of
//! the others by less than [`STRAGGLER_MIN_PCT`] % of the step, or when the others do
//! not wait longer.

use super::pytorch_trace::distributed::{CollectiveStat, StepTime};
use super::pytorch_trace::{Temporal, TraceAnalysis};
use crate::fmt::grouped;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Ranks in a set at most.
pub const MAX_RANKS: usize = 1024;

/// A computation lead below this share of the step (%) is not called a straggler.
pub const STRAGGLER_MIN_PCT: f64 = 1.0;

/// One member as the set sees it.
pub struct Member<'a> {
    pub artifact_id: i64,
    pub name: &'a str,
    /// The analysis of a trace that analysed; the reason of one that failed.
    pub outcome: Result<&'a TraceAnalysis, &'a str>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankRow {
    pub rank: i64,
    pub artifact_id: i64,
    pub name: String,
    pub temporal: Option<Temporal>,
    pub comm_comp_overlap_pct: Option<f64>,
    /// Union of communication kernels (µs).
    pub comm_us: f64,
    /// Mean over the common steps (µs).
    pub step_us: Option<f64>,
    pub compute_per_step_us: Option<f64>,
    pub comm_per_step_us: Option<f64>,
    /// Busy fraction over the rank's own GPU window, in equal buckets.
    pub busy: Vec<f64>,
    /// The rank's GPU window length (µs): the heatmap's time axis for this row.
    pub window_us: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FailedRank {
    pub artifact_id: i64,
    pub name: String,
    pub reason: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelTypeShare {
    pub kernel_type: String,
    pub us: f64,
    pub pct: f64,
}

/// One collective per step, the mean over the ranks that ran it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CollectivePerStep {
    pub name: String,
    pub count: f64,
    pub us: f64,
    pub bytes: Option<f64>,
    /// Ranks that ran it.
    pub ranks: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Straggler {
    /// None when there is none.
    pub rank: Option<i64>,
    /// Its computation per step above the median of the others.
    pub skew_ms: f64,
    /// That lead as a share of the median step (%).
    pub skew_pct: f64,
    pub evidence: String,
    /// Steps all ranks share, over which it is measured.
    pub steps: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SetSummary {
    pub ranks: Vec<RankRow>,
    pub failed: Vec<FailedRank>,
    pub world_size: Option<i64>,
    /// Ranks below the world size that no trace of the set holds.
    pub missing_ranks: Vec<i64>,
    pub kernel_types: Vec<KernelTypeShare>,
    pub collectives: Vec<CollectivePerStep>,
    pub straggler: Straggler,
    pub notes: Vec<String>,
}

/// Why a set cannot be summarised: the members the problem is about, named.
#[derive(Debug, Clone, PartialEq)]
pub struct SetError(pub String);

fn label(id: i64, name: &str) -> String {
    format!("artifact {id} ({name})")
}

fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The summary, or why there is none (a rank named twice or not at all, no rank
/// analysed).
pub fn summarize(members: &[Member<'_>]) -> Result<SetSummary, SetError> {
    let mut failed = Vec::new();
    let mut ok: Vec<(i64, &str, &TraceAnalysis)> = Vec::new();
    for m in members {
        match m.outcome {
            Ok(a) => ok.push((m.artifact_id, m.name, a)),
            Err(reason) => failed.push(FailedRank {
                artifact_id: m.artifact_id,
                name: m.name.to_string(),
                reason: reason.to_string(),
            }),
        }
    }
    if ok.is_empty() {
        return Err(SetError(format!(
            "no trace of the set was analysed: {}",
            failed
                .iter()
                .map(|f| format!("{}: {}", label(f.artifact_id, &f.name), f.reason))
                .collect::<Vec<_>>()
                .join("; ")
        )));
    }
    // Ranks: given by each trace, unique.
    if ok.len() > 1 {
        let unnamed: Vec<String> = ok
            .iter()
            .filter(|(_, _, a)| !a.distributed.as_ref().is_some_and(|d| d.rank_given))
            .map(|(id, n, _)| label(*id, n))
            .collect();
        if !unnamed.is_empty() {
            return Err(SetError(format!(
                "{} name no rank (distributedInfo.rank): a set needs each trace's rank from the trace itself",
                unnamed.join(", ")
            )));
        }
    }
    let mut by_rank: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    for (id, n, a) in &ok {
        by_rank.entry(a.rank).or_default().push(label(*id, n));
    }
    let dups: Vec<String> = by_rank
        .iter()
        .filter(|(_, v)| v.len() > 1)
        .map(|(r, v)| format!("rank {r} is in {}", v.join(" and ")))
        .collect();
    if !dups.is_empty() {
        return Err(SetError(format!(
            "{}: each rank may be in the set once",
            dups.join("; ")
        )));
    }
    ok.sort_by_key(|(_, _, a)| a.rank);
    let mut notes = Vec::new();
    let world_size = ok
        .iter()
        .filter_map(|(_, _, a)| a.distributed.as_ref().and_then(|d| d.world_size))
        .max();
    let mut missing_ranks = Vec::new();
    if let Some(w) = world_size {
        let failed_ranks = failed.len() as i64;
        missing_ranks = (0..w.min(MAX_RANKS as i64))
            .filter(|r| !by_rank.contains_key(r))
            .collect();
        if !missing_ranks.is_empty() {
            notes.push(format!(
                "the traces say the run had {w} ranks; {} of them {} no trace here{}",
                grouped(missing_ranks.len() as u64),
                if missing_ranks.len() == 1 {
                    "has"
                } else {
                    "have"
                },
                if failed_ranks > 0 {
                    " (a trace that failed to analyse may hold one)"
                } else {
                    ""
                }
            ));
        }
    }

    // Steps all ranks share.
    let step_sets: Vec<BTreeSet<i64>> = ok
        .iter()
        .map(|(_, _, a)| {
            a.distributed
                .as_ref()
                .map(|d| d.steps.iter().map(|s| s.step).collect())
                .unwrap_or_default()
        })
        .collect();
    let mut common: BTreeSet<i64> = step_sets.first().cloned().unwrap_or_default();
    for s in &step_sets[1..] {
        common = common.intersection(s).copied().collect();
    }
    if common.is_empty() && ok.len() > 1 {
        notes.push("the ranks share no profiler step: per-step figures are not compared".into());
    }

    let mut ranks = Vec::new();
    let mut kt: HashMap<String, f64> = HashMap::new();
    let mut coll: BTreeMap<String, (f64, f64, Option<f64>, u64)> = BTreeMap::new();
    for (id, name, a) in &ok {
        let d = a.distributed.clone().unwrap_or_default();
        let in_common: Vec<&StepTime> = d
            .steps
            .iter()
            .filter(|s| common.contains(&s.step))
            .collect();
        let mean = |f: &dyn Fn(&StepTime) -> f64| {
            (!in_common.is_empty())
                .then(|| in_common.iter().map(|s| f(s)).sum::<f64>() / in_common.len() as f64)
        };
        for k in &d.kernel_types {
            *kt.entry(k.kernel_type.clone()).or_default() += k.us;
        }
        let steps_run = (d.steps.len() as u64 + d.steps_dropped).max(1) as f64;
        for c in &d.collectives {
            let CollectiveStat {
                name,
                count,
                us,
                bytes,
                ..
            } = c;
            let e = coll.entry(name.clone()).or_insert((0.0, 0.0, None, 0));
            e.0 += *count as f64 / steps_run;
            e.1 += us / steps_run;
            if let Some(b) = bytes {
                e.2 = Some(e.2.unwrap_or(0.0) + b / steps_run);
            }
            e.3 += 1;
        }
        ranks.push(RankRow {
            rank: a.rank,
            artifact_id: *id,
            name: name.to_string(),
            temporal: a.temporal.first().cloned(),
            comm_comp_overlap_pct: d.comm_comp_overlap_pct,
            comm_us: d.comm_us,
            step_us: mean(&|s| s.gpu_us),
            compute_per_step_us: mean(&|s| s.compute_us),
            comm_per_step_us: mean(&|s| s.comm_us),
            busy: d.busy.clone(),
            window_us: a.gpu_window_us.map(|[s, e]| e - s),
        });
    }
    let total: f64 = kt.values().sum();
    let mut kernel_types: Vec<KernelTypeShare> = kt
        .into_iter()
        .map(|(kernel_type, us)| KernelTypeShare {
            kernel_type,
            us,
            pct: if total > 0.0 { 100.0 * us / total } else { 0.0 },
        })
        .collect();
    kernel_types.sort_by(|a, b| {
        b.us.total_cmp(&a.us)
            .then(a.kernel_type.cmp(&b.kernel_type))
    });
    let mut collectives: Vec<CollectivePerStep> = coll
        .into_iter()
        .map(|(name, (count, us, bytes, n))| CollectivePerStep {
            name,
            count: count / n as f64,
            us: us / n as f64,
            bytes: bytes.map(|b| b / n as f64),
            ranks: n,
        })
        .collect();
    collectives.sort_by(|a, b| b.us.total_cmp(&a.us));
    let straggler = straggler(&ranks, common.len() as u64);
    Ok(SetSummary {
        ranks,
        failed,
        world_size,
        missing_ranks,
        kernel_types,
        collectives,
        straggler,
        notes,
    })
}

fn ms(us: f64) -> String {
    format!("{:.2} ms", us / 1000.0)
}

fn straggler(ranks: &[RankRow], steps: u64) -> Straggler {
    let none = |evidence: String| Straggler {
        rank: None,
        skew_ms: 0.0,
        skew_pct: 0.0,
        evidence,
        steps,
    };
    let measured: Vec<(&RankRow, f64, f64, f64)> = ranks
        .iter()
        .filter_map(|r| Some((r, r.compute_per_step_us?, r.comm_per_step_us?, r.step_us?)))
        .collect();
    if measured.len() < 2 {
        return none(if ranks.len() < 2 {
            "one rank: there is no other to compare it with".to_string()
        } else {
            "the ranks share no step to compare".to_string()
        });
    }
    let Some(&(lead, compute, comm, _)) = measured.iter().max_by(|a, b| a.1.total_cmp(&b.1)) else {
        return none("no step to compare".to_string());
    };
    let others: Vec<&(&RankRow, f64, f64, f64)> =
        measured.iter().filter(|m| m.0.rank != lead.rank).collect();
    let med_compute = median(&mut others.iter().map(|m| m.1).collect::<Vec<_>>()).unwrap_or(0.0);
    let med_comm = median(&mut others.iter().map(|m| m.2).collect::<Vec<_>>()).unwrap_or(0.0);
    let med_step = median(&mut measured.iter().map(|m| m.3).collect::<Vec<_>>()).unwrap_or(0.0);
    let skew = compute - med_compute;
    let skew_pct = if med_step > 0.0 {
        100.0 * skew / med_step
    } else {
        0.0
    };
    if skew_pct < STRAGGLER_MIN_PCT {
        return none(format!(
            "no straggler: computation per step differs by {} ({:.2} % of the {} step) at most between ranks, under {STRAGGLER_MIN_PCT} %",
            ms(skew.max(0.0)),
            skew_pct.max(0.0),
            ms(med_step)
        ));
    }
    if med_comm <= comm {
        return none(format!(
            "no straggler: rank {} computes {} more per step than the others' median, but they do not wait longer in collectives ({} against its {})",
            lead.rank,
            ms(skew),
            ms(med_comm),
            ms(comm)
        ));
    }
    Straggler {
        rank: Some(lead.rank),
        skew_ms: skew / 1000.0,
        skew_pct,
        evidence: format!(
            "rank {} computes {} per step against {} (median of the other ranks) and spends {} in collectives against their {}: the others wait for it (mean over {} common steps)",
            lead.rank,
            ms(compute),
            ms(med_compute),
            ms(comm),
            ms(med_comm),
            steps
        ),
        steps,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::pytorch_trace::distributed::Distributed;
    use super::*;

    pub(crate) fn trace(rank: i64, given: bool, steps: &[(i64, f64, f64, f64)]) -> TraceAnalysis {
        let doc = format!(
            r#"{{"distributedInfo": {{"rank": {rank}, "world_size": 4}}, "traceEvents": []}}"#
        );
        let mut t = crate::analyze::pytorch_trace::analyze(
            doc.as_bytes(),
            &crate::analyze::Options::default(),
        )
        .unwrap();
        t.distributed = Some(Distributed {
            rank_given: given,
            world_size: Some(4),
            steps: steps
                .iter()
                .map(|&(step, gpu_us, compute_us, comm_us)| StepTime {
                    step,
                    gpu_us,
                    compute_us,
                    comm_us,
                })
                .collect(),
            ..Distributed::default()
        });
        t
    }

    #[test]
    fn a_slow_rank_that_others_wait_for_is_the_straggler() {
        let fast = [
            (1, 10_000.0, 7_000.0, 3_000.0),
            (2, 10_000.0, 7_000.0, 3_000.0),
        ];
        let slow = [
            (1, 10_000.0, 9_000.0, 1_000.0),
            (2, 10_000.0, 9_000.0, 1_000.0),
        ];
        let ts = [
            trace(0, true, &fast),
            trace(1, true, &fast),
            trace(2, true, &slow),
            trace(3, true, &fast),
        ];
        let names = ["r0", "r1", "r2", "r3"];
        let members: Vec<Member> = ts
            .iter()
            .enumerate()
            .map(|(i, t)| Member {
                artifact_id: 10 + i as i64,
                name: names[i],
                outcome: Ok(t),
            })
            .collect();
        let s = summarize(&members).unwrap();
        assert_eq!(s.straggler.rank, Some(2));
        assert!((s.straggler.skew_ms - 2.0).abs() < 1e-9);
        assert!((s.straggler.skew_pct - 20.0).abs() < 1e-9);
        assert_eq!(s.straggler.steps, 2);
        assert!(
            s.straggler.evidence.contains("rank 2 computes 9.00 ms"),
            "{}",
            s.straggler.evidence
        );
        assert!(s.missing_ranks.is_empty());
    }

    #[test]
    fn equal_ranks_have_no_straggler_and_a_gap_is_named() {
        let st = [(5, 10_000.0, 7_000.0, 3_000.0)];
        let ts = [
            trace(0, true, &st),
            trace(1, true, &st),
            trace(3, true, &st),
        ];
        let members: Vec<Member> = ts
            .iter()
            .map(|t| Member {
                artifact_id: t.rank + 1,
                name: "x",
                outcome: Ok(t),
            })
            .collect();
        let s = summarize(&members).unwrap();
        assert_eq!(s.straggler.rank, None);
        assert!(
            s.straggler.evidence.starts_with("no straggler"),
            "{}",
            s.straggler.evidence
        );
        assert_eq!(s.missing_ranks, vec![2]);
    }

    #[test]
    fn duplicate_and_unnamed_ranks_are_refused_by_name() {
        let a = trace(1, true, &[]);
        let b = trace(1, true, &[]);
        let e = summarize(&[
            Member {
                artifact_id: 7,
                name: "a.json",
                outcome: Ok(&a),
            },
            Member {
                artifact_id: 9,
                name: "b.json",
                outcome: Ok(&b),
            },
        ])
        .unwrap_err();
        assert!(
            e.0.contains("rank 1 is in artifact 7 (a.json) and artifact 9 (b.json)"),
            "{}",
            e.0
        );
        let c = trace(0, false, &[]);
        let e = summarize(&[
            Member {
                artifact_id: 7,
                name: "a.json",
                outcome: Ok(&a),
            },
            Member {
                artifact_id: 8,
                name: "c.json",
                outcome: Ok(&c),
            },
        ])
        .unwrap_err();
        assert!(e.0.contains("artifact 8 (c.json) name no rank"), "{}", e.0);
    }

    #[test]
    fn a_failed_rank_is_named_and_the_rest_summarised() {
        let a = trace(0, true, &[]);
        let s = summarize(&[
            Member {
                artifact_id: 1,
                name: "r0",
                outcome: Ok(&a),
            },
            Member {
                artifact_id: 2,
                name: "r1",
                outcome: Err("the trace ends early"),
            },
        ])
        .unwrap();
        assert_eq!(s.ranks.len(), 1);
        assert_eq!(s.failed[0].artifact_id, 2);
        assert_eq!(s.failed[0].reason, "the trace ends early");
        let e = summarize(&[Member {
            artifact_id: 2,
            name: "r1",
            outcome: Err("broken"),
        }])
        .unwrap_err();
        assert!(e.0.contains("artifact 2 (r1): broken"));
    }

    /// The rank sets of `tests/oracles/hta_trace_sets.py`, built the same way.
    mod against_hta {
        use super::super::super::test_support::{open, real_fixtures};
        use super::*;
        use serde_json::Value;

        fn load(root: &std::path::Path, rel: &str) -> Value {
            let gz = flate2::read::GzDecoder::new(open(root, rel));
            serde_json::from_reader(gz).unwrap()
        }

        fn with_rank(mut doc: Value, rank: i64) -> TraceAnalysis {
            doc["distributedInfo"]["rank"] = rank.into();
            let bytes = serde_json::to_vec(&doc).unwrap();
            crate::analyze::pytorch_trace::analyze(&bytes[..], &crate::analyze::Options::default())
                .unwrap()
        }

        /// Fractional µs cut to whole ones (floor), as the oracle script does for the pair.
        fn whole_us(mut doc: Value) -> Value {
            for e in doc["traceEvents"].as_array_mut().unwrap() {
                for k in ["ts", "dur"] {
                    if let Some(x) = e.get(k).filter(|v| v.is_f64()).and_then(Value::as_f64) {
                        e[k] = (x.floor() as i64).into();
                    }
                }
            }
            doc
        }

        /// Rank 2 of the straggler set: NCCL kernels start later by half their duration
        /// (and end as before); other kernels last 5/4 as long (integer µs, rounded down).
        fn straggle(doc: &mut Value) {
            for e in doc["traceEvents"].as_array_mut().unwrap() {
                if e["cat"] != "kernel" || !e["dur"].is_number() {
                    continue;
                }
                let dur = e["dur"].as_i64().unwrap();
                if e["name"].as_str().unwrap().starts_with("nccl") {
                    let d = dur / 2;
                    e["ts"] = (e["ts"].as_i64().unwrap() + d).into();
                    e["dur"] = (dur - d).into();
                } else {
                    e["dur"] = (dur * 5 / 4).into();
                }
            }
        }

        fn close(ours: f64, hta: f64, what: &str) {
            assert!(
                (ours - hta).abs() <= hta.abs() * 0.005 + 1.0,
                "{what}: ours {ours}, HTA {hta}"
            );
        }

        fn check(
            s: &SetSummary,
            temporal: &[(i64, f64, f64, f64, f64, f64)],
            types: &[(&str, f64, f64)],
        ) {
            for &(rank, idle, compute, non_compute, span, overlap) in temporal {
                let r = s.ranks.iter().find(|r| r.rank == rank).unwrap();
                let t = r.temporal.as_ref().unwrap();
                close(t.idle_us, idle, "idle");
                close(t.compute_us, compute, "compute");
                close(t.non_compute_us, non_compute, "non-compute");
                close(t.span_us, span, "span");
                let o = r.comm_comp_overlap_pct.unwrap();
                assert!(
                    (o - overlap).abs() <= 0.5,
                    "rank {rank} overlap: ours {o}, HTA {overlap}"
                );
            }
            assert_eq!(s.kernel_types.len(), types.len(), "{:?}", s.kernel_types);
            for &(kind, us, pct) in types {
                let k = s
                    .kernel_types
                    .iter()
                    .find(|k| k.kernel_type == kind)
                    .unwrap_or_else(|| panic!("{kind}"));
                close(k.us, us, kind);
                assert!(
                    (k.pct - pct).abs() <= 0.5,
                    "{kind}: ours {} %, HTA {pct} %",
                    k.pct
                );
            }
        }

        fn members<'a>(ts: &'a [TraceAnalysis]) -> Vec<Member<'a>> {
            ts.iter()
                .map(|t| Member {
                    artifact_id: t.rank + 1,
                    name: "rank",
                    outcome: Ok(t),
                })
                .collect()
        }

        /// HTA 0.5.0: `get_temporal_breakdown`, `get_comm_comp_overlap`,
        /// `get_gpu_kernel_breakdown(include_memory_kernels=True)`,
        /// `get_potential_stragglers(num_candidates=1)` on the two sets.
        #[test]
        fn rank_sets_match_hta() {
            let Some(root) = real_fixtures() else { return };
            let nccl = whole_us(load(
                &root,
                "pytorch_trace/hta__nccl_parser_config__nccl_data.json.gz",
            ));
            let pair = [with_rank(nccl.clone(), 0), with_rank(nccl, 1)];
            let s = summarize(&members(&pair)).unwrap();
            check(
                &s,
                &[
                    (0, 337597.0, 76067.0, 21923.0, 435587.0, 14.52),
                    (1, 337597.0, 76067.0, 21923.0, 435587.0, 14.52),
                ],
                &[
                    ("COMPUTATION", 145082.0, 74.0),
                    ("COMMUNICATION", 41094.0, 21.0),
                    ("COMPUTATION overlapping COMMUNICATION", 7052.0, 3.6),
                    ("MEMORY", 2338.0, 1.2),
                    ("COMMUNICATION overlapping MEMORY", 414.0, 0.2),
                ],
            );
            // Identical ranks: HTA names rank 0 (the first of a tie); there is none.
            assert_eq!(s.straggler.rank, None, "{}", s.straggler.evidence);
            assert_eq!(s.world_size, Some(2));
            let ar = s
                .collectives
                .iter()
                .find(|c| c.name == "allreduce")
                .unwrap();
            assert!(ar.bytes.unwrap() > 0.0);

            let test = load(&root, "pytorch_trace/hta__trace_diff__test__test.json.gz");
            let set: Vec<TraceAnalysis> = (0..4)
                .map(|r| {
                    let mut d = test.clone();
                    if r == 2 {
                        straggle(&mut d);
                    }
                    with_rank(d, r)
                })
                .collect();
            let s = summarize(&members(&set)).unwrap();
            check(
                &s,
                &[
                    (0, 46910.0, 429216.0, 152245.0, 628371.0, 68.80),
                    (2, 51991.0, 450346.0, 126034.0, 628371.0, 64.17),
                    (3, 46910.0, 429216.0, 152245.0, 628371.0, 68.80),
                ],
                &[
                    ("COMPUTATION", 1155414.0, 49.8),
                    ("COMPUTATION overlapping COMMUNICATION", 448053.0, 19.3),
                    ("MEMORY", 370605.0, 16.0),
                    ("COMMUNICATION", 194784.0, 8.4),
                    ("COMPUTATION overlapping MEMORY", 128911.0, 5.6),
                    ("COMMUNICATION overlapping MEMORY", 17380.0, 0.7),
                    (
                        "COMPUTATION overlapping COMMUNICATION overlapping MEMORY",
                        5616.0,
                        0.2,
                    ),
                ],
            );
            // HTA: [2].
            assert_eq!(s.straggler.rank, Some(2), "{}", s.straggler.evidence);
            assert!(s.straggler.skew_ms > 0.0);
        }
    }
}
