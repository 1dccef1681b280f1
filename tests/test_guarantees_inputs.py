"""Guarantees against hostile inputs: LLM replies, endpoint replies, hung endpoints.

Issue 15: "no bad input kills a run". Every reply text a model can produce becomes an action
or a counted invalid reply; a malformed ``usage`` block keeps the reply's content; a hung
endpoint costs at most the per-step LLM deadline, the undecided users doing nothing
(counted). Hostile profile files: tests/test_guarantees_profiles.py.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llm_fixtures import HANG_S, guarded, llm_module

from oasis_gym.actions import ACTION_NAMES

pytest_plugins = ["llm_fixtures"]

parse_mod = llm_module("parse")
synth = llm_module("sample_views")
parse_reply = parse_mod.parse_reply

VIEWS = synth.synthetic_views(3, seed=7, n_posts=4, n_users=2)
HUGE = "9" * 5000


# ---- LLM replies: parse_reply never raises -------------------------------------------------------
@pytest.mark.parametrize(
    "reply",
    [
        '{"action":"like_post","post_id":' + HUGE + "}",  # crashed: ValueError (int digits)
        '{"action":"like_post","post_id":-' + HUGE + "}",
        '{"action":"create_post","text":"hi","stance":' + HUGE + "}",  # crashed: ValueError
        '{"action":"create_post","text":"hi","stance":1' + "0" * 400 + "}",  # crashed: OverflowError
        '{"action":"create_post","text":"hi","stance":-1' + "0" * 30 + "}",  # crashed: OverflowError
        '{"action":"create_post","text":"hi","stance":NaN}',
        '{"action":"create_post","text":"hi","stance":-Infinity}',
        '{"action":"create_post","text":"\\ud800","stance":0}',
        '{"action":"like_post","post_id":1e999}',
        '{"action":"like_post","post_id":' + HUGE + ".5}",
        '{"action":"like_post","reason":' + "[" * 100_000 + "]" * 100_000 + "}",
        "[" * 100_000,
        '{"' + HUGE + '":1}',
        "```json\n" + HUGE + "\n```",
        "\ud800\udfff\x00",
    ],
)
def test_hostile_replies_are_counted_invalid(reply):
    for v in VIEWS:
        res = parse_reply(reply, v)
        assert not res.ok and res.action["type"] == 0
        assert res.error and res.error != "parse_failed"  # each has a specific code


def test_non_string_reply_is_invalid():
    for reply in (b'{"action":"do_nothing"}', 17, ["x"]):
        res = parse_reply(reply, VIEWS[0])
        assert (res.ok, res.error) == (False, "not_text")


def test_valid_replies_still_parse_next_to_huge_numbers():
    v = VIEWS[0]
    pid = v["posts"][1]["post_id"]
    res = parse_reply(json.dumps({"action": "like_post", "post_id": pid, "reason": "x" * 10}), v)
    assert res.ok and res.action["post"] == v["posts"][1]["slot"]
    # an unused field holding a huge number is ignored, as any unused known field is
    res = parse_reply('{"action":"like_post","post_id":%d,"stance":%s}' % (pid, HUGE), v)  # noqa: UP031
    assert res.ok and res.action["post"] == v["posts"][1]["slot"]
    res = parse_reply('{"action":"create_post","text":"ok","stance":1}', v)
    assert res.ok and res.action["stance"] == 1.0


def _ids(v: dict) -> list[int]:
    return (
        [p["post_id"] for p in v["posts"]]
        + [c["comment_id"] for p in v["posts"] for c in p["top_comments"]]
        + [u["user_id"] for u in v["users"]]
    )


_any_char = st.characters(codec=None, categories=None)  # every code point, lone surrogates included
_str = st.text(_any_char, max_size=30)
_num_text = st.one_of(
    st.tuples(st.sampled_from(["", "-"]), st.integers(1, 9), st.integers(0, 6000)).map(
        lambda t: f"{t[0]}{t[1]}" + "0" * t[2]
    ),  # up to 6,000 digits
    st.from_regex(r"-?[0-9]{1,30}\.[0-9]{1,5}([eE][-+]?[0-9]{1,5})?", fullmatch=True),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "-0", "0.0", "1", "-1", "true", "false", "null"]),
    st.integers(-2, 1000).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(lambda f: json.dumps(f)),
)
_str_text = st.one_of(
    _str.map(lambda s: json.dumps(s, ensure_ascii=True)),  # escapes, \udXXX surrogates included
    _str.map(lambda s: json.dumps(s, ensure_ascii=False)),  # raw surrogates / control chars
    st.sampled_from(['"\\ud800"', '"\\udfff\\ud800"', '"\\u0000"', '""', '"   "', '"\\x"']),
)
_keys = st.one_of(st.sampled_from(["action", "post_id", "comment_id", "user_id", "text", "stance", "reason"]), _str)
_action = st.sampled_from(list(ACTION_NAMES) + ["", "LIKE_POST", "like post"]).map(json.dumps)


def _json_text():
    leaf = st.one_of(_num_text, _str_text, _action)
    return st.recursive(
        leaf,
        lambda kids: st.one_of(
            st.lists(kids, max_size=4).map(lambda xs: "[" + ",".join(xs) + "]"),
            st.lists(st.tuples(_keys.map(json.dumps), kids), max_size=5).map(
                lambda kv: "{" + ",".join(f"{k}:{v}" for k, v in kv) + "}"
            ),
        ),
        max_leaves=12,
    )


@st.composite
def _action_reply(draw):
    """Mostly schema-shaped objects (so deep paths run) with hostile values."""
    v = draw(st.sampled_from(VIEWS))
    fields = {"action": draw(_action)}
    for k in ("post_id", "comment_id", "user_id", "text", "stance", "reason"):
        if draw(st.booleans()):
            fields[k] = draw(st.one_of(st.sampled_from(_ids(v)).map(str), _num_text, _str_text, _json_text()))
    if draw(st.booleans()):
        fields[draw(_str)] = draw(_json_text())
    text = "{" + ",".join(f"{json.dumps(k)}:{val}" for k, val in fields.items()) + "}"
    cut = draw(st.one_of(st.none(), st.integers(0, len(text))))
    if cut is not None:
        text = text[:cut]
    if draw(st.booleans()):
        text = "```json\n" + text + "\n```"
    return v, text


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(_action_reply(), st.booleans())
def test_fuzz_schema_shaped_replies_never_raise(vr, finished):
    v, text = vr
    res = parse_reply(text, v, finished=finished)
    assert res.error != "parse_failed"
    assert res.ok or (res.action["type"] == 0 and res.error)
    if res.ok:  # an accepted action only points at what the agent saw
        assert res.action["stance"] is None or -1.0 <= res.action["stance"] <= 1.0
        res.action["text"].encode("utf-8")


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.one_of(
        _json_text(),
        st.text(_any_char, max_size=200),
        st.binary(max_size=100).map(lambda b: b.decode("utf-8", "surrogateescape")),
    ),
    st.booleans(),
)
def test_fuzz_arbitrary_text_never_raises(text, finished):
    for v in VIEWS[:2]:
        res = parse_reply(text, v, finished=finished)
        assert res.error != "parse_failed"
        assert res.ok or (res.action["type"] == 0 and res.error)


# ---- endpoint replies and hung endpoints (a real HTTP server on 127.0.0.1) -----------------------
VALID = '{"action":"do_nothing","reason":"ok"}'
BAD_USAGE = {
    "list": [1, 2],
    "string": "many",
    "str_counts": {"prompt_tokens": "eleven", "completion_tokens": "7"},
    "huge": '{"prompt_tokens": ' + HUGE + ', "completion_tokens": -' + HUGE + "}",
    "nan": '{"prompt_tokens": NaN, "completion_tokens": Infinity}',
    "float_inf": {"prompt_tokens": 1e999, "completion_tokens": 1.5},
    "negative": {"prompt_tokens": -3, "completion_tokens": True},
    "nested": {"prompt_tokens": {"a": [1]}, "completion_tokens": [7]},
}


class _Server:
    """Answers per URL prefix: ``ok``; ``usage-<kind>`` (valid content, malformed usage);
    ``hang`` (holds every request until closed, at most 30 s); ``half`` (answers even seeds
    at once, holds odd ones)."""

    def __init__(self) -> None:
        import threading
        from collections import Counter
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.hits: Counter = Counter()
        self.stop = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                mode = self.path.strip("/").split("/")[0]
                outer.hits[mode] += 1
                hang = mode == "hang" or (mode == "half" and body.get("seed", 0) % 2)
                if hang and (outer.stop.wait(30.0) or True):
                    return
                usage = BAD_USAGE.get(mode.removeprefix("usage-"), {"prompt_tokens": 11, "completion_tokens": 7})
                usage_text = usage if isinstance(usage, str) and usage.startswith("{") else json.dumps(usage)
                msg = json.dumps({"role": "assistant", "content": VALID})
                payload = (
                    '{"id":"x","choices":[{"index":0,"finish_reason":"stop","message":%s}],"usage":%s}'  # noqa: UP031
                    % (msg, usage_text)
                ).encode()
                try:
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, mode: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/{mode}/v1"

    def close(self) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture()
def server():
    s = _Server()
    yield s
    s.close()


def _openai(urls, **kw):
    return llm_module("backends.openai_backend").OpenAIBackend(urls, model="tiny", **kw)


@pytest.mark.parametrize("kind", sorted(BAD_USAGE))
def test_malformed_usage_keeps_the_valid_content(server, kind):
    """Before: a list / string / huge-number usage block turned a valid reply into a fallback."""
    core = llm_module().LLMPolicyCore(_openai(server.url(f"usage-{kind}"), max_retries=0))
    actions, stats = core.decide(synth.synthetic_views(3, seed=1, n_posts=3, n_users=2))
    assert stats["valid"] == 3 and stats["fallback"] == 0 and stats["invalid"] == 0
    assert all(a["reason"] == "ok" for a in actions)
    assert stats["prompt_tokens"] == stats["completion_tokens"] == 0  # bad counts read as 0 ...
    assert server.hits[f"usage-{kind}"] == 3  # ... and nothing was retried


def test_usage_counts_still_read_when_well_formed(server):
    core = llm_module().LLMPolicyCore(_openai(server.url("ok")))
    _, stats = core.decide(synth.synthetic_views(2, seed=1, n_posts=3, n_users=2))
    assert (stats["valid"], stats["prompt_tokens"], stats["completion_tokens"]) == (2, 22, 14)


def test_step_deadline_bounds_a_hung_endpoint(server):
    """Backend limits allow ~2 min per request; the 0.5 s step deadline cuts the call, and the
    undecided users do nothing, counted."""
    be = _openai(server.url("hang"), request_timeout=30.0, max_retries=3)
    assert be.call_timeout > 100
    core = llm_module().LLMPolicyCore(be, step_deadline_s=0.5)
    actions, stats = guarded(lambda: core.decide(synth.synthetic_views(4, seed=1, n_posts=3, n_users=2)))
    assert stats["deadline_noop"] == 4 and stats["fallback"] == 4 and stats["valid"] == 0
    assert all(a["type"] == 0 and "deadline" in a["reason"] for a in actions)
    assert core.totals["deadline_noop"] == 4


def test_step_deadline_keeps_the_replies_that_arrived(server):
    """The replies answered at once are kept, the held ones are no-ops at the deadline: 10 s, so
    that an answer sent at once is in before it even on a loaded machine (it took 1 s, and a
    machine slow to answer within that second failed the test)."""
    core = llm_module().LLMPolicyCore(_openai(server.url("half"), request_timeout=30.0), step_deadline_s=10.0, seed=5)
    actions, stats = guarded(lambda: core.decide(synth.synthetic_views(6, seed=1, n_posts=3, n_users=2)))
    assert server.hits["half"] == 6 and (stats["valid"], stats["deadline_noop"]) == (3, 3)  # the even seeds in time


def test_step_deadline_with_the_transformers_backend(tiny_model_dir):
    """Past the deadline no further batch starts: with a deadline already spent at the first
    batch every user is a counted no-op, and the model is never run."""
    tb = llm_module("backends.transformers_backend")
    be = tb.TransformersBackend(tiny_model_dir, device="cpu", max_batch_size=2, compile_threads=1)
    views = synth.synthetic_views(5, seed=1, n_posts=3, n_users=2)
    core = llm_module().LLMPolicyCore(be, step_deadline_s=1e-9, max_tokens=8)
    actions, stats = core.decide(views)
    assert stats["deadline_noop"] == 5 and stats["fallback"] == 5 and stats["completion_tokens"] == 0
    assert all(a["type"] == 0 and "deadline" in a["reason"] for a in actions)
    res = be.generate(core.messages(views), [None] * 5, max_tokens=4, deadline_s=HANG_S)  # (time enough: it runs)
    assert res.errors == [None] * 5 and len(res.texts) == 5


def test_step_deadline_is_validated():
    core_cls = llm_module().LLMPolicyCore
    for bad in (0, -1.0, float("nan"), float("inf"), "5"):
        with pytest.raises(ValueError, match="step_deadline_s"):
            core_cls(_openai("http://127.0.0.1:9/v1"), step_deadline_s=bad)

    class NoDeadline:
        name = "slow"

        def generate(self, *a, **k):
            raise AssertionError

    with pytest.raises(ValueError, match="cannot stop at a deadline"):
        core_cls(NoDeadline(), step_deadline_s=1.0)


def test_cli_llm_deadline_counts_noops_in_tensorboard(server, tmp_path, capsys):
    """The CLI with a hung endpoint: each step costs the deadline, not 244 s; the undecided
    users are do_nothing in the journal, llm/deadline_noop in TensorBoard and the summary."""
    import sqlite3

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from oasis_gym.cli import main

    db, logdir = tmp_path / "hung.db", tmp_path / "tb"
    argv = [
        "run",
        "--users",
        "12",
        "--steps",
        "2",
        "--policy",
        "llm",
        "--llm-backend",
        "openai",
        "--llm-endpoint",
        server.url("hang"),
        "--llm-timeout",
        "20",
        "--llm-retries",
        "2",
        "--llm-step-deadline",
        "0.5",
        "--activation",
        "0.5",
        "--db",
        str(db),
        "--logdir",
        str(logdir),
        "--quiet",
        "--seed-posts",
        "5",
        "--json",
    ]
    assert guarded(lambda: main(argv)) == 0
    ea = EventAccumulator(str(logdir / "episode_0"), size_guidance={"scalars": 0})
    ea.Reload()
    noop = sum(e.value for e in ea.Scalars("llm/deadline_noop"))
    agents = sum(e.value for e in ea.Scalars("llm/agents"))
    assert noop == agents > 0 and server.hits["hang"] >= 1
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["llm"]["deadline_noop"] == summary["llm"]["agents"] == agents
    assert summary["llm"]["valid"] == 0
    with sqlite3.connect(db) as conn:
        acted = conn.execute(
            "SELECT COUNT(*) FROM trace WHERE action NOT IN ('do_nothing', 'sign_up', 'refresh')"
        ).fetchone()[0]
    assert acted == 0


@pytest.mark.parametrize(
    "argv,msg",
    [
        (["--llm-timeout", "0"], "--llm-timeout"),
        (["--llm-timeout", "abc"], "--llm-timeout"),
        (["--llm-timeout", "nan"], "--llm-timeout"),
        (["--llm-retries", "-1"], "--llm-retries"),
        (["--llm-retries", "1.5"], "--llm-retries"),
        (["--llm-step-deadline", "-2"], "--llm-step-deadline"),
        (["--llm-step-deadline", "inf"], "--llm-step-deadline"),
        (["--llm-frequency-penalty", "nan"], "--llm-frequency-penalty"),
        (["--llm-frequency-penalty", "2.5"], "--llm-frequency-penalty"),
        (["--llm-frequency-penalty", "abc"], "--llm-frequency-penalty"),
    ],
)
def test_cli_llm_fault_flags_are_validated(argv, msg, capsys):
    from oasis_gym.cli import main

    with pytest.raises(SystemExit) as e:
        main(["run", *argv])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert msg in err and "Traceback" not in err


def test_cli_endpoint_flags_need_the_openai_backend(tmp_path, capsys):
    from oasis_gym.cli import main

    with pytest.raises(SystemExit) as e:  # one line, exit code 2, before any journal is written
        main(
            [
                "run",
                "--users",
                "5",
                "--steps",
                "1",
                "--policy",
                "llm",
                "--llm-backend",
                "transformers",
                "--llm-timeout",
                "3",
                "--db",
                str(tmp_path / "x.db"),
                "--no-tensorboard",
                "--quiet",
            ]
        )
    err = capsys.readouterr().err
    assert e.value.code == 2 and "openai backend" in err and err.count("\n") == 1
    assert not (tmp_path / "x.db").exists()


def test_cli_resume_may_change_the_llm_fault_limits(server, tmp_path):
    """A run resumed against a hung endpoint can lower the limits it was started with."""
    from oasis_gym.cli import main
    from oasis_gym.platform.journal import read_meta

    db = tmp_path / "r.db"
    assert (
        guarded(
            lambda: main(
                [
                    "run",
                    "--users",
                    "8",
                    "--steps",
                    "1",
                    "--policy",
                    "llm",
                    "--llm-backend",
                    "openai",
                    "--llm-endpoint",
                    server.url("hang"),
                    "--llm-step-deadline",
                    "0.5",
                    "--llm-retries",
                    "0",
                    "--llm-frequency-penalty",
                    "1.5",
                    "--db",
                    str(db),
                    "--no-tensorboard",
                    "--quiet",
                    "--seed-posts",
                    "3",
                ]
            )
        )
        == 0
    )
    assert read_meta(str(db))["state"]["cli"]["llm_step_deadline"] == 0.5
    assert read_meta(str(db))["state"]["cli"]["llm_frequency_penalty"] == 1.5
    assert (
        guarded(lambda: main(["run", "--resume", str(db), "--steps", "2", "--llm-step-deadline", "0.25", "--quiet"]))
        == 0
    )
    cli = read_meta(str(db))["state"]["cli"]
    assert (cli["llm_step_deadline"], cli["llm_retries"], cli["steps"]) == (0.25, 0, 2)
    assert cli["llm_frequency_penalty"] == 1.5  # kept on resume


@pytest.mark.parametrize(
    "argv,penalty", [([], 0.5), (["--llm-frequency-penalty", "1.5"], 1.5), (["--llm-frequency-penalty", "0"], None)]
)
def test_cli_frequency_penalty_reaches_the_llm_users(server, argv, penalty):
    from oasis_gym.cli import make_llm_policy
    from oasis_gym.cli.parser import build_parser

    args = build_parser().parse_args(
        ["run", "--policy", "llm", "--llm-backend", "openai", "--llm-endpoint", server.url("ok"), *argv]
    )
    sampling = make_llm_policy(args).core._sampling
    assert sampling.get("frequency_penalty") == penalty


@pytest.mark.parametrize("activation", [2.0, -0.1, float("nan"), float("inf"), "sometimes", True, None])
def test_an_env_refuses_an_activation_that_is_no_probability(activation):
    """`--activation` is checked by the command line, but the envs took any value: 2.0 or NaN
    ran silently (every user, or none, active). Now a ConfigError (a ValueError) at construction."""
    from oasis_gym.envs import reddit_v0, twitter_v0
    from oasis_gym.errors import ConfigError

    for module in (twitter_v0, reddit_v0):
        with pytest.raises(ConfigError, match="activation must be 'activity' or a probability in"):
            module.parallel_env(users=30, activation=activation, db_path=None)
    for ok in ("activity", 0, 0.5, 1.0):
        twitter_v0.parallel_env(users=30, activation=ok, db_path=None).close()


@pytest.mark.parametrize("db_path", [[], (), {}, 3, b"run.db"])
def test_a_journal_path_that_is_no_path_is_refused_and_writes_nothing(db_path, tmp_path, monkeypatch):
    """`db_path=[]` was stringified into a journal file named "[]" in the working folder."""
    from oasis_gym.envs import twitter_v0
    from oasis_gym.platform.journal import Journal

    monkeypatch.chdir(tmp_path)
    with pytest.raises(TypeError, match="db_path must be a path"):
        twitter_v0.parallel_env(users=30, db_path=db_path)
    with pytest.raises(TypeError, match="the journal's path must be a str or os.PathLike"):
        Journal(db_path)
    assert list(tmp_path.iterdir()) == []
