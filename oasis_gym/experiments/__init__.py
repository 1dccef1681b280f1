"""Scenario experiments: effects with uncertainty over seeds, parameter sweeps, held-out
calibration and the evidence statement every scenario report carries.

* stats: mean and 95% confidence interval over seeds, share of seeds with an ordering;
* effects: per scenario kind, the effect measured beyond the seeded treatment;
* evidence: which users are LLM / ABM, which parameters were fitted on what, which set by hand;
* sweep: `oasis-gym sweep SCENARIO --param rho=0.4:1.2:5 --seeds 10` (table + PNG);
* spread_calibration: fit on minutes 0-60 of the scale curve, score minutes 60-150 of all three;
* graphs: a generated follow graph with depth for the information-spread users.
"""
