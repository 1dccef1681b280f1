"""LLM-driven social media users: prompts, per-agent action schemas, strict parsing, memory
and batched backends (in-process vLLM, OpenAI-compatible endpoints, transformers).

Input per agent is a *feed view* dict produced by the env (agent, user_id, user_name, name,
persona, step, time, allowed_actions, posts[slot, post_id, author_id, author_name, text,
quoted_text, likes, dislikes, reposts, comments, label, top_comments[slot, comment_id,
author_name, text, likes]], users[slot, user_id, user_name, bio], memory); output per agent
is an env action dict ``{"type", "post", "comment", "user", "text", "stance", "reason"}``
whose targets are slots into that view. :class:`LLMPolicyCore` does the whole round trip
for a batch of agents; nothing here imports the env.
"""

from .backends.base import GenerationResult, LLMBackend
from .core import LLMPolicyCore, describe
from .defaults import default_backend, ensure_smollm2, make_backend, smollm2_gguf
from .memory import AgentMemory
from .parse import ParseResult, ParseStats, empty_action, parse_reply
from .prompt import PromptBuilder
from .schema import SchemaConfig, build_schema, feasible_actions, visible_ids, xgrammar_ebnf

__all__ = [
    "AgentMemory",
    "GenerationResult",
    "LLMBackend",
    "LLMPolicyCore",
    "ParseResult",
    "ParseStats",
    "PromptBuilder",
    "SchemaConfig",
    "build_schema",
    "default_backend",
    "make_backend",
    "describe",
    "empty_action",
    "ensure_smollm2",
    "feasible_actions",
    "parse_reply",
    "smollm2_gguf",
    "visible_ids",
    "xgrammar_ebnf",
]
