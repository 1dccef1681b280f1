"""Guarantees of the command line against bad input: one line on stderr and exit code 2,
before any compute, nothing written; and a run stopped by a signal says where it stopped and
how to continue it.

Every case runs the real command (``python -m oasis_gym.cli ...``) in a subprocess with small
settings. The values were found by a red-team pass: each gave a traceback (an OASIS database
with text in an id column or text that is no UTF-8, an absurd --minutes-per-step, a 300-byte
file name, a damaged journal, a negative --seed-start, ``--set users=abc``, ``train --n-envs
0`` after two minutes), a hang (a sweep grid of 10**8 points) or a silently wrong run (NaN and
infinite parameter values, ``train --timesteps 0``, ``--resume --steps 5`` of a journal at
step 40). Journal and input guarantees of the library: tests/test_guarantees_journal.py,
tests/test_guarantees_inputs.py.
"""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from oasis_fixture import build_oasis_db
from test_guarantees_interrupts import stopped
from test_guarantees_journal import QUIET, RUN, _cli_journal, _edit_meta, snapshot, tables

from oasis_gym.checks import BYTES_PER_USER, MAX_SEED, population_size
from oasis_gym.errors import ConfigError
from oasis_gym.platform import JournalError, Platform, load_db, load_platform
from oasis_gym.platform.journal import read_meta

LONG = "n" * 300  # a file name of 300 bytes: the OS takes at most 255 (ENAMETOOLONG)
NOWHERE = "/proc/oasis-gym-nowhere"  # a folder no one can create (ENOENT), even as root
SWEEP = ["sweep", "group_polarization", "--seeds", "1", "--steps", "1"]
HERD = ["run", "--scenario", "reddit_herd_effect", "--steps", "1", *QUIET]
MORE = ["--steps", "4"]  # a resume of the 2-step journal that has steps to do
LLM_RUN = ["run", "--db", "{}", "--users", "30", "--policy", "hybrid", "--core-users", "1", "--steps", "1"]
TRAIN = ["train", "recommender-v0", "--users", "30", "--max-cycles", "2", "--n-steps", "4", "--n-envs", "1"]


# "Before any compute", checked by what ran, not by how long it took: a refused command runs
# with the first steps of every command's work replaced by a tripwire that ends it (exit code
# 99, a line naming the step): stepping a simulation or a v1 task, starting an LLM backend.
COMPUTE = (
    ("oasis_gym.sim.simulation", "Simulation.step"),
    ("oasis_gym.batched.tasks", "RecommenderTask.step"),
    ("oasis_gym.batched.tasks", "ModeratorTask.step"),
    ("oasis_gym.policies.llm.backends.vllm_backend", "VLLMBackend.__init__"),
    ("oasis_gym.policies.llm.backends.transformers_backend", "TransformersBackend.__init__"),
    ("oasis_gym.policies.llm.backends.openai_backend", "OpenAIBackend.__init__"),
)
TRIPPED = 99
_TRIPWIRE = """\
import importlib, os, sys
def tripwire(where):
    def tripped(*args, **kwargs):
        sys.stderr.write("compute began: " + where + "\\n")
        sys.stderr.flush()
        os._exit({code})
    return tripped
for module, attr in {compute!r}:
    owner = importlib.import_module(module)
    *path, name = attr.split(".")
    for part in path:
        owner = getattr(owner, part)
    setattr(owner, name, tripwire(module + "." + attr))
from oasis_gym.cli import main
sys.exit(main(sys.argv[1:]))
"""


def oasis_cli(*argv, cwd: Path, timeout: float = 600.0, tripwire: bool = False) -> subprocess.CompletedProcess:
    """The real `oasis-gym` command in a subprocess (`tripwire`: its work replaced by one, see
    COMPUTE); the timeout only catches a hang."""
    start = [sys.executable, "-c", _TRIPWIRE.format(code=TRIPPED, compute=COMPUTE)] if tripwire else None
    cmd = [*(start or [sys.executable, "-m", "oasis_gym.cli"]), *argv]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def _oasis(sql: str):
    """An OASIS database (tests/oasis_fixture.py) damaged by `sql`."""
    return _edit_meta(sql, build=lambda tmp_path: build_oasis_db(tmp_path / "oasis.db"))


_good_oasis = _oasis("SELECT 1")

# case -> (a function of tmp_path making the file the case is about, or None; the arguments,
# "{}" standing for that file; a word the one line must hold)
BAD = {
    # import: an OASIS database's rows, the clock, the seed (named as import's, not run's)
    "import_text_in_an_id_column": (_oasis("UPDATE post SET user_id = 'abc' WHERE post_id = 2"), [], "post.user_id"),
    "import_text_not_utf8": (
        _oasis("UPDATE post SET content = CAST(X'FFFE41' AS TEXT) WHERE post_id = 2"),
        [],
        "UTF-8",
    ),
    "import_lone_surrogate": (
        _oasis("UPDATE post SET content = CAST(X'EDA080' AS TEXT) WHERE post_id = 2"),
        [],
        "UTF-8",
    ),
    "import_minutes_per_step_huge": (_good_oasis, ["--minutes-per-step", str(10**12)], "--minutes-per-step"),
    "import_minutes_per_step_zero": (_good_oasis, ["--minutes-per-step", "0"], "--minutes-per-step"),
    "import_minutes_per_step_negative": (_good_oasis, ["--minutes-per-step", "-1"], "--minutes-per-step"),
    "import_minutes_per_step_nan": (_good_oasis, ["--minutes-per-step", "nan"], "--minutes-per-step"),
    "import_clock_past_9999": (_oasis("UPDATE post SET created_at = '999999999999' WHERE post_id = 3"), [], "9999"),
    "import_seed_negative": (_good_oasis, ["--seed", "-1"], "--seed"),
    "import_out_name_too_long": (_good_oasis, ["--out", LONG + ".db"], "255"),
    # file names the OS refuses (ENAMETOOLONG): one line naming the limit, nothing "exists"
    "run_db_name_too_long": (None, [*RUN, "--steps", "1", "--db", LONG + ".db"], "255"),
    "run_logdir_name_too_long": (None, ["run", "--users", "30", "--policy", "abm", "--logdir", LONG], "255"),
    "resume_name_too_long": (None, ["run", "--resume", LONG + ".db"], "255"),
    "report_db_name_too_long": (None, ["report", LONG + ".db"], "255"),
    "report_out_name_too_long": (_cli_journal, ["report", "{}", "--out", LONG], "255"),
    "sweep_out_name_too_long": (None, [*SWEEP, "--param", "rho=0.5", "--out", LONG], "255"),
    "train_out_name_too_long": (None, [*TRAIN, "--out", LONG], "255"),
    # output folders that cannot be created: one line before any compute (a FileNotFoundError
    # traceback before, for --logdir after the journal was made, which then failed every resume)
    "run_logdir_cannot_be_created": (
        None,
        ["run", "--users", "30", "--policy", "abm", "--logdir", NOWHERE],
        "--logdir",
    ),
    "run_figures_cannot_be_created": (None, [*HERD, "--figures", NOWHERE + "/f.json"], "--figures"),
    "report_out_cannot_be_created": (_cli_journal, ["report", "{}", "--out", NOWHERE], "cannot write --out"),
    "sweep_out_cannot_be_created": (None, [*SWEEP, "--param", "rho=0.5", "--out", NOWHERE], "cannot write --out"),
    "import_out_cannot_be_created": (_good_oasis, ["--out", NOWHERE + "/x.db"], "cannot write"),
    "train_out_cannot_be_created": (None, [*TRAIN, "--out", NOWHERE], "cannot write --out"),
    # scenario settings: types, ranges, finiteness
    "scenario_users_text": (None, [*HERD, "--set", "users=abc"], "users"),
    "scenario_users_negative": (None, [*HERD, "--set", "users=-5"], "users"),
    "scenario_users_fraction": (None, [*HERD, "--set", "users=2.5"], "users"),
    "scenario_value_nan": (None, [*HERD, "--set", "policy.comment_votes.herd_weight=nan"], "finite"),
    "scenario_value_inf": (None, [*HERD, "--set", "policy.comment_votes.herd_weight=inf"], "finite"),
    "scenario_minutes_per_step_huge": (None, [*HERD, "--set", f"env.minutes_per_step={10**12}"], "minutes_per_step"),
    # sweep: values, seeds, the size of the grid (a hang before: 10**8 points planned for minutes)
    "sweep_value_not_a_number": (None, [*SWEEP, "--param", "rho=abc"], "number"),
    # one parameter twice (a bare name and its dotted path too): the last one silently won
    "sweep_param_twice": (
        None,
        [*SWEEP, "--param", "rho=0.5,1.0", "--param", "policy.abm.opinion_params.rho=0.8"],
        "more than once",
    ),
    # an unknown option names the command (argparse said "oasis-gym: error")
    "train_unknown_option": (None, [*TRAIN, "--bogus"], "train recommender-v0: error: unrecognized arguments: --bogus"),
    # a bad value of a benchmark option names the task too (argparse said "oasis-gym benchmark: error")
    "train_rule_logit_negative": (None, ["train", "moderator", "--rule-logit", "-1"], "--rule-logit"),
    "train_rule_logit_nan": (None, ["train", "moderator", "--rule-logit", "nan"], "--rule-logit"),
    "benchmark_users_text": (None, ["benchmark", "moderator", "--users", "abc"], "benchmark moderator: error:"),
    "sweep_value_empty": (None, [*SWEEP, "--param", "rho=0.5,,0.7"], "empty value"),
    "sweep_value_nan": (None, [*SWEEP, "--param", "rho=0.5,nan"], "finite"),
    "sweep_value_inf": (None, [*SWEEP, "--param", "rho=inf"], "finite"),
    "sweep_range_to_inf": (None, [*SWEEP, "--param", "rho=0:inf:3"], "finite"),
    "sweep_set_nan": (None, [*SWEEP, "--param", "rho=0.5", "--set", "policy.abm.post_rate=nan"], "finite"),
    "sweep_seed_start_negative": (None, [*SWEEP, "--param", "rho=0.5", "--seed-start", "-1"], "--seed-start"),
    "sweep_grid_too_large": (None, [*SWEEP, "--param", "rho=0:1:10000", "--param", "alpha=0:1:10000"], "10,000"),
    "sweep_range_too_long": (None, [*SWEEP, "--param", "rho=0:1:100000000"], "10000"),
    "sweep_seeds_too_many": (
        None,
        ["sweep", "group_polarization", "--param", "rho=0.5", "--seeds", "20000"],
        "--seeds",
    ),
    # train: refused before the baselines are evaluated (--n-envs 0 failed after two minutes)
    "train_n_envs_zero": (None, [*TRAIN, "--n-envs", "0"], "--n-envs"),
    "train_timesteps_zero": (None, [*TRAIN, "--timesteps", "0"], "--timesteps"),
    # --env-workers: processes that step the episodes, at most one per episode
    "train_env_workers_over_n_envs": (
        None,
        ["train", "moderator", "--n-envs", "4", "--env-workers", "5"],
        "--env-workers",
    ),
    "train_env_workers_negative": (None, ["train", "moderator", "--env-workers", "-1"], "--env-workers"),
    "benchmark_env_workers_text": (None, ["benchmark", "moderator", "--env-workers", "two"], "--env-workers"),
    "scratch_env_workers_over_n_envs": (
        None,
        ["scratch", "moderator", "--n-envs", "8", "--env-workers", "9", "--out", "s"],
        "--env-workers",
    ),
    "train_timesteps_negative": (None, [*TRAIN, "--timesteps", "-10"], "--timesteps"),
    "train_time_limit_nan": (None, [*TRAIN, "--time-limit", "nan"], "--time-limit"),
    "train_agent_param_inf": (None, [*TRAIN, "--agent-param", "misinfo_penalty=inf"], "--agent-param"),
    # a damaged journal: the loader's JournalError, one line (an IndexError before)
    "resume_author_out_of_range": (_edit_meta("UPDATE post SET user_id = 999 WHERE post_id = 0"), MORE, "damaged"),
    "resume_shared_post_out_of_range": (
        _edit_meta("UPDATE post SET original_post_id = 999 WHERE post_id = 0"),
        MORE,
        "damaged",
    ),
    "resume_follow_out_of_range": (_edit_meta("UPDATE follow SET followee_id = 999 WHERE rowid = 1"), MORE, "damaged"),
    "resume_post_kind_unknown": (_edit_meta("UPDATE post SET kind = 99 WHERE post_id = 0"), MORE, "damaged"),
    "resume_row_ids_reused": (
        _edit_meta("""UPDATE meta SET value = '{"follow": 0}' WHERE key = 'next_row_id'"""),
        MORE,
        "damaged",
    ),
    "resume_step_infinite": (_edit_meta("UPDATE meta SET value = '1e999' WHERE key = 'step'"), MORE, "step inf"),
    "resume_views_damaged": (_edit_meta("UPDATE meta SET value = '[1]' WHERE key = 'views'"), MORE, "views"),
    # a population larger than the cap or the memory: one line (a MemoryError traceback before)
    "run_users_a_billion": (None, ["run", "--users", "1000000000", *QUIET], "at most 10,000,000"),
    "run_users_ten_to_the_40": (None, ["run", "--users", "1" + "0" * 40, *QUIET], "41-digit"),
    "scenario_users_a_billion": (None, [*HERD, "--set", "users=1000000000"], "at most 10,000,000"),
    # unbounded work and values that ended in a torch traceback after the tuning (issue 53):
    # refused by the parser, before anything is built (train --users 10**9 allocated until the
    # memory ran out); every option's range: tests/test_guarantees_cli_bounds.py
    "train_users_a_billion": (None, [*TRAIN, "--users", "1000000000"], "at most 10,000,000"),
    "train_max_steps_huge": (None, ["train", "moderator", "--max-steps", str(10**9)], "--max-steps"),
    "train_cem_iterations_huge": (None, ["train", "recommender", "--cem-iterations", str(10**9)], "--cem-iterations"),
    "train_n_epochs_huge": (None, ["train", "recommender", "--n-epochs", str(10**9)], "--n-epochs"),
    "train_seed_past_numpy": (None, ["train", "recommender", "--seed", str(2**32)], "4,294,967,295"),
    "train_action_std_huge": (None, ["train", "recommender", "--action-std", "1e300"], "--action-std"),
    "train_learning_rate_huge": (None, ["train", "recommender", "--learning-rate", "1e10"], "--learning-rate"),
    "train_rule_logit_huge": (None, ["train", "moderator", "--rule-logit", "1e300"], "--rule-logit"),
    "benchmark_seed_runs_past_numpy": (None, ["benchmark", "moderator", "--seed", str(2**32 - 2)], "past 4294967295"),
    # a sweep value the run does not take: refused before the first run (it failed at run time)
    "sweep_value_not_a_choice": (None, [*SWEEP, "--param", "env.recsys=reddit,bogus"], "env.recsys"),
    "sweep_seeds_past_numpy": (
        None,
        [*SWEEP, "--param", "rho=0.5", "--seeds", "2", "--seed-start", str(2**32 - 1)],
        "past",
    ),
    # a resume with nothing to do: said, not a silent exit 0
    # a --db that is no journal: refused before the LLM engine starts (it was refused after it,
    # a dangling symbolic link as a file that "appeared while the journal was being created")
    "run_db_is_a_folder": (lambda p: p, LLM_RUN, "is a directory"),
    "run_db_is_a_user_file": (lambda p: _file(p / "notes.txt"), LLM_RUN, "not an oasis-gym journal"),
    "run_db_dangling_symlink": (lambda p: _dangling(p / "run.db"), LLM_RUN, "symbolic link to a missing file"),
    "resume_steps_behind_the_journal": (_cli_journal, ["--steps", "1"], "at step 2"),
    "resume_of_a_complete_run": (_cli_journal, [], "complete"),
}


def _file(path: Path) -> Path:
    path.write_text("a user's notes\n")
    return path


def _dangling(path: Path) -> Path:
    path.symlink_to(path.parent / "missing" / "target.db")
    return path


def _argv(case: str, tmp_path: Path) -> list[str]:
    make, args, _ = BAD[case]
    target = str(make(tmp_path)) if make is not None else ""
    if case.startswith("import_"):
        out = [] if "--out" in args else ["--out", "ours.db"]
        return ["import", target, *out, *args]
    if case.startswith("resume_") and make is not None:
        return ["run", "--resume", target, *QUIET, *args]
    return [a.replace("{}", target) for a in args]


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line_exit_code_2_before_any_compute(case, tmp_path):
    argv = _argv(case, tmp_path)
    before = snapshot(tmp_path)
    proc = oasis_cli(*argv, cwd=tmp_path, tripwire=True)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert lines[0].startswith(f"oasis-gym {argv[0]}") and "error" in lines[0], lines[0]
    assert BAD[case][2] in lines[0], lines[0]
    assert proc.stdout == ""  # refused before anything ran (else: exit code TRIPPED)
    assert snapshot(tmp_path) == before  # nothing written, nothing deleted


def test_the_tripwire_of_the_bad_input_cases_trips_on_good_input(tmp_path):
    """What makes "before any compute" mean something: the same command with good input reaches
    the tripwire."""
    proc = oasis_cli(*RUN, "--steps", "1", "--db", "run.db", cwd=tmp_path, tripwire=True)
    assert proc.returncode == TRIPPED, proc.stderr[-2000:]
    assert proc.stderr.splitlines()[-1] == "compute began: oasis_gym.sim.simulation.Simulation.step"


@pytest.mark.parametrize("case", ["resume_author_out_of_range", "resume_follow_out_of_range", "resume_row_ids_reused"])
def test_every_loader_of_a_journal_refuses_a_damaged_one(case, tmp_path):
    """The integrity check sits in `load_platform` itself (what a resume loads), so a damaged
    journal is one `JournalError` whichever way it is loaded (before: only through `load_db`)."""
    db = BAD[case][0](tmp_path)
    for load in (load_platform, load_db, Platform.from_db):
        with pytest.raises(JournalError, match="the journal is damaged"):
            load(db)


def test_a_population_the_memory_cannot_hold_is_refused_before_it_is_built():
    """`--users 10**9` ended in a MemoryError traceback; now a count the memory available cannot
    hold (at checks.BYTES_PER_USER a user, a lower bound) is one line naming both sizes."""
    n = 1_000_000
    said = r"--users: 1,000,000 users need about 2\.0 GiB .* at most 999,999 users here"
    with pytest.raises(ConfigError, match=said):
        population_size(n, "--users", available=n * BYTES_PER_USER - 1)
    assert population_size(str(n), "--users", available=n * BYTES_PER_USER) == n
    with pytest.raises(ConfigError, match="at most 10,000,000 users"):
        population_size(10**9, available=10**15)


def test_help_states_the_sweep_size_limit_and_how_timesteps_are_used(tmp_path):
    sweep = oasis_cli("sweep", "--help", cwd=tmp_path)
    assert "at most 10,000 runs" in " ".join(sweep.stdout.split())
    train = oasis_cli("train", "recommender-v0", "--help", cwd=tmp_path)
    assert "rounded up" in " ".join(train.stdout.split())


def test_train_says_the_timesteps_it_runs(tmp_path):
    """--timesteps 1 quietly became 500 (PPO learns in whole rollouts): now the number used is
    the first thing said, before the baselines run."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "oasis_gym.cli", *TRAIN, "--timesteps", "1", "--out", str(tmp_path / "t")],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        said = ""
        for line in proc.stderr:  # (until the line, or the end of the command)
            said += line
            if "rounded up" in line:
                break
        assert "--timesteps 1 is rounded up to 4 (whole rollouts of --n-steps 4 x --n-envs 1)" in said, said
    finally:
        proc.kill()
        proc.wait()


SIGNAL_RUN_STEPS = 6


@pytest.mark.parametrize("signum,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_a_run_with_one_line_and_the_command_that_resumes_it_exactly(signum, code, tmp_path):
    """SIGINT printed a KeyboardInterrupt traceback (SIGTERM: a silent kill): now one line with
    the step and the exact `oasis-gym run --resume` command, exit code 128 + the signal; that
    command finishes the run as if it had never stopped. The signal lands while the run is
    paused as its third step begins (two committed), however fast the machine runs it."""
    argv = [*RUN, "--users", "400", "--steps", str(SIGNAL_RUN_STEPS), "--db", "run.db"]
    assert oasis_cli(*argv[:-1], "full.db", cwd=tmp_path).returncode == 0
    got, lines, out = stopped(tmp_path, argv, signum, pause=("oasis_gym.sim.simulation", "Simulation.step", 3))
    assert got == code and len(lines) == 1 and "Traceback" not in lines[0] and out == "", (got, lines)
    assert read_meta(tmp_path / "run.db")["step"] == 2
    assert f"stopped by {signal.Signals(signum).name} at step 2 of {SIGNAL_RUN_STEPS}" in lines[0], lines[0]
    command = shlex.split(lines[0].split("continue it with: ", 1)[1])
    assert command == ["oasis-gym", "run", "--resume", "run.db"]
    resumed = oasis_cli(*command[1:], "--json", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout.splitlines()[-1])["steps"] == SIGNAL_RUN_STEPS - 2
    assert tables(tmp_path / "run.db") == tables(tmp_path / "full.db")


def test_the_largest_seed_runs_and_resumes_with_tensorboard(tmp_path):
    """`--seed` takes a whole number in [0, MAX_SEED] (what numpy's legacy seeding takes, as
    training needs); a seed of 2**64 or more ended the run in a tensorboardX traceback (its
    HParams table takes 64-bit numbers) after the journal was created, and every resume of it
    failed the same way."""
    seed = str(MAX_SEED)
    argv = ["run", "--users", "30", "--policy", "abm", "--steps", "2", "--quiet", "--db", "big.db"]
    proc = oasis_cli(*argv, "--seed", seed, cwd=tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    resumed = oasis_cli("run", "--resume", "big.db", "--steps", "3", "--quiet", cwd=tmp_path)
    assert resumed.returncode == 0 and "Traceback" not in resumed.stderr, resumed.stderr[-2000:]
    assert read_meta(tmp_path / "big.db")["step"] == 3
