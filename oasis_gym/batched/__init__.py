"""The batched engine of the v1 platform-agent tasks: K simulations stepped in lockstep with
numpy, no SQLite, counter-based randomness (`engine.py` is the entry; docs/ARCHITECTURE.md)."""
