"""In-process Hugging Face transformers backend with xgrammar-constrained decoding.

One ``generate`` call renders every conversation with the tokenizer's chat template,
pads them into one batch and runs ``model.generate`` once per ``max_batch_size`` chunk.
Prefix caching: the token-level common prefix of the batch (the shared system message) is
run once and its KV cache repeated over the rows; rows are laid out as
``[prefix][pads][suffix]`` (left padding of the suffix), see ``_encode``.
Each row gets its own compiled grammar (its own schema): the logits processor below keeps
one ``xgrammar.GrammarMatcher`` per row and uses xgrammar's ``BatchGrammarMatcher`` to
accept the sampled tokens and fill the token bitmask of all live rows in one native call
(xgrammar's own ``contrib.hf.LogitsProcessor`` also takes a list of grammars but loops in
Python, asserts on a rejected token and cannot mix constrained and free rows).

Grammars are built with ``any_whitespace=False`` and compact separators, with the string
rules tightened by :func:`..schema.xgrammar_ebnf` (no control characters, non-blank text),
compiled once per distinct schema on a small thread pool (xgrammar releases the GIL while
compiling). Works on CPU and CUDA.
"""

from __future__ import annotations

import inspect
import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from .base import GenerationResult, Messages, check_batch


def _require():
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
        import xgrammar  # noqa: F401
    except ImportError as e:  # pragma: no cover - depends on the install
        raise ImportError(
            "the transformers backend needs torch, transformers and xgrammar: "
            "pip install 'oasis-gym[llm]' (CPU torch: pip install torch --index-url "
            "https://download.pytorch.org/whl/cpu)"
        ) from e


class _GrammarProcessor:
    """Batched per-row grammar masking for ``model.generate`` (rows with None are free)."""

    def __init__(self, compiled: list[Any | None], vocab_size: int) -> None:
        import xgrammar as xgr

        self._xgr = xgr
        self.matchers = [xgr.GrammarMatcher(g) if g is not None else None for g in compiled]
        self.rows = [i for i, m in enumerate(self.matchers) if m is not None]
        self.bitmask = xgr.allocate_token_bitmask(len(compiled), vocab_size)
        self.batch = xgr.BatchGrammarMatcher()
        self.rejected: set[int] = set()
        self._started = False

    def _live(self) -> list[int]:
        return [i for i in self.rows if i not in self.rejected and not self.matchers[i].is_terminated()]

    def __call__(self, input_ids, scores):
        if self._started:
            live = self._live()
            if live:
                toks = input_ids[live, -1].tolist()
                ok = self.batch.batch_accept_token([self.matchers[i] for i in live], toks)
                self.rejected.update(i for i, a in zip(live, ok) if not a)
        self._started = True
        live = self._live()
        if live:
            self.batch.batch_fill_next_token_bitmask([self.matchers[i] for i in live], self.bitmask, indices=live)
            if scores.device.type == "cuda":
                self._xgr.apply_token_bitmask_inplace(scores, self.bitmask.to(scores.device), indices=live)
            else:
                cpu = scores if scores.device.type == "cpu" else scores.cpu()
                self._xgr.apply_token_bitmask_inplace(cpu, self.bitmask, indices=live)
                if cpu is not scores:
                    scores.copy_(cpu)
        return scores

    def terminated(self, i: int) -> bool:
        m = self.matchers[i]
        return m is None or m.is_terminated()


class _FrequencyPenalty:
    """OpenAI's ``frequency_penalty`` as a logits processor (transformers has none built in):
    each token's logit loses ``penalty`` per occurrence in the reply so far (prompt excluded).
    transformers runs the caller's processors before its temperature warper, so, as in vLLM
    and OpenAI, the penalty comes before the temperature."""

    def __init__(self, penalty: float, prompt_width: int) -> None:
        self.penalty = penalty
        self.width = prompt_width

    def __call__(self, input_ids, scores):
        import torch

        reply = input_ids[:, self.width :]
        if reply.shape[1]:
            counts = torch.zeros_like(scores).scatter_add_(1, reply, torch.ones_like(reply, dtype=scores.dtype))
            scores = scores - self.penalty * counts
        return scores


class TransformersBackend:
    """Local model directory (or hub id already in the local cache) -> batched generation."""

    name = "transformers"
    supports_deadline = True  # checked between batches (one batch is not interrupted)

    def __init__(
        self,
        model_path: str | Path,
        *,
        device: str | None = None,
        dtype: str | None = None,
        max_batch_size: int = 64,
        compile_threads: int = 2,
        compact_json: bool = True,
        local_files_only: bool = True,
        tight_strings: bool = True,
        share_prefix: bool = True,
        min_shared_prefix: int = 32,
    ) -> None:
        _require()
        import torch
        import xgrammar as xgr
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.model_path = str(model_path)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        tdtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
        if tdtype is None:
            tdtype = torch.bfloat16 if self.device.startswith("cuda") else torch.float32
        self.tokenizer = AutoTokenizer.from_pretrained(self.model_path, local_files_only=local_files_only)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model = (
            AutoModelForCausalLM.from_pretrained(self.model_path, dtype=tdtype, local_files_only=local_files_only)
            .to(self.device)
            .eval()
        )
        self.stop_ids = self._stop_ids()
        vocab = self.model.get_output_embeddings().weight.shape[0]
        self.vocab_size = int(vocab)
        info = xgr.TokenizerInfo.from_huggingface(
            self.tokenizer, vocab_size=self.vocab_size, stop_token_ids=self.stop_ids
        )
        self.compiler = xgr.GrammarCompiler(info, max_threads=max(1, compile_threads), cache_enabled=True)
        self.max_batch_size = max(1, int(max_batch_size))
        self.compile_threads = max(1, compile_threads)
        self.separators = (",", ":") if compact_json else None
        self.tight_strings = tight_strings
        self.share_prefix = share_prefix
        # transformers >= 5.2x renamed past_key_values -> cache (old name deprecated)
        self._cache_kw = "cache" if "cache" in inspect.signature(self.model.forward).parameters else "past_key_values"
        self.min_shared_prefix = min_shared_prefix

    def _stop_ids(self) -> list[int]:
        ids: list[int] = []
        for src in (self.tokenizer.eos_token_id, getattr(self.model.generation_config, "eos_token_id", None)):
            for t in src if isinstance(src, (list, tuple)) else [src]:
                if t is not None and int(t) not in ids:
                    ids.append(int(t))
        if not ids:
            raise ValueError(f"{self.model_path}: tokenizer has no eos token to stop on")
        return ids

    # ---- helpers ------------------------------------------------------------------------
    def render(self, conversation: Messages) -> str:
        """The chat-templated prompt text of one conversation."""
        return self.tokenizer.apply_chat_template(conversation, tokenize=False, add_generation_prompt=True)

    def compile(self, schemas: list[dict | None]) -> list[Any | None]:
        """Compile each distinct schema once (tightened EBNF, compiler cache, thread pool)."""
        from ..schema import xgrammar_ebnf

        keys = [json.dumps(s, separators=(",", ":")) if s is not None else None for s in schemas]
        todo = sorted({k for k in keys if k is not None})

        def one(k: str):
            ebnf = xgrammar_ebnf(json.loads(k), compact=self.separators is not None) if self.tight_strings else None
            if ebnf is not None:
                return self.compiler.compile_grammar(ebnf)
            return self.compiler.compile_json_schema(k, any_whitespace=False, separators=self.separators)

        if len(todo) > 1 and self.compile_threads > 1:
            with ThreadPoolExecutor(self.compile_threads) as ex:
                done = dict(zip(todo, ex.map(one, todo)))
        else:
            done = {k: one(k) for k in todo}
        return [done[k] if k is not None else None for k in keys]

    def _encode(self, texts: list[str]):
        """Tokenize; with prefix sharing, lay rows out as [common prefix][pads][own suffix].

        Why this layout: the prefix then sits at the same positions 0..P-1 in every row, so
        its KV cache is computed once (batch 1) and repeated; positions of the suffix come
        from the attention mask's cumulative sum, so the pads in the middle are invisible.
        """
        import torch

        ids = [self.tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
        p = 0
        if self.share_prefix and len(ids) > 1:
            shortest = min(len(x) for x in ids)
            first = ids[0]
            while p < shortest - 1 and all(x[p] == first[p] for x in ids):
                p += 1
            if p < self.min_shared_prefix:
                p = 0
        width = max(len(x) - p for x in ids)
        pad = self.tokenizer.pad_token_id
        rows, masks = [], []
        for x in ids:
            fill = width - (len(x) - p)
            rows.append(x[:p] + [pad] * fill + x[p:])
            masks.append([1] * p + [0] * fill + [1] * (len(x) - p))
        enc = {
            "input_ids": torch.tensor(rows, device=self.device),
            "attention_mask": torch.tensor(masks, device=self.device),
        }
        return enc, p

    def _prefix_cache(self, prefix_ids, batch: int):
        """KV cache of the shared prefix, computed once and repeated over the batch."""
        from transformers import DynamicCache

        cache = DynamicCache(config=self.model.config)
        self.model(input_ids=prefix_ids, use_cache=True, logits_to_keep=1, **{self._cache_kw: cache})
        cache.batch_repeat_interleave(batch)
        return cache

    # ---- generation -----------------------------------------------------------------------
    def generate(
        self,
        conversations: list[Messages],
        schemas: list[dict | None],
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int | None = None,
        frequency_penalty: float = 0.0,
        deadline_s: float | None = None,
    ) -> GenerationResult:
        """Batches of ``max_batch_size``; past ``deadline_s`` the remaining batches are not
        started (their requests fail with error "deadline")."""
        check_batch(conversations, schemas)
        t0 = time.perf_counter()
        compiled = self.compile(schemas)
        t_compile = time.perf_counter() - t0
        res = GenerationResult([], [], [], [], [])
        for lo in range(0, len(conversations), self.max_batch_size):
            hi = lo + self.max_batch_size
            if deadline_s is not None and time.perf_counter() - t0 >= deadline_s:
                part = GenerationResult.failed(len(conversations) - lo, "deadline")
                for name in ("texts", "prompt_tokens", "completion_tokens", "finish_reasons", "errors"):
                    getattr(res, name).extend(getattr(part, name))
                break
            part = self._generate_chunk(
                conversations[lo:hi],
                compiled[lo:hi],
                max_tokens,
                temperature,
                None if seed is None else seed + lo,
                frequency_penalty,
            )
            for name in ("texts", "prompt_tokens", "completion_tokens", "finish_reasons", "errors"):
                getattr(res, name).extend(getattr(part, name))
        res.latency_s = time.perf_counter() - t0
        res.stats = {"compile_s": t_compile, "batches": -(-len(conversations) // self.max_batch_size)}
        return res

    def _generate_chunk(
        self,
        convs: list[Messages],
        compiled: list[Any | None],
        max_tokens: int,
        temperature: float,
        seed: int | None,
        frequency_penalty: float,
    ) -> GenerationResult:
        import torch
        from transformers import GenerationConfig, LogitsProcessorList

        enc, prefix = self._encode([self.render(c) for c in convs])
        proc = _GrammarProcessor(compiled, self.vocab_size)
        sample = temperature > 0
        width = enc["input_ids"].shape[1]
        processors = [proc]
        if frequency_penalty:  # before the grammar mask: a disallowed token stays -inf
            processors.insert(0, _FrequencyPenalty(frequency_penalty, width))
        gcfg = GenerationConfig(
            max_new_tokens=max_tokens,
            do_sample=sample,
            temperature=temperature if sample else None,
            top_p=1.0 if sample else None,
            top_k=0 if sample else None,
            eos_token_id=self.stop_ids,
            pad_token_id=self.tokenizer.pad_token_id,
        )
        kwargs = {}
        with torch.inference_mode():
            if prefix:
                kwargs[self._cache_kw] = self._prefix_cache(enc["input_ids"][:1, :prefix], len(convs))
            with torch.random.fork_rng(devices=[] if not self.device.startswith("cuda") else None):
                if seed is not None:
                    torch.manual_seed(int(seed) & 0x7FFFFFFF)
                out = self.model.generate(
                    **enc, generation_config=gcfg, logits_processor=LogitsProcessorList(processors), **kwargs
                )
        new = out[:, width:].tolist()
        prompt_lens = enc["attention_mask"].sum(dim=1).tolist()
        stops = set(self.stop_ids)
        res = GenerationResult([], [], [], [], [])
        for i, row in enumerate(new):
            end = next((j for j, t in enumerate(row) if t in stops), None)
            toks = row if end is None else row[:end]
            res.texts.append(self.tokenizer.decode(toks, skip_special_tokens=True))
            res.prompt_tokens.append(int(prompt_lens[i]))
            res.completion_tokens.append(len(toks) + (0 if end is None else 1))
            res.finish_reasons.append("length" if end is None else "stop")
            res.errors.append("grammar_rejected_token" if i in proc.rejected else None)
        return res
