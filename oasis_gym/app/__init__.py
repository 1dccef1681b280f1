"""The application's infrastructure, what every command shares (layer 3, beside the drivers
`train/`; the core imports none of it, `tests/test_layers.py`): what a command prints
(`console`), its signals (`interrupts`) and the run loop (`run`)."""
