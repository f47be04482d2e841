"""dpportal.privacy: the differential-privacy math of dpportal, auditable on its own.

Plain Python + numpy; no Django, Celery, `releases` or `budgets` import (a test
checks this in a subprocess). Modules, in dependency order:

- errors       PrivacyParameterError, the one exception for bad parameters
- params       exact conversion (Fraction) and validation of parameters
- rng          uniform 64-bit words: os.urandom (default) or a seeded test source
- exact        exact integer primitives: U(n), Bernoulli(a/b), Bernoulli(exp(-a/b))
- samplers     exact discrete Laplace and discrete Gaussian (Canonne, Kamath, Steinke 2020)
- tails        tail probabilities of the noise (for intervals and delta)
- calibration  Laplace scale, analytic/classic/discrete Gaussian sigma and delta
- sensitivity  sensitivities x L, and the public grid for sums
- accounting   exact (epsilon, delta) costs and their composition
- noise        NoiseSpec: the exact noise of one statistic from public parameters
- accuracy     interval half-widths, per cell and simultaneous
- mechanisms   release_counts / release_sum / release_mean / release_argmax
- planning     accuracy preview and its inverse (epsilon for a target half-width)
- specs        NoiseSpec for vector statistics with separately derived sensitivities
- permute_flip exact permute-and-flip selection (integer utilities, CSPRNG order)
- quantiles    quantiles over a public grid: rank counts, utilities, release, rank error
- quantile_intervals  confidence intervals for quantiles in data units (order statistics)
- grouped      grouped count/sum/mean: sensitivities (optional per-group bound), specs
- grouped_release  grouped mechanisms and their intervals, per cell and simultaneous
- spread_parts centred grid, streaming N/S/Q aggregates, the variance interval
- spread       variance and standard deviation: budget split, release, intervals
- planning_stats   previews and inverses for grouped statistics, quantiles, spread
- marginal_workload  a workload of marginal tables: closure, maximal tables, limits
- marginals    the optimal Gaussian strategy for marginals (ResidualPlanner), variances
- marginal_release  exact residual measurements, consistent reconstruction of tables

Importing this package imports nothing else; import the submodule you need.
"""
