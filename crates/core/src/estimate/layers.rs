//! Which attention each decoder layer runs, and so what its cache holds per sequence:
//!
//! - full (global) softmax attention: K and V of every token so far, growing with the context;
//! - sliding-window attention: K and V of the last `window` tokens only (gpt-oss: 128,
//!   Gemma 3: 1,024), so the cache stops growing at the window;
//! - linear attention (Qwen3-Next's Gated DeltaNet, MiniMax's lightning attention): a
//!   fixed-size state per sequence, whatever the context.
//!
//! Read from `layer_types` when the config lists it, else from the pattern keys models
//! use instead: Qwen3-Next's `full_attention_interval` (every n-th layer full, the rest
//! linear), Gemma's `sliding_window_pattern` (every n-th layer global, the rest local),
//! MiniMax's `attn_type_list` (1 softmax, 0 linear).

use serde::Serialize;

/// Layer counts by attention kind; `full + sliding + linear` = the decoder's layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LayerKinds {
    /// Layers of full attention: their KV grows with the context.
    pub full: u64,
    /// Sliding-window layers: KV capped at `window` tokens per sequence.
    pub sliding: u64,
    pub window: u64,
    /// Linear-attention layers: a fixed state per sequence, no growing KV.
    pub linear: u64,
    /// Elements of one linear layer's state per sequence (recurrent state plus the short
    /// convolution's history, all heads).
    pub linear_state: u64,
    /// Parameters of one linear-attention layer's projections.
    pub linear_params: u64,
}

impl LayerKinds {
    /// Every layer full attention (Llama, Qwen, DeepSeek …).
    pub const fn all_full(layers: u64) -> Self {
        Self {
            full: layers,
            sliding: 0,
            window: 0,
            linear: 0,
            linear_state: 0,
            linear_params: 0,
        }
    }

    /// Layers that run softmax attention (full or sliding): the ones with q/k/v/o.
    pub fn softmax(&self) -> u64 {
        self.full + self.sliding
    }

    /// `48 layers: 12 full attention, 36 linear` for formulas; empty when all are full.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.sliding > 0 {
            parts.push(format!(
                "{} sliding-window ({} tokens)",
                self.sliding, self.window
            ));
        }
        if self.linear > 0 {
            parts.push(format!("{} linear attention", self.linear));
        }
        if parts.is_empty() {
            return String::new();
        }
        format!(
            "{} layers: {} full attention, {}",
            self.full + self.sliding + self.linear,
            self.full,
            parts.join(", ")
        )
    }
}

/// What one layer is, by the names configs use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Full,
    Sliding,
    Linear,
}

impl Kind {
    /// `full_attention`, `sliding_attention`, `linear_attention` (and the short forms).
    pub fn parse(name: &str) -> Result<Kind, String> {
        match name.trim().to_ascii_lowercase().as_str() {
            "full_attention" | "full" | "global" | "attention" => Ok(Kind::Full),
            "sliding_attention" | "sliding" | "local" | "sliding_window" => Ok(Kind::Sliding),
            "linear_attention" | "linear" | "mamba" => Ok(Kind::Linear),
            other => Err(format!(
                "config.json: layer_types holds `{other}`; known: full_attention, \
                 sliding_attention, linear_attention"
            )),
        }
    }
}

/// Counts the kinds of a per-layer list; `window` and the linear state come from the
/// caller (they are model-wide keys).
pub(crate) fn count(
    kinds: &[Kind],
    window: u64,
    linear_state: u64,
    linear_params: u64,
) -> LayerKinds {
    let n = |k: Kind| kinds.iter().filter(|&&x| x == k).count() as u64;
    let sliding = n(Kind::Sliding);
    LayerKinds {
        full: n(Kind::Full),
        sliding,
        window: if sliding > 0 { window } else { 0 },
        linear: n(Kind::Linear),
        linear_state,
        linear_params,
    }
}

/// Every `interval`-th layer (the last of each group) is `every`, the others `rest`:
/// Qwen3-Next's layer i is full when (i + 1) % interval = 0; Gemma 3's is global likewise.
pub(crate) fn pattern(layers: u64, interval: u64, every: Kind, rest: Kind) -> Vec<Kind> {
    (0..layers)
        .map(|i| {
            if interval > 0 && (i + 1) % interval == 0 {
                every
            } else {
                rest
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qwen3_next_interval_makes_a_quarter_full() {
        let kinds = pattern(48, 4, Kind::Full, Kind::Linear);
        let k = count(&kinds, 0, 10, 20);
        assert_eq!((k.full, k.linear, k.sliding), (12, 36, 0));
        assert_eq!(kinds[3], Kind::Full);
        assert_eq!(kinds[0], Kind::Linear);
        assert_eq!(
            k.describe(),
            "48 layers: 12 full attention, 36 linear attention"
        );
    }

    #[test]
    fn sliding_layers_keep_their_window() {
        let kinds: Vec<Kind> = ["sliding_attention", "full_attention"]
            .iter()
            .cycle()
            .take(36)
            .map(|s| Kind::parse(s).unwrap())
            .collect();
        let k = count(&kinds, 128, 0, 0);
        assert_eq!((k.full, k.sliding, k.window), (18, 18, 128));
        assert!(Kind::parse("cross_attention").is_err());
        assert_eq!(LayerKinds::all_full(32).describe(), "");
    }
}
