//! Helpers the analyzers share (the sample summary is `core::stats::Summary`).

/// Sum of the lengths of the union of `[start, end)` intervals, given sorted by start.
pub fn union_length_sorted(intervals: impl Iterator<Item = (f64, f64)>) -> f64 {
    let mut total = 0.0;
    let mut cur: Option<(f64, f64)> = None;
    for (s, e) in intervals {
        match cur.as_mut() {
            Some((_, ce)) if s <= *ce => {
                if e > *ce {
                    *ce = e;
                }
            }
            _ => {
                if let Some((cs, ce)) = cur {
                    total += ce - cs;
                }
                cur = Some((s, e));
            }
        }
    }
    if let Some((cs, ce)) = cur {
        total += ce - cs;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_of_intervals() {
        let iv = [(0.0, 2.0), (1.0, 3.0), (5.0, 6.0), (5.5, 5.7), (6.0, 7.0)];
        assert_eq!(union_length_sorted(iv.into_iter()), 5.0);
        assert_eq!(union_length_sorted(std::iter::empty()), 0.0);
    }
}
