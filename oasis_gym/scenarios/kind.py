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
        raise NotImplementedError

    def setup(self, sim) -> None:
        self.series, self.steps = {}, []

    def recorder_options(self) -> dict:
        return {}

    def step_values(self, sim, out) -> dict[str, float]:
        return {}

    def record(self, step: int, values: Mapping[str, float]) -> None:
        self.steps.append(int(step))
        for k, v in values.items():
            self.series.setdefault(k, []).append(float(v))

    def after_step(self, env, out, policy) -> None:
        """Outside the step transaction (e.g. LLM interviews)."""

    def figures(self, sim) -> dict:
        return {}

    def final_values(self, figures: Mapping[str, Any]) -> dict[str, float]:
        return {}
