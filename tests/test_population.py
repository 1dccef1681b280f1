"""Tests for oasis_gym.population: OASIS profile loaders, errors, synthetic populations."""

from __future__ import annotations

import ast
import csv
import json
from pathlib import Path

import numpy as np
import pytest

from oasis_gym.population import (
    DEFAULT_REDDIT_ACTIVITY,
    DEFAULT_TWITTER_ACTIVITY,
    HOURS,
    OTHER_TOPIC,
    TOPIC_INDEX,
    TOPICS,
    IdStrings,
    Population,
    ProfileError,
    data_path,
    load_profiles,
    load_reddit_json,
    load_twitter_csv,
    oasis_daily_rhythm,
    synthetic,
    topic_mask,
    topic_names,
)

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "oasis"
TWITTER_FILES = ["False_Business_0.csv", "user_all_id_time.csv", "197_baoshou.csv", "197_progressive.csv"]


def shared_or_packaged(name: str, where: str) -> Path:
    return data_path(name) if where == "packaged" else SHARED / name


# the shared copy is checked wherever the checkout has ../shared beside it (CI does); the
# packaged copy everywhere
@pytest.fixture(params=["shared", "packaged"] if SHARED.exists() else ["packaged"])
def where(request: pytest.FixtureRequest) -> str:
    return request.param


# --------------------------------------------------------------------------- independent parse


def rows_of(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def independent_edges(path: Path, *, drop_self: bool = True) -> set[tuple[int, int]]:
    edges = set()
    for i, row in enumerate(rows_of(path)):
        for j in ast.literal_eval(row["following_agentid_list"]):
            if not (drop_self and i == j):
                edges.add((i, int(j)))
    return edges


def raw_edge_count(path: Path) -> int:
    return sum(len(ast.literal_eval(r["following_agentid_list"])) for r in rows_of(path))


# --------------------------------------------------------------------------- Twitter CSV


@pytest.mark.parametrize(
    "name,n_users",
    [
        ("False_Business_0.csv", 111),
        ("user_all_id_time.csv", 111),
        ("197_baoshou.csv", 196),
        ("197_progressive.csv", 196),
    ],
)
def test_twitter_counts_and_edges(name: str, n_users: int, where: str) -> None:
    path = shared_or_packaged(name, where)
    pop = load_twitter_csv(path)
    pop.validate()
    assert pop.n == len(pop) == n_users == len(rows_of(path))
    expected = independent_edges(path)
    assert pop.num_edges == len(expected)
    assert set(zip(pop.follow_src.tolist(), pop.follow_dst.tolist())) == expected
    assert pop.follow_src.dtype == np.int64 and pop.follow_dst.dtype == np.int64
    rows = rows_of(path)
    assert list(pop.user_name) == [r["username"] for r in rows]
    assert list(pop.name) == [r["name"] for r in rows]
    assert list(pop.bio) == [r["description"] for r in rows]
    assert list(pop.persona) == [r["user_char"] for r in rows]
    assert pop.extra is not None and pop.extra[5]["user_id"] == int(rows[5]["user_id"])


def test_false_business_counts(where: str) -> None:
    pop = load_twitter_csv(shared_or_packaged("False_Business_0.csv", where))
    assert (pop.n, pop.num_edges, len(pop.previous_posts)) == (111, 85, 1)
    # no activity column: OASIS' default (every agent acts every step)
    assert pop.activity.shape == (111, HOURS) and pop.activity.dtype == np.float32
    assert np.all(pop.activity == np.float32(DEFAULT_TWITTER_ACTIVITY))
    assert not pop.is_core.any() and np.all(pop.opinion == 0) and np.all(pop.interests == 0)


def test_previous_tweets_match_independent_parse(where: str) -> None:
    for name in TWITTER_FILES:
        path = shared_or_packaged(name, where)
        expected = [(i, t) for i, r in enumerate(rows_of(path)) for t in ast.literal_eval(r["previous_tweets"])]
        assert load_twitter_csv(path).previous_posts == expected
    pop = load_twitter_csv(shared_or_packaged("False_Business_0.csv", where))
    author, text = pop.previous_posts[0]
    assert author == 32 and text.startswith("report: amazon plans to open its first")


def test_self_follows_dropped_or_kept(where: str) -> None:
    path = shared_or_packaged("197_baoshou.csv", where)
    rows = rows_of(path)
    self_follows = sum(i in ast.literal_eval(r["following_agentid_list"]) for i, r in enumerate(rows))
    assert self_follows > 0  # the file really has them
    dropped = load_twitter_csv(path)
    kept = load_twitter_csv(path, drop_self_follows=False)
    assert not np.any(dropped.follow_src == dropped.follow_dst)
    assert kept.num_edges == raw_edge_count(path)
    assert kept.num_edges - dropped.num_edges == self_follows


def test_197_core_users_and_counts(where: str) -> None:
    path = shared_or_packaged("197_progressive.csv", where)
    rows = rows_of(path)
    pop = load_twitter_csv(path)
    assert pop.is_core.sum() == sum(int(r["is_super_user"]) for r in rows) > 0
    assert np.array_equal(np.flatnonzero(pop.is_core), [i for i, r in enumerate(rows) if r["is_super_user"] == "1"])
    assert pop.extra[3]["followers_count"] == int(rows[3]["follower_count"])
    assert pop.extra[3]["following_count"] == int(rows[3]["following_count"])


def oasis_formula(freq: np.ndarray) -> np.ndarray:
    p = freq / freq.max()
    p[p < 0.6] += 0.1
    return np.round(p, 2)


def test_activity_vectors_oasis_formula(where: str) -> None:
    path = shared_or_packaged("user_all_id_time.csv", where)
    rows = rows_of(path)
    freq = np.array([ast.literal_eval(r["activity_level_frequency"]) for r in rows], float)
    pop = load_twitter_csv(path)
    assert pop.activity.shape == (111, HOURS) and pop.activity.dtype == np.float32
    assert pop.activity.min() >= 0 and pop.activity.max() <= 1
    np.testing.assert_allclose(pop.activity, oasis_formula(freq), atol=1e-6)
    assert pop.activity.max() == pytest.approx(1.0)
    assert np.all(pop.activity[freq == 0] == np.float32(0.1))
    assert pop.extra[1]["followers_count"] == int(rows[1]["followers_count"])
    assert pop.extra[1]["created_at"] == rows[1]["created_at"]


def test_activity_from_second_file(where: str) -> None:
    base = shared_or_packaged("False_Business_0.csv", where)
    act = shared_or_packaged("user_all_id_time.csv", where)
    pop = load_twitter_csv(base, activity_path=act)
    ref = load_twitter_csv(act)
    np.testing.assert_array_equal(pop.activity, ref.activity)
    assert not np.all(pop.activity == pop.activity[0, 0])


def test_197_activity_all_ones(where: str) -> None:
    pop = load_twitter_csv(shared_or_packaged("197_baoshou.csv", where))
    assert np.all(pop.activity == 1.0)  # every count is 100 -> 100/100


def test_packaged_copies_identical() -> None:
    expected = sorted(p.name for p in SHARED.iterdir()) if SHARED.exists() else []
    assert (
        not expected
        or sorted(
            p.name for p in data_path("LICENSE").parent.iterdir() if p.suffix != ".py" and p.name != "__pycache__"
        )
        == expected
    )
    for src in SHARED.iterdir() if SHARED.exists() else []:
        assert data_path(src.name).read_bytes() == src.read_bytes(), src.name
    assert "Apache License" in data_path("LICENSE").read_text(encoding="utf-8")
    with pytest.raises(FileNotFoundError):
        data_path("no_such_file.csv")
    with pytest.raises(ValueError):
        data_path("../population.py")


# --------------------------------------------------------------------------- Reddit JSON


def test_reddit_fields(where: str) -> None:
    path = shared_or_packaged("user_data_36.json", where)
    data = json.loads(path.read_text(encoding="utf-8"))
    pop = load_reddit_json(path)
    pop.validate()
    assert pop.n == 36 == len(data) and pop.num_edges == 0
    assert list(pop.user_name) == [u["username"] for u in data]
    assert list(pop.name) == [u["realname"] for u in data]
    assert list(pop.bio) == [u["bio"] for u in data]
    assert list(pop.persona) == [u["persona"] for u in data]
    assert np.all(pop.activity == np.float32(DEFAULT_REDDIT_ACTIVITY))
    for i, u in enumerate(data):
        for key in ("age", "gender", "mbti", "country", "profession"):
            assert pop.extra[i][key] == u[key]
        assert pop.extra[i]["interested_topics"] == u["interested_topics"]
        names = set(topic_names(int(pop.interests[i])))
        assert names == {t for t in u["interested_topics"]}  # all of these are known
    assert load_profiles(path).user_name == pop.user_name


def test_reddit_unknown_topic_sets_other(tmp_path: Path) -> None:
    f = tmp_path / "u.json"
    f.write_text(
        json.dumps(
            [{"username": "a", "interested_topics": ["Politics", "Knitting"]}, {"username": "b", "opinion": -0.5}]
        ),
        encoding="utf-8",
    )
    pop = load_reddit_json(f)
    assert set(topic_names(int(pop.interests[0]))) == {"Politics", OTHER_TOPIC}
    assert pop.extra[0]["interested_topics"] == ["Politics", "Knitting"]
    assert pop.interests[1] == 0 and pop.opinion[1] == np.float32(-0.5)
    assert list(pop.name) == ["a", "b"]  # realname missing -> username


def test_topics_table() -> None:
    assert len(TOPICS) <= 64 and len(set(TOPICS)) == len(TOPICS)
    for cat in {r["topic_category"] for r in rows_of(data_path("all_topics.csv"))}:
        assert topic_mask([cat]) != 0
    assert topic_mask(["Others"]) == 1 << TOPIC_INDEX[OTHER_TOPIC]
    assert topic_mask(["economics", "IT (Information Technology)"]) == (
        1 << TOPIC_INDEX["Economics"] | 1 << TOPIC_INDEX["Information Technology"]
    )


# --------------------------------------------------------------------------- malformed files

HEADER = "user_id,name,username,following_agentid_list,previous_tweets,user_char,description"


def write_csv(tmp_path: Path, lines: list[str], name: str = "p.csv") -> Path:
    f = tmp_path / name
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return f


def good_rows() -> list[str]:
    return [HEADER, "10,A,a,[1],[],x,x", '11,B,b,"[0, 2]",[],y,y', "12,C,c,[],[],z,z"]


def expect_error(path: Path, row: object, field: object, **kw: object) -> ProfileError:
    with pytest.raises(ProfileError) as info:
        load_profiles(path, **kw)
    err = info.value
    assert isinstance(err, ValueError)
    assert str(path) in str(err)
    assert err.row == row, str(err)
    assert err.field == field, str(err)
    return err


def test_good_tmp_csv_loads(tmp_path: Path) -> None:
    pop = load_profiles(write_csv(tmp_path, good_rows()))
    assert pop.n == 3 and sorted(zip(pop.follow_src.tolist(), pop.follow_dst.tolist())) == [(0, 1), (1, 0), (1, 2)]


def test_missing_required_column(tmp_path: Path) -> None:
    f = write_csv(tmp_path, ["user_id,name,username,previous_tweets", "1,A,a,[]"])
    err = expect_error(f, "header", "following_agentid_list")
    assert "missing required column" in str(err)


def test_non_utf8_bytes(tmp_path: Path) -> None:
    f = tmp_path / "bad.csv"
    lines = good_rows()
    data = ("\n".join(lines[:2]) + "\n").encode() + b"11,B,b,[0],[],caf\xe9,y\n"
    f.write_bytes(data)
    err = expect_error(f, 2, "user_char")
    assert "UTF-8" in str(err)


def test_unparseable_following_list(tmp_path: Path) -> None:
    lines = good_rows()
    lines[2] = '11,B,b,"[0, two]",[],y,y'
    expect_error(write_csv(tmp_path, lines), 2, "following_agentid_list")
    lines[2] = '11,B,b,"[0.5]",[],y,y'
    expect_error(write_csv(tmp_path, lines), 2, "following_agentid_list")


@pytest.mark.parametrize("cell", ["[7]", "[-1]", '"[0, 3]"'])
def test_follow_id_out_of_range(tmp_path: Path, cell: str) -> None:
    lines = good_rows()
    lines[3] = f"12,C,c,{cell},[],z,z"
    err = expect_error(write_csv(tmp_path, lines), 3, "following_agentid_list")
    assert "out of range" in str(err)


def test_duplicate_user_id(tmp_path: Path) -> None:
    lines = good_rows()
    lines[3] = "10,C,c,[],[],z,z"
    err = expect_error(write_csv(tmp_path, lines), 3, "user_id")
    assert "first at row 1" in str(err)


def test_missing_username_and_field_count(tmp_path: Path) -> None:
    lines = good_rows()
    lines[2] = "11,B,,[0],[],y,y"
    expect_error(write_csv(tmp_path, lines), 2, "username")
    lines[2] = "11,B,b,[0],[],y"
    expect_error(write_csv(tmp_path, lines), 2, None)


def activity_rows(values: list[str]) -> list[str]:
    return ["username,following_agentid_list,activity_level_frequency"] + [
        f'u{i},[],"{v}"' for i, v in enumerate(values)
    ]


def test_activity_wrong_length_or_negative(tmp_path: Path) -> None:
    ok = str([1] * 24)
    err = expect_error(write_csv(tmp_path, activity_rows([ok, str([1] * 23)])), 2, "activity_level_frequency")
    assert "23 values" in str(err)
    expect_error(write_csv(tmp_path, activity_rows([str([1] * 23 + [-2]), ok])), 1, "activity_level_frequency")
    expect_error(write_csv(tmp_path, activity_rows([ok, "[1, 2, x]"])), 2, "activity_level_frequency")


def test_activity_file_missing_user(tmp_path: Path) -> None:
    base = write_csv(tmp_path, good_rows())
    act = write_csv(tmp_path, ["user_id,activity_level_frequency", f'10,"{[1] * 24}"', f'11,"{[2] * 24}"'], "act.csv")
    expect_error(base, 3, "user_id", activity_path=act)
    act2 = write_csv(tmp_path, ["activity_level_frequency", f'"{[1] * 24}"'], "act2.csv")
    with pytest.raises(ProfileError, match="has 1 rows"):
        load_twitter_csv(base, activity_path=act2)


def write_rows(path: Path, rows: list[list[str]]) -> Path:
    with open(path, "w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows(rows)
    return path


def test_previous_tweets_nested_repr(tmp_path: Path) -> None:
    nested = repr([repr(["first tweet", "second, with comma"])])
    head = HEADER.split(",")
    rows = [head, ["1", "A", "a", "[]", nested, "x", "x"], ["2", "B", "b", "[]", repr(["plain one"]), "y", "y"]]
    pop = load_profiles(write_rows(tmp_path / "t.csv", rows))
    assert pop.previous_posts == [(0, "first tweet"), (0, "second, with comma"), (1, "plain one")]
    rows[2][4] = "[1, 2]"
    expect_error(write_rows(tmp_path / "t.csv", rows), 2, "previous_tweets")
    rows[2][4] = "not a list"
    expect_error(write_rows(tmp_path / "t.csv", rows), 2, "previous_tweets")


def test_empty_and_unknown_files(tmp_path: Path) -> None:
    expect_error(write_csv(tmp_path, []), "header", None)
    f = tmp_path / "p.txt"
    f.write_text("x", encoding="utf-8")
    with pytest.raises(ProfileError, match="unknown profile format"):
        load_profiles(f)


def write_json(tmp_path: Path, obj: object) -> Path:
    f = tmp_path / "u.json"
    f.write_text(json.dumps(obj), encoding="utf-8")
    return f


def test_json_not_list_of_objects(tmp_path: Path) -> None:
    err = expect_error(write_json(tmp_path, {"username": "a"}), None, None)
    assert "list of user objects" in str(err)
    expect_error(write_json(tmp_path, [{"username": "a"}, "b"]), "index 1", None)


def test_json_missing_username_and_bad_fields(tmp_path: Path) -> None:
    expect_error(write_json(tmp_path, [{"username": "a"}, {"realname": "B"}]), "index 1", "username")
    expect_error(write_json(tmp_path, [{"username": ""}]), "index 0", "username")
    expect_error(write_json(tmp_path, [{"username": "a", "interested_topics": [1]}]), "index 0", "interested_topics")
    expect_error(write_json(tmp_path, [{"username": "a", "bio": 5}]), "index 0", "bio")
    expect_error(write_json(tmp_path, [{"username": "a", "opinion": 3}]), "index 0", "opinion")


def test_json_syntax_and_encoding(tmp_path: Path) -> None:
    f = tmp_path / "u.json"
    f.write_text('[{"username": "a",}]', encoding="utf-8")
    err = expect_error(f, "line 1 column 19", None)
    assert "invalid JSON" in str(err)
    f.write_bytes(b'[{"username": "a"}, {"username": "b", "bio": "caf\xe9"}]')
    expect_error(f, "index 1", "bio")


# --------------------------------------------------------------------------- Population


def test_validate_rejects_bad_population() -> None:
    pop = load_twitter_csv(data_path("False_Business_0.csv"))
    pop.follow_dst = pop.follow_dst.copy()
    pop.follow_dst[0] = pop.n
    with pytest.raises(ProfileError, match="outside"):
        pop.validate()
    pop.follow_dst[0] = pop.follow_src[0]
    with pytest.raises(ProfileError, match="follows itself"):
        pop.validate()
    pop = load_twitter_csv(data_path("False_Business_0.csv"))
    pop.follow_src = np.concatenate([pop.follow_src, pop.follow_src[:1]])
    pop.follow_dst = np.concatenate([pop.follow_dst, pop.follow_dst[:1]])
    with pytest.raises(ProfileError, match="duplicate edge"):
        pop.validate()
    pop = load_twitter_csv(data_path("False_Business_0.csv"))
    pop.activity = pop.activity[:, :23].copy()
    with pytest.raises(ProfileError, match="activity"):
        pop.validate()


def test_subset_remaps_edges() -> None:
    pop = load_twitter_csv(data_path("197_baoshou.csv"))
    ids = np.array([5, 2, 116, 0, 1])
    sub = pop.subset(ids)
    sub.validate()
    pos = {int(u): k for k, u in enumerate(ids)}
    expected = {
        (pos[s], pos[d]) for s, d in zip(pop.follow_src.tolist(), pop.follow_dst.tolist()) if s in pos and d in pos
    }
    assert set(zip(sub.follow_src.tolist(), sub.follow_dst.tolist())) == expected
    assert list(sub.user_name) == [pop.user_name[i] for i in ids]


# --------------------------------------------------------------------------- synthetic

N = 20_000


@pytest.fixture(scope="module")
def synth() -> Population:
    return synthetic(N, seed=7, n_core=20)


def test_synthetic_valid_and_deterministic(synth: Population) -> None:
    synth.validate()
    again = synthetic(N, seed=7, n_core=20)
    for field in ("activity", "follow_src", "follow_dst", "opinion", "interests", "is_core"):
        np.testing.assert_array_equal(getattr(synth, field), getattr(again, field))
    other = synthetic(N, seed=8, n_core=20)
    assert not np.array_equal(other.follow_dst, synth.follow_dst)
    assert synth.extra is None and synth.source.startswith("synthetic(")


def test_synthetic_no_self_or_duplicate_edges(synth: Population) -> None:
    src, dst = synth.follow_src, synth.follow_dst
    assert src.dtype == dst.dtype == np.int64 and synth.num_edges > N
    assert not np.any(src == dst)
    assert src.min() >= 0 and max(src.max(), dst.max()) < N
    pairs = np.stack([src, dst], axis=1)
    assert np.unique(pairs, axis=0).shape[0] == pairs.shape[0]


def test_synthetic_core_users_get_followers(synth: Population) -> None:
    core = np.flatnonzero(synth.is_core)
    assert np.array_equal(core, np.arange(20))
    indeg = synth.in_degree()
    assert indeg[core].mean() > 50 * indeg[~synth.is_core].mean()
    ordinary = np.arange(20, N)
    followers_of = {c: set() for c in core.tolist()}
    to_core = synth.follow_dst < 20
    for s, d in zip(synth.follow_src[to_core].tolist(), synth.follow_dst[to_core].tolist()):
        followers_of[d].add(s)
    for c in core.tolist():
        shares = (synth.interests[ordinary] & synth.interests[c]) != 0
        follows = np.isin(ordinary, list(followers_of[c]))
        assert not np.any(follows & ~shares)  # only interest-sharing users follow core
        assert 0.15 < follows[shares].mean() < 0.25  # core_follow_prob = 0.2


def test_synthetic_heavy_tailed_degrees(synth: Population) -> None:
    indeg = synth.in_degree()[~synth.is_core]
    assert indeg.max() > 20 * indeg.mean()
    top = np.sort(indeg)[::-1]
    assert top[: len(top) // 100].sum() > 0.1 * top.sum()  # top 1% hold >10% of follows
    outdeg = synth.out_degree()
    assert outdeg.max() > 5 * outdeg.mean()


def test_synthetic_activity_opinion_interests(synth: Population) -> None:
    act = synth.activity
    assert act.shape == (N, HOURS) and act.dtype == np.float32
    assert act.min() >= 0 and act.max() <= 1
    level = act.mean(axis=1)
    assert level.max() > 10 * np.median(level)  # heavy-tailed activity
    hourly = act.mean(axis=0)
    rhythm = oasis_daily_rhythm()
    assert np.corrcoef(hourly, rhythm)[0, 1] > 0.8  # follows the real daily rhythm
    op = synth.opinion
    assert op.dtype == np.float32 and op.min() >= -1 and op.max() <= 1
    assert (op > 0.5).mean() > 0.15 and (op < -0.5).mean() > 0.15
    assert (np.abs(op) < 0.2).mean() > 0.2
    assert synth.interests.dtype == np.uint64 and np.all(synth.interests != 0)
    assert not np.any(synth.interests & np.uint64(1 << TOPIC_INDEX[OTHER_TOPIC]))


def test_synthetic_lazy_strings(synth: Population) -> None:
    names = synth.user_name
    assert isinstance(names, IdStrings) and len(names) == N
    assert names[0] == "user0" and names[-1] == f"user{N - 1}"
    assert names[3:6] == ["user3", "user4", "user5"]
    assert list(names[::5000]) == ["user0", "user5000", "user10000", "user15000"]
    assert next(iter(synth.name)) == "User 0"
    assert sum(1 for _ in names) == N
    for field in ("bio", "persona"):
        text = getattr(synth, field)[21]
        assert all(t in text for t in topic_names(int(synth.interests[21])))
    sub = synth.subset(np.array([7, 3]))
    assert list(sub.user_name) == ["user7", "user3"]
    with pytest.raises(IndexError):
        names[N]


def test_synthetic_small_and_args() -> None:
    for n in (0, 1, 2, 50):
        pop = synthetic(n, seed=1)
        pop.validate()
        assert pop.n == n and pop.is_core.sum() == min(n, 1)
    with pytest.raises(ValueError):
        synthetic(10, in_degree_exponent=1.5)
    with pytest.raises(ValueError):
        synthetic(10, core_follow_prob=1.5)


def test_csv_optional_topic_opinion_columns(tmp_path: Path) -> None:
    rows = [
        ["username", "following_agentid_list", "interested_topics", "opinion", "is_super_user", "country"],
        ["a", "[1]", repr(["Politics", "Sports"]), "0.75", "1", "UK"],
        ["b", "", "", "", "0", "FR"],
    ]
    pop = load_profiles(write_rows(tmp_path / "t.csv", rows))
    assert topic_names(int(pop.interests[0])) == ["Politics", "Sports"]
    assert pop.interests[1] == 0 and pop.opinion.tolist() == [0.75, 0.0]
    assert pop.is_core.tolist() == [True, False]
    assert pop.extra[1]["country"] == "FR" and pop.extra[0]["interested_topics"] == ["Politics", "Sports"]
    assert list(pop.name) == ["a", "b"] and pop.num_edges == 1
    rows[2][3] = "1.5"
    expect_error(write_rows(tmp_path / "t.csv", rows), 2, "opinion")
    rows[2][3] = ""
    rows[2][4] = "maybe"
    expect_error(write_rows(tmp_path / "t.csv", rows), 2, "is_super_user")


def test_non_utf8_header(tmp_path: Path) -> None:
    f = tmp_path / "h.csv"
    f.write_bytes(b"username,following_agentid_list,bi\xf6\n" + b"a,[],x\n")
    expect_error(f, "header", "column 3")
