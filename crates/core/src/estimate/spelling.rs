//! How people spell models and GPUs, mapped onto catalog names: Hugging Face repository
//! ids with their `-Instruct`/`-Chat` suffixes ("meta-llama/Llama-3.1-8B-Instruct" is
//! `llama-3.1-8b`), and the GPU names drivers and spec sheets print ("H100 SXM 80GB",
//! "NVIDIA H100 80GB HBM3", "A100-80G" …). A name that maps to nothing gets the nearest
//! catalog names, so a form can say what was probably meant.

/// Lower case, organisation prefix and fine-tuning suffixes removed:
/// "meta-llama/Llama-3.1-8B-Instruct" → "llama-3.1-8b".
pub fn model_key(name: &str) -> String {
    let lower = name.trim().to_lowercase();
    let mut s = lower.rsplit('/').next().unwrap_or_default().to_string();
    s = s.replace(['_', ' '], "-");
    if let Some(rest) = s.strip_prefix("meta-") {
        s = rest.to_string();
    }
    loop {
        let before = s.len();
        for suffix in [
            "-instruct",
            "-chat",
            "-it",
            "-hf",
            "-base",
            "-v0.1",
            "-v0.2",
            "-v0.3",
        ] {
            if let Some(rest) = s.strip_suffix(suffix) {
                s = rest.to_string();
            }
        }
        if s.len() == before {
            return s;
        }
    }
}

/// The catalog GPU a printed name means, by the chip and the variant words in it;
/// `None` when no rule applies.
pub fn gpu_alias(name: &str) -> Option<&'static str> {
    let s: String = name
        .to_lowercase()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    // A model number counts only as a whole number: "h1000" is not an H100 (separators
    // kept here, so "A100-80G" still reads as an A100).
    let spaced: String = name
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { ' ' })
        .collect();
    let has = |model: &str| {
        spaced.match_indices(model).any(|(i, _)| {
            let before = spaced[..i].chars().next_back();
            let after = spaced[i + model.len()..].chars().next();
            !before.is_some_and(|c| c.is_ascii_digit())
                && !after.is_some_and(|c| c.is_ascii_digit())
        })
    };
    let big_memory = |g: &str| s.contains(g);
    Some(if has("gb200") {
        "gb200"
    } else if has("gb300") {
        "gb300"
    } else if has("gh200") {
        if big_memory("96g") || big_memory("480g") || (s.contains("hbm3") && !s.contains("hbm3e")) {
            "gh200-96gb"
        } else {
            "gh200"
        }
    } else if has("h100") {
        if s.contains("nvl") {
            "h100-nvl"
        } else if s.contains("pcie") {
            "h100-pcie"
        } else {
            "h100-sxm"
        }
    } else if has("h200") {
        if s.contains("nvl") {
            return None;
        }
        "h200"
    } else if has("h800") {
        if s.contains("pcie") {
            return None;
        }
        "h800"
    } else if has("h20") {
        if big_memory("141g") || big_memory("3e") || big_memory("144g") {
            "h20-141gb"
        } else {
            "h20"
        }
    } else if has("a100") {
        if s.contains("40g") {
            "a100-40gb"
        } else {
            "a100-80gb"
        }
    } else if has("l40s") {
        "l40s"
    } else if has("l20") {
        "l20"
    } else if has("l4") {
        "l4"
    } else if has("b200") {
        "b200"
    } else if has("b300") {
        "b300"
    } else if has("mi300x") {
        "mi300x"
    } else if has("mi325x") {
        "mi325x"
    } else if has("mi355x") {
        "mi355x"
    } else {
        return None;
    })
}

/// Up to three of `names` closest to `typed` (edit distance on the lower-cased
/// names, ties in catalog order).
pub fn nearest<'a>(typed: &str, names: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let typed = typed.trim().to_lowercase();
    let mut scored: Vec<(usize, usize, &str)> = names
        .enumerate()
        .map(|(i, n)| (distance(&typed, &n.to_lowercase()), i, n))
        .collect();
    scored.sort();
    scored.into_iter().take(3).map(|(_, _, n)| n).collect()
}

/// Levenshtein distance over characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_spellings_reduce_to_catalog_keys() {
        assert_eq!(
            model_key("meta-llama/Llama-3.1-8B-Instruct"),
            "llama-3.1-8b"
        );
        assert_eq!(model_key("Meta-Llama-3.1-70B-Instruct"), "llama-3.1-70b");
        assert_eq!(model_key("Qwen/Qwen2.5-7B-Instruct"), "qwen2.5-7b");
        assert_eq!(
            model_key("mistralai/Mixtral-8x7B-Instruct-v0.1"),
            "mixtral-8x7b"
        );
        assert_eq!(model_key("llama-3.1-8b"), "llama-3.1-8b");
    }

    #[test]
    fn gpu_spellings_map_to_catalog_names() {
        for (typed, want) in [
            ("H100 SXM 80GB", Some("h100-sxm")),
            ("h100", Some("h100-sxm")),
            ("NVIDIA H100 80GB HBM3", Some("h100-sxm")),
            ("H100 PCIe", Some("h100-pcie")),
            ("A100-80G", Some("a100-80gb")),
            ("NVIDIA A100-SXM4-40GB", Some("a100-40gb")),
            ("AMD Instinct MI300X", Some("mi300x")),
            ("NVIDIA L4", Some("l4")),
            ("L40S", Some("l40s")),
            ("H100 NVL", Some("h100-nvl")),
            ("H200 NVL", None),
            ("NVIDIA GB200", Some("gb200")),
            ("GB300", Some("gb300")),
            ("NVIDIA GH200 480GB", Some("gh200-96gb")),
            ("GH200 144G HBM3e", Some("gh200")),
            ("NVIDIA H20", Some("h20")),
            ("H20 141GB", Some("h20-141gb")),
            ("NVIDIA H800 80GB HBM3", Some("h800")),
            ("L20", Some("l20")),
            ("B300", Some("b300")),
            ("AMD Instinct MI325X", Some("mi325x")),
            ("MI355X", Some("mi355x")),
            ("t4", None),
            ("h1000", None),
            ("a1000", None),
        ] {
            assert_eq!(gpu_alias(typed), want, "{typed}");
        }
    }

    #[test]
    fn nearest_names_come_first() {
        let names = ["h100-sxm", "h100-pcie", "h200", "a100-80gb"];
        assert_eq!(nearest("h10-sxm", names.into_iter())[0], "h100-sxm");
        assert_eq!(nearest("x", names.into_iter()).len(), 3);
        assert_eq!(distance("kitten", "sitting"), 3);
    }
}
