//! The guide: the method as a short course, one page per idea, each ending with
//! self-check questions whose model answer is shown once the learner has written theirs.
//! Plain text here; the page template lays it out.

/// A link from a page into the part of the app that practises it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Practice {
    pub label: &'static str,
    pub href: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Question {
    pub prompt: &'static str,
    pub model_answer: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub slug: &'static str,
    pub title: &'static str,
    pub summary: &'static str,
    pub paragraphs: &'static [&'static str],
    pub practice: &'static [Practice],
    pub questions: &'static [Question],
}

pub const PAGES: &[Page] = &[
    Page {
        slug: "procedure",
        title: "The procedure: eight steps",
        summary: "What each of steps 0 to 7 asks you to record, and what the app works out from it.",
        paragraphs: &[
            "An investigation starts with a complaint (\"it got slow\") and ends with one change, measured before and after, written down. Between the two sit eight steps, numbered 0 to 7, and each one narrows the search.",
            "Step 0 pins the baseline: can you make it slow on demand, and with exactly which code, image, engine version, model revision, precisions, GPUs, parallelism, scheduler settings and workload shape. Every later comparison is checked against this record, so a blank here weakens everything after it.",
            "Step 1 turns the complaint into one number: a metric (TTFT, ITL, end-to-end latency, throughput, queue wait or cost), a percentile, the observed value and the target, each with a unit. The app reports the gap as a ratio. Step 2 splits that metric into phases (tokenize, queue wait, prefill, decode, detokenize, network) and names the one that dominates.",
            "Steps 3 to 5 go inside the dominant phase: is the time on the GPU, on the CPU, or spent waiting; for GPU time, which regime the busy kernels are in; and which kernel, and why. Step 6 estimates each candidate fix with Amdahl's law before any work starts, and step 7 changes exactly one thing, re-measures under the step-0 conditions and records the result in the journal.",
        ],
        practice: &[
            Practice { label: "Open an investigation and walk the steps", href: "/investigations/new" },
            Practice { label: "Replay a finished investigation blind", href: "/replays" },
        ],
        questions: &[
            Question {
                prompt: "Why does step 0 record the scheduler settings and the workload shape, not only the code revision?",
                model_answer: "Because the before/after comparison in step 7 is valid only when everything except the one change is the same. Latency depends on max_num_seqs, chunked prefill, prompt lengths and arrival rate as much as on the code; if any of them differs, a change in the metric cannot be credited to the fix.",
            },
            Question {
                prompt: "A colleague says \"the service is slow\". What must step 1 turn that into?",
                model_answer: "One metric at one percentile with an observed value and a target, in units — for example p95 TTFT 3.2 s against an 800 ms target, a gap of 4×. Without a number there is nothing to decompose and no way to tell later whether a change helped.",
            },
        ],
    },
    Page {
        slug: "order",
        title: "Why the order matters",
        summary: "Each step rules out whole families of causes for little effort; kernels come late on purpose.",
        paragraphs: &[
            "The steps are ordered by cost. Reading a phase table takes minutes and eliminates most causes at once: if queue wait is 2.3 s of a 2.5 s TTFT, no kernel work can help, and an afternoon in a profiler would have been wasted.",
            "Starting at kernels is the most common and most expensive mistake. A profile shows every kernel, and one of them always looks slow; without steps 1 and 2 you do not know whether that kernel sits on the path of the metric that is actually late.",
            "The app keeps the order visible. Opening a later step before the earlier ones are recorded is allowed, but it asks why and keeps the reason beside the step, so a reader of the investigation sees which shortcut was taken.",
        ],
        practice: &[
            Practice { label: "See a worked example in the journal", href: "/journal" },
        ],
        questions: &[
            Question {
                prompt: "Your p95 TTFT is four times its target and a trace shows attention kernels at 40 % of GPU time. Why not optimise attention first?",
                model_answer: "Because nothing yet says the late TTFT is spent in GPU compute. The phase split (step 2) may show the time is queue wait or tokenization, in which case a faster attention kernel changes nothing the user sees. Check the dominant phase first; go to kernels only if the phase and the GPU/CPU split point there.",
            },
        ],
    },
    Page {
        slug: "phases",
        title: "Phase decomposition",
        summary: "Split the late metric into tokenize, queue wait, prefill, decode, detokenize and network, and find the one that dominates.",
        paragraphs: &[
            "Per-request telemetry gives each request's time in every phase. Take the same percentile of each phase that step 1 chose for the metric and compare them with the metric itself: the share of each phase tells you where the time goes.",
            "Time to first token is roughly tokenize + queue wait + prefill (plus sampling the first token); inter-token latency is decode. So a late TTFT can only be fixed in the first three phases, and a choppy stream only in decode.",
            "If no phase is large but the total is, either the measurement is wrong or the time is in the gaps between phases. That is the signal to go to step 3 and look at what the process is doing between them.",
        ],
        practice: &[
            Practice { label: "Estimate a prefill change (prefix reuse)", href: "/estimators/prefix-reuse" },
            Practice { label: "Record a phase table in an investigation", href: "/investigations/new" },
        ],
        questions: &[
            Question {
                prompt: "p95 TTFT is 2,500 ms; p95 queue wait is 2,300 ms, p95 prefill 150 ms. What kind of problem is it?",
                model_answer: "A capacity or admission problem: queue wait is over 90 % of the TTFT. Faster prefill kernels could save at most the 150 ms. The next checks are the running batch against its maximum, preemptions and whether long prefills block the queue.",
            },
        ],
    },
    Page {
        slug: "decision-tree",
        title: "The decision tree after step 2",
        summary: "What to check next for each dominant phase.",
        paragraphs: &[
            "Queue wait dominates: compare the average running batch with the configured maximum. A low batch means the scheduler or admission holds requests back (max_num_seqs, preemption, long prefills blocking without chunked prefill); a batch at its maximum means the replica is full and needs company.",
            "Prefill dominates: first ask whether prompts got longer, then look at the prefix-cache hit rate, then compare prefill with the compute roofline, and only then at kernels.",
            "Decode dominates: compute the bandwidth floor — the bytes a step must read (weights plus the batch's KV cache) divided by memory bandwidth — and the expected step, what a well-run server of the same engine, GPU, parallelism and precision takes: the floor at the bandwidth kernels really reach, plus the fixed costs every step pays (collectives, MoE routing, sampling and scheduling), fitted on published runs. Read the measured step against the expected one: up to 1.2× it is healthy and only fewer bytes or fewer fixed costs help; 1.2 to 2.5× is overhead to profile; beyond 2.5× something structural is wasting most of each step. A small MoE step can sit at a fifth of its floor and still be healthy: its fixed costs dwarf the few experts it reads. Once your team has measured a setup three times, the band uses your own record of it.",
            "Tokenize or detokenize dominates: a slow tokenizer, or detokenizing token by token. Network dominates (client TTFT far above server TTFT): usually a proxy that buffers the stream.",
        ],
        practice: &[
            Practice { label: "Decode floor estimator", href: "/estimators/decode-floor" },
            Practice { label: "Drill: decode floor", href: "/drills/decode-floor" },
            Practice { label: "Drill: which regime", href: "/drills/regime" },
        ],
        questions: &[
            Question {
                prompt: "Decode dominates; the floor is 6 ms, the expected step 8 ms and the measured step 24 ms. Which band is it in, and what do you do next?",
                model_answer: "24 / 8 = 3× the expected step, beyond 2.5×: structural (the floor ratio, 6 / 24 = 0.25, says the same). Before profiling kernels, look for what wastes whole steps — tiny batches, prefills interleaved with decode, host syncs, scheduling gaps.",
            },
            Question {
                prompt: "Queue wait dominates and the running batch sits at max_num_seqs all day. What is the fix family?",
                model_answer: "The replica is genuinely full: add capacity (more replicas) or make each request cheaper. Raising admission limits without memory for the KV cache only causes preemption.",
            },
        ],
    },
    Page {
        slug: "gpu-cpu-waiting",
        title: "GPU, CPU or waiting",
        summary: "Step 3: compare kernel time and CPU busy time with the wall clock of the same window.",
        paragraphs: &[
            "Take one window — a decode step, a second of serving — and add up three numbers: GPU kernel time, CPU busy time and wall-clock time.",
            "If kernel time is close to the wall clock (0.8 or more of it), the GPU is the bottleneck and steps 4 and 5 apply. If CPU busy time is close to the wall clock, the host is the bottleneck: scheduling, tokenization, Python overhead.",
            "If both are far below the wall clock, the process is waiting: on a lock, on an implicit synchronisation such as reading a tensor's value on the host, on the network or on a collective. No kernel optimisation shortens a wait.",
            "Idle GPU time counts as a bubble only when work was queued at the time. With an empty queue it is simply too little offered load, and the first experiment is a replay at higher fixed concurrency.",
        ],
        practice: &[
            Practice { label: "Tensor-parallel all-reduce estimator", href: "/estimators/tp-allreduce" },
        ],
        questions: &[
            Question {
                prompt: "Over one second of decode, GPU kernels run 350 ms and the CPU is busy 300 ms. What do you conclude?",
                model_answer: "Neither is near the wall clock, so the process spends most of the second waiting — on syncs, locks, the network or a collective. Find what it waits on before touching kernels or CPU code.",
            },
        ],
    },
    Page {
        slug: "estimation",
        title: "The estimation habit",
        summary: "Before measuring or fixing, compute what the number should be; the gap is the finding.",
        paragraphs: &[
            "Every symptom has an expected cost you can work out on paper: a decode step cannot be faster than its bytes divided by bandwidth; a prefill cannot beat its FLOPs at peak; a model either fits beside its KV cache or does not. The estimators write these chains out with the numbers substituted.",
            "The habit is to write the expected value before you look at the measurement. Observed over expected tells you whether there is something to find at all, and how much.",
            "Amdahl's law sets the ceiling of every fix: speeding up a share s of the time by k gives at most 1 / ((1 − s) + s / k) end to end. Rank candidate fixes by that gain per day of effort, and distrust any that touch under 5 % of the time.",
            "The drills train exactly this: given a chain's inputs, produce its number within 5 %, first one step (weights per GPU), then the whole chain.",
        ],
        practice: &[
            Practice { label: "Estimator drills", href: "/drills" },
            Practice { label: "Ranking drill (gain per day)", href: "/drills/ranking" },
            Practice { label: "All estimators", href: "/estimators" },
        ],
        questions: &[
            Question {
                prompt: "A fix makes a phase that is 9 % of the time three times faster. What is the end-to-end ceiling?",
                model_answer: "1 / ((1 − 0.09) + 0.09 / 3) = 1 / 0.94 ≈ 1.064, about 6 % — however fast the phase gets, the other 91 % stays.",
            },
            Question {
                prompt: "How many bytes do the bf16 weights of an 8-billion-parameter model put on each GPU at TP 2?",
                model_answer: "8e9 parameters × 2 bytes / 2 GPUs = 8 GB per GPU (the catalog's exact count for llama-3.1-8b gives about 8.03 GB).",
            },
        ],
    },
    Page {
        slug: "journal",
        title: "The journal",
        summary: "Step 7 ends in an entry: the team's memory of what was slow, why, and what fixed it.",
        paragraphs: &[
            "An entry has a fixed shape: the date; the symptom (metric, percentile, observed against target); the workload (prompt and output tokens, request rate); the baseline metrics; the diagnosis; the one change; the result after it; how output quality was checked to be unchanged; and the effort it took.",
            "The shape makes entries comparable and searchable. The next engineer who sees a late TTFT after a deploy finds the last one in seconds, with the numbers that proved it.",
            "A result only counts from a matched comparison: the same step-0 conditions on both sides except the declared change, checked output counts and errors, distributions rather than single numbers. Otherwise the verdict is an invalid comparison, however good the number looks.",
        ],
        practice: &[
            Practice { label: "Read the journal", href: "/journal" },
            Practice { label: "Replay an entry's investigation blind", href: "/replays" },
        ],
        questions: &[
            Question {
                prompt: "Why does an entry record how quality was checked?",
                model_answer: "Because many speedups change what the model outputs (lower precision, different sampling, early stops). Without evidence that output stayed the same — for example identical paired generations — the gain may be a regression in disguise.",
            },
        ],
    },
    Page {
        slug: "mistakes",
        title: "Common mistakes",
        summary: "The shortcuts that cost the most time, and how the method avoids them.",
        paragraphs: &[
            "Going to kernels first. It feels productive and is usually aimed at the wrong phase. Decompose first.",
            "Changing two things at once. If both a flag and a version moved, the result cannot be credited to either. Step 7 allows one change.",
            "Benchmarking a profiled run. Profilers perturb timing; a profiled run is evidence of where time goes, never a capacity figure.",
            "Comparing single numbers, or runs with different workloads. Compare distributions at fixed concurrency under the step-0 record; alternate A/B/B/A to guard against drift.",
            "Counting throughput that is not there: requests that ended early, errors and cancellations look like speed. Check output-token counts and failures on both sides.",
            "Fixing what touches little time. Amdahl caps every gain; a 10× speedup on 3 % of the time is worth under 3 %.",
        ],
        practice: &[
            Practice { label: "Ranking drill", href: "/drills/ranking" },
            Practice { label: "Your progress", href: "/learn/progress" },
        ],
        questions: &[
            Question {
                prompt: "After a change, tokens per second rose 20 % but so did the error rate. What does the comparison say?",
                model_answer: "Nothing good yet: failed or truncated requests produce fewer tokens faster and inflate throughput. Check successful requests and actual output-token counts on both sides; until they match, the comparison is not valid.",
            },
        ],
    },
];

pub fn find(slug: &str) -> Option<&'static Page> {
    PAGES.iter().find(|p| p.slug == slug)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_practises_and_asks() {
        let mut slugs = std::collections::BTreeSet::new();
        for p in PAGES {
            assert!(slugs.insert(p.slug), "{} twice", p.slug);
            assert!(
                !p.paragraphs.is_empty() && !p.practice.is_empty(),
                "{}",
                p.slug
            );
            assert!(!p.questions.is_empty(), "{}", p.slug);
            for l in p.practice {
                assert!(l.href.starts_with('/'), "{}", l.href);
            }
        }
        assert_eq!(PAGES.len(), 8);
        assert_eq!(find("journal").unwrap().title, "The journal");
        assert!(find("nope").is_none());
    }

    /// The model answers that quote a number agree with the estimators.
    #[test]
    fn model_answers_agree_with_the_estimators() {
        let c = crate::estimate::run(
            "amdahl",
            &[("phases".to_string(), "a:0.09:3,rest:0.91:1".to_string())].into(),
        )
        .unwrap();
        let s = c.results["end_to_end_speedup"].as_f64().unwrap();
        assert!((s - 1.064).abs() < 0.001);
        let c = crate::estimate::run(
            "decode-floor",
            &[
                ("model".to_string(), "llama-3.1-8b".to_string()),
                ("tp".to_string(), "2".to_string()),
                ("batch".to_string(), "1".to_string()),
                ("context".to_string(), "1".to_string()),
            ]
            .into(),
        )
        .unwrap();
        let w = c.results["weight_bytes_per_gpu"].as_f64().unwrap();
        assert!((w / 1e9 - 8.03).abs() < 0.01, "{w}");
    }
}
