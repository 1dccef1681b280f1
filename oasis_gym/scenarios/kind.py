"""The base class of a scenario kind (an experiment): population, initial content, metrics, figures."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..population import Population


class ScenarioKind:
    """What one kind of experiment adds to a run: population, initial content, per-step
    metrics, figures. One instance per env; `setup` re-seeds it at every reset."""

    def __init__(self, config: Mapping[str, Any]):
        self.config = config
        self.seed = int(config.get("scenario", {}).get("seed", 0))
        self.series: dict[str, list[float]] = {}
        self.steps: list[int] = []

    def population(self) -> Population:
        """The users of the run (called once, before the env is built)."""
        raise NotImplementedError

    def setup(self, sim) -> None:
        """Seed the initial content after every reset; clears the recorded series."""
        self.series, self.steps = {}, []

    def recorder_options(self) -> dict:
        """Extra MetricsRecorder options (e.g. tracked posts); none by default."""
        return {}

    def step_values(self, sim, out) -> dict[str, float]:
        """The kind's own metrics of this step (tag -> value), journaled with the generic ones."""
        return {}

    def record(self, step: int, values: Mapping[str, float]) -> None:
        """Append a step's values to ``series`` (the figures' time series)."""
        self.steps.append(int(step))
        for k, v in values.items():
            self.series.setdefault(k, []).append(float(v))

    def after_step(self, env, out, policy) -> None:
        """Outside the step transaction (e.g. LLM interviews)."""

    def figures(self, sim) -> dict:
        """The run's result figures (JSON-able), at the end of the run."""
        return {}

    def final_values(self, figures: Mapping[str, Any]) -> dict[str, float]:
        """Headline scalars of ``figures``, logged once at the end."""
        return {}
