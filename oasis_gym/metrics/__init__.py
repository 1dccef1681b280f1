"""Society-level metrics: pure formulas, TensorBoard / SQLite sinks, the online recorder that
computes them every step of a running simulation, and the offline report (`report.write_report`;
as a command's output: `oasis_gym.cli.report.make_report`)."""

from . import formulas
from .online import CASCADE_CURVE_SCHEMA, CascadeForest, MetricsRecorder, read_cascade_curves
from .tensorboard import MetricsTable, TensorBoardLogger, create_schema, insert, read_metrics

__all__ = [
    "formulas",
    "MetricsRecorder",
    "CascadeForest",
    "CASCADE_CURVE_SCHEMA",
    "read_cascade_curves",
    "MetricsTable",
    "TensorBoardLogger",
    "create_schema",
    "insert",
    "read_metrics",
]
