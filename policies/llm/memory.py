"""Bounded per-agent memory of recent actions / observations.

Why bounded: the prompt must stay short (prefix-cached system part + a few hundred tokens
per agent), and a long simulation must not grow memory without limit. Each agent keeps its
last ``max_items`` entries (a deque); the whole store round-trips through JSON so a
checkpoint can resume it.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable


class AgentMemory:
    """Last ``max_items`` short text entries per agent name."""

    def __init__(self, max_items: int = 5, max_chars: int = 160) -> None:
        if max_items < 0 or max_chars < 1:
            raise ValueError("max_items must be >= 0 and max_chars >= 1")
        self.max_items = max_items
        self.max_chars = max_chars
        self._items: dict[str, deque[str]] = {}

    def add(self, agent: str, entry: str) -> None:
        """Append one entry (cut to ``max_chars``); the oldest falls out when full."""
        if self.max_items == 0:
            return
        q = self._items.get(agent)
        if q is None:
            q = self._items[agent] = deque(maxlen=self.max_items)
        q.append(str(entry)[: self.max_chars])

    def extend(self, agent: str, entries: Iterable[str]) -> None:
        """Add several entries for ``agent``, oldest first."""
        for e in entries:
            self.add(agent, e)

    def get(self, agent: str) -> list[str]:
        """Entries of one agent, oldest first (a copy)."""
        return list(self._items.get(agent, ()))

    def clear(self, agent: str | None = None) -> None:
        """Forget one agent's entries, or everyone's."""
        if agent is None:
            self._items.clear()
        else:
            self._items.pop(agent, None)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, agent: str) -> bool:
        return agent in self._items

    def to_dict(self) -> dict:
        """A JSON-able snapshot."""
        return {
            "max_items": self.max_items,
            "max_chars": self.max_chars,
            "items": {a: list(q) for a, q in self._items.items()},
        }

    @classmethod
    def from_dict(cls, d: dict) -> AgentMemory:
        """Rebuild from :meth:`to_dict`."""
        mem = cls(int(d.get("max_items", 5)), int(d.get("max_chars", 160)))
        for agent, entries in (d.get("items") or {}).items():
            mem.extend(agent, entries)
        return mem

    def to_json(self) -> str:
        """The snapshot as a JSON string."""
        return json.dumps(self.to_dict(), ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_json(cls, s: str) -> AgentMemory:
        """Rebuild from :meth:`to_json`."""
        return cls.from_dict(json.loads(s))
