"""Data shipped with the package: OASIS profile files, the Reddit counterfactual posts, the
Twitter15/16 topic index and one real propagation curve (Apache-2.0, see LICENSE here)."""
