# Reference numbers for the core::stats and core::method tests (numpy/scipy).
# Run: python3 crates/core/src/stats/reference.py  (needs numpy, scipy). Output kept at the end.
import itertools, numpy as np, scipy
from scipy import stats
print("numpy", np.__version__, "scipy", scipy.__version__)

def mw(x, y):
    r = stats.mannwhitneyu(x, y, alternative='two-sided', method='asymptotic', use_continuity=True)
    # z by the same formula scipy uses internally (signed by U1 - mu)
    n1, n2 = len(x), len(y); n = n1 + n2
    ranks = stats.rankdata(np.concatenate([x, y]))
    u1 = ranks[:n1].sum() - n1*(n1+1)/2
    _, t = np.unique(np.concatenate([x, y]), return_counts=True)
    s = np.sqrt(n1*n2/12*((n+1) - (t**3 - t).sum()/(n*(n-1))))
    d = u1 - n1*n2/2
    z = np.sign(d)*max(abs(d)-0.5, 0)/s
    print(f"U1={r.statistic!r} p={r.pvalue!r} z={z!r} U1check={u1!r} s={s!r}")

print("-- mann-whitney")
mw([1,2,3,4,5], [6,7,8,9,10])
mw([1,2,2,3,4,5,5], [2,3,3,6,7,8])
before = [812, 790, 845, 901, 770, 833, 860, 795, 880, 815]
after = [760, 742, 801, 755, 790, 770, 748, 781, 765, 799]
mw(before, after)
mw([3.0, 1.0, 2.0], [2.0, 5.0, 4.0, 2.0])

print("-- quantiles (numpy linear)")
data = [120.0, 95.5, 310.2, 150.0, 101.0, 99.9, 870.0, 130.5, 145.0, 160.0, 98.0]
for p in [0.0, 0.5, 0.9, 0.95, 0.99, 1.0]:
    print(p, repr(float(np.quantile(data, p))))
print("mean", repr(float(np.mean(data))))
print("single", np.quantile([7.0], 0.95), "pair p95", repr(float(np.quantile([1.0, 2.0], 0.95))))

print("-- exact bootstrap distribution (all n^n resamples, each side)")
a = [10.0, 20.0, 40.0]; b = [15.0, 35.0, 60.0]
ma = [np.mean(s) for s in itertools.product(a, repeat=3)]
mb = [np.mean(s) for s in itertools.product(b, repeat=3)]
diffs = np.sort(np.array([y - x for x in ma for y in mb]))
vals, counts = np.unique(np.round(diffs, 9), return_counts=True)
cum = np.cumsum(counts) / counts.sum()
for q in (0.025, 0.975):
    i = np.searchsorted(cum, q)
    print(f"q={q}: atom {vals[i]!r}, cdf before atom {cum[i-1] if i else 0:.4f}, after {cum[i]:.4f}")

print("-- large-B numpy bootstrap, p95 diff (percentile method)")
rng = np.random.default_rng(7)
x = rng.lognormal(np.log(800), 0.35, 400).round(1)
y = rng.lognormal(np.log(700), 0.35, 400).round(1)
B = 20000
r = np.random.default_rng(1)
dq = np.quantile(y[r.integers(0, len(y), (B, len(y)))], 0.95, axis=1) - np.quantile(x[r.integers(0, len(x), (B, len(x)))], 0.95, axis=1)
print("observed p95 diff", repr(float(np.quantile(y, .95) - np.quantile(x, .95))))
print("CI p95", np.percentile(dq, [2.5, 97.5]))
dm = y[r.integers(0, len(y), (B, len(y)))].mean(1) - x[r.integers(0, len(x), (B, len(x)))].mean(1)
print("observed mean diff", repr(float(y.mean() - x.mean())))
print("CI mean", np.percentile(dm, [2.5, 97.5]))
res = stats.bootstrap((x, y), lambda a, b, axis: np.mean(b, axis=axis) - np.mean(a, axis=axis), n_resamples=B, method='percentile', random_state=3, vectorized=True)
print("scipy.stats.bootstrap CI mean", res.confidence_interval)
print("MW on x,y"); mw(x, y)

print("-- deterministic lognormal-shaped samples for bootstrap tests")
from scipy.stats import norm
def shaped(scale, n):
    return scale*np.exp(0.35*norm.ppf((np.arange(n)+0.5)/n))
x = shaped(800.0, 300); y = shaped(700.0, 250)
B = 200000
r = np.random.default_rng(11)
def boot(stat):
    out = np.empty(B)
    for k in range(0, B, 10000):
        xb = x[r.integers(0, len(x), (10000, len(x)))]
        yb = y[r.integers(0, len(y), (10000, len(y)))]
        out[k:k+10000] = stat(yb) - stat(xb)
    return out
dm = boot(lambda s: s.mean(1))
print("mean diff", repr(float(y.mean()-x.mean())), "CI", np.percentile(dm, [2.5, 97.5]), "sd", dm.std())
dq = boot(lambda s: np.quantile(s, 0.95, axis=1))
print("p95 diff", repr(float(np.quantile(y,.95)-np.quantile(x,.95))), "CI", np.percentile(dq, [2.5, 97.5]), "sd", dq.std())
print("MW shaped"); mw(x, y)

# Output (numpy 2.4.6, scipy 1.17.1):
# numpy 2.4.6 scipy 1.17.1
# -- mann-whitney
# U1=np.float64(0.0) p=np.float64(0.012185780355344813) z=np.float64(-2.5067182457620487) U1check=np.float64(0.0) s=np.float64(4.7871355387816905)
# U1=np.float64(12.0) p=np.float64(0.21885377557711416) z=np.float64(-1.2295817286232684) U1check=np.float64(12.0) s=np.float64(6.91291989961272)
# U1=np.float64(91.0) p=np.float64(0.0021853274789521097) z=np.float64(3.0638167196433708) U1check=np.float64(91.0) s=np.float64(13.218806379747877)
# U1=np.float64(3.0) p=np.float64(0.3590120537864294) z=np.float64(-0.9172492321316785) U1check=np.float64(3.0) s=np.float64(2.7255405754769875)
# -- quantiles (numpy linear)
# 0.0 95.5
# 0.5 130.5
# 0.9 310.2
# 0.95 590.1
# 0.99 814.0200000000002
# 1.0 870.0
# mean 207.2818181818182
# single 7.0 pair p95 1.95
# -- exact bootstrap distribution (all n^n resamples, each side)
# q=0.025: atom np.float64(-11.666666667), cdf before atom 0.0137, after 0.0343
# q=0.975: atom np.float64(38.333333333), cdf before atom 0.9684, after 0.9808
# -- large-B numpy bootstrap, p95 diff (percentile method)
# observed p95 diff -127.63500000000022
# CI p95 [-223.76525   21.07   ]
# observed mean diff -97.50025000000016
# CI mean [-133.54026875  -61.9133875 ]
# scipy.stats.bootstrap CI mean ConfidenceInterval(low=np.float64(-133.19628750000007), high=np.float64(-62.26591250000006))
# MW on x,y
# U1=np.float64(98538.5) p=np.float64(1.4069808470311126e-08) z=np.float64(5.6725370420805445) U1check=np.float64(98538.5) s=np.float64(3268.0262574716876)
# -- deterministic lognormal-shaped samples for bootstrap tests
# mean diff -106.32730984538227 CI [-153.98479905  -58.53629036] sd 24.361830775288677
# p95 diff -178.04724422651316 CI [-340.38742706  -16.957976  ] sd 82.72976820867963
# MW shaped
# U1=np.float64(45482.0) p=np.float64(1.70034628530623e-05) z=np.float64(4.300992744052472) U1check=np.float64(45482.0) s=np.float64(1855.7343559895635)
