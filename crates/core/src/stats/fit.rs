//! Fitting bounded coefficients of a model that is linear in them, to minimise the
//! mean absolute *relative* error: `Σ |Σ_j θ_j x_ij + offset_i − y_i| / y_i`.
//!
//! The least absolute error is found by iteratively reweighted least squares (each pass
//! a weighted least-squares fit with weights `1 / (y² · max(|r|, ε))`), and each
//! weighted fit by cyclic coordinate descent projected onto θ ≥ a lower bound per
//! coefficient (times cannot be negative; an inverse efficiency cannot be below 1). Deterministic: a fixed number
//! of passes from a fixed start, so the same cases always give the same constants.

/// One observation: the basis values `x`, a fixed part of the prediction that has no
/// coefficient (`offset`), and the measured `y` (> 0).
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    pub x: Vec<f64>,
    pub offset: f64,
    pub y: f64,
}

/// Relative residuals below this count as this in the reweighting (avoids dividing by 0).
const EPSILON: f64 = 0.01;
const REWEIGHT_PASSES: usize = 40;
const DESCENT_SWEEPS: usize = 400;

/// The prediction of `theta` for one observation.
pub fn predict(theta: &[f64], o: &Observation) -> f64 {
    o.offset + theta.iter().zip(&o.x).map(|(t, x)| t * x).sum::<f64>()
}

/// Weighted non-negative least squares by projected coordinate descent on the normal
/// equations, starting from `start`.
fn weighted_nnls(obs: &[Observation], weights: &[f64], start: &[f64], lower: &[f64]) -> Vec<f64> {
    let n = start.len();
    let mut a = vec![vec![0.0; n]; n];
    let mut b = vec![0.0; n];
    for (o, w) in obs.iter().zip(weights) {
        let target = o.y - o.offset;
        for ((row, bi), xi) in a.iter_mut().zip(b.iter_mut()).zip(&o.x) {
            *bi += w * xi * target;
            for (aij, xj) in row.iter_mut().zip(&o.x) {
                *aij += w * xi * xj;
            }
        }
    }
    let mut theta = start.to_vec();
    for _ in 0..DESCENT_SWEEPS {
        for j in 0..n {
            if a[j][j] <= 0.0 {
                theta[j] = lower[j];
                continue;
            }
            let rest: f64 = (0..n).filter(|&k| k != j).map(|k| a[j][k] * theta[k]).sum();
            theta[j] = ((b[j] - rest) / a[j][j]).max(lower[j]);
        }
    }
    theta
}

/// Coefficients at or above `lower` (one bound per basis value) minimising the mean
/// absolute relative error over `obs`. Empty input gives the bounds.
pub fn least_relative_error(obs: &[Observation], lower: &[f64]) -> Vec<f64> {
    if obs.is_empty() {
        return lower.to_vec();
    }
    let mut weights: Vec<f64> = obs.iter().map(|o| 1.0 / (o.y * o.y)).collect();
    let mut theta = weighted_nnls(obs, &weights, lower, lower);
    for _ in 0..REWEIGHT_PASSES {
        weights = obs
            .iter()
            .map(|o| {
                let r = ((predict(&theta, o) - o.y) / o.y).abs();
                1.0 / (o.y * o.y * r.max(EPSILON))
            })
            .collect();
        theta = weighted_nnls(obs, &weights, &theta, lower);
    }
    theta
}

/// Mean absolute relative error of `theta` over `obs`, as a fraction.
pub fn mean_abs_relative_error(theta: &[f64], obs: &[Observation]) -> f64 {
    let errors: Vec<f64> = obs
        .iter()
        .map(|o| ((predict(theta, o) - o.y) / o.y).abs())
        .collect();
    super::mean(&errors).unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(x: &[f64], y: f64) -> Observation {
        Observation {
            x: x.to_vec(),
            offset: 0.0,
            y,
        }
    }

    #[test]
    fn recovers_exact_coefficients() {
        // y = 2 a + 0.5 b
        let data: Vec<Observation> = [(1.0, 2.0), (3.0, 1.0), (2.0, 5.0), (4.0, 4.0)]
            .iter()
            .map(|&(a, b)| obs(&[a, b], 2.0 * a + 0.5 * b))
            .collect();
        let t = least_relative_error(&data, &[0.0, 0.0]);
        assert!(
            (t[0] - 2.0).abs() < 1e-6 && (t[1] - 0.5).abs() < 1e-6,
            "{t:?}"
        );
        // a bound above the best value holds the coefficient there
        assert_eq!(least_relative_error(&data, &[2.5, 0.0])[0], 2.5);
        assert!(mean_abs_relative_error(&t, &data) < 1e-6);
    }

    #[test]
    fn coefficients_stay_non_negative_and_outliers_pull_little() {
        // y = 3 a with one wild point; a second basis would want to go negative
        let mut data: Vec<Observation> = (1..8)
            .map(|i| obs(&[i as f64, 10.0 - i as f64], 3.0 * i as f64))
            .collect();
        data.push(obs(&[4.0, 6.0], 60.0));
        let t = least_relative_error(&data, &[0.0, 0.0]);
        assert!(t.iter().all(|v| *v >= 0.0), "{t:?}");
        assert!((t[0] - 3.0).abs() < 0.05, "{t:?}");
        // an offset is kept out of the coefficients
        let with_offset = vec![
            Observation {
                x: vec![1.0],
                offset: 5.0,
                y: 7.0,
            },
            Observation {
                x: vec![2.0],
                offset: 5.0,
                y: 9.0,
            },
        ];
        assert!((least_relative_error(&with_offset, &[0.0])[0] - 2.0).abs() < 1e-6);
        assert!(least_relative_error(&[], &[]).is_empty());
    }
}
