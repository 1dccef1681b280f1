"""The model: what users, posts, campaigns, moderation and rewards do, as functions over arrays.

One home per mechanism, called by both paths: the fast training path (`oasis_gym.batched`,
K simulations in lockstep) and the platform path (`Platform` + journal + the envs). It sits
below both and imports numpy only (`tests/test_layers.py`); every random input is either drawn
by the caller and passed in or comes from the counter-based `rng`, so a mechanism gives the
same numbers on either path. docs/ARCHITECTURE.md lists which mechanism lives in which module
and which still live twice (issue 51).
"""
