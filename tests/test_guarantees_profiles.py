"""Guarantees against hostile profile files: a ProfileError naming file, row and field.

Issue 15: a lone surrogate in ``previous_tweets`` loaded and then crashed ``reset()``; Reddit
JSON nested 100k levels deep or holding a 5,000-digit number raised RecursionError /
ValueError. Every hostile file here is a real file in tmp_path, loaded by the loader and by
the env; valid-but-odd files (BOM, CRLF, NUL text, huge fields) must load and run a step.
"""

from __future__ import annotations

import pytest

HUGE = "9" * 5000

HEAD = "username,following_agentid_list,previous_tweets,description\n"
DEEP = "[" * 100_000 + "]" * 100_000


def _write(tmp_path, name: str, content: str | bytes):
    p = tmp_path / name
    if isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content, encoding="utf-8", errors="surrogatepass", newline="")
    return p


def _env(path, tmp_path):
    from oasis_gym.envs import reddit_v0, twitter_v0

    mod = reddit_v0 if str(path).endswith(".json") else twitter_v0
    return mod.parallel_env(users=str(path), max_cycles=2, db_path=str(tmp_path / "run.db"))


def _expect_profile_error(path, tmp_path, row, field):
    from oasis_gym.population import ProfileError, load_profiles

    with pytest.raises(ProfileError) as info:
        load_profiles(path)
    err = info.value
    assert (err.path, err.row, err.field) == (str(path), row, field), str(err)
    assert str(path) in str(err)
    with pytest.raises(ProfileError):  # the env surfaces the same error, before any step
        _env(path, tmp_path).reset(seed=0)
    return err


def test_lone_surrogate_tweet_is_a_profile_error(tmp_path):
    """Before: loaded, then reset() raised UnicodeEncodeError writing the seed post."""
    p = _write(tmp_path, "p.csv", HEAD + "a,[],[],x\nb,[0],\"['fine', '\\ud800 bad']\",y\n")
    err = _expect_profile_error(p, tmp_path, 2, "previous_tweets")
    assert "surrogate" in str(err)


def test_lone_surrogate_inside_a_nested_tweet_list(tmp_path):
    """A cell holding the repr of a list of tweets (OASIS files do this): the escape hides
    one level down."""
    import csv
    import io

    inner = "['" + "\\" + "udfff ok']"  # the text ['\udfff ok'], with a real backslash
    buf = io.StringIO()
    csv.writer(buf).writerows([HEAD.strip().split(","), ["a", "[]", repr([inner]), "x"]])
    p = _write(tmp_path, "p.csv", buf.getvalue())
    err = _expect_profile_error(p, tmp_path, 1, "previous_tweets")
    assert "surrogate" in str(err)


def test_reddit_json_nested_100k_levels(tmp_path):
    """Before: RecursionError out of json.loads."""
    p = _write(tmp_path, "deep.json", '[{"username":"a"},{"username":"b","bio":' + DEEP + "}]")
    err = _expect_profile_error(p, tmp_path, "index 1", "bio")
    assert "deep" in str(err)
    p = _write(tmp_path, "deep_top.json", DEEP)
    _expect_profile_error(p, tmp_path, "index 0", None)


def test_reddit_json_nested_deep_but_decodable(tmp_path):
    """900 levels decode, then used to overflow the recursive validity walk."""
    p = _write(tmp_path, "deep.json", '[{"username":"a","age":' + "[" * 900 + "]" * 900 + "}]")
    _expect_profile_error(p, tmp_path, "index 0", "age")


@pytest.mark.parametrize("key", ["age", "opinion"])
def test_reddit_json_5000_digit_number(tmp_path, key):
    """Before: ValueError (Python's int-string limit) out of json.loads."""
    p = _write(tmp_path, "big.json", '[{"username":"a"},{"username":"b","%s":%s}]' % (key, HUGE))  # noqa: UP031
    err = _expect_profile_error(p, tmp_path, "index 1", key)
    assert "5000-digit" in str(err)


# (file name, content, expected (row, field) or "ok" when the file is valid and must run)
HOSTILE = [
    ("empty.csv", "", ("header", None)),
    ("empty.json", "", ("line 1 column 1", None)),
    ("header_only.csv", "username,following_agentid_list\n", (1, None)),
    ("empty_list.json", "[]", ("index 0", None)),
    ("binary.csv", b"\x00\xff\xfe\x89PNG\r\n\x1a\n\x00", ("header", "column 1")),
    ("binary.json", b"\x00\xff\xfe\x89PNG\r\n", ("line 1 column 1", None)),
    ("utf16.csv", "username,following_agentid_list\nu0,[]\n".encode("utf-16"), ("header", "column 1")),
    ("missing_col.csv", "username,description\nu0,x\n", ("header", "following_agentid_list")),
    ("ragged.csv", "username,following_agentid_list\nu0,[],extra\n", (1, None)),
    ("unclosed_quote.csv", 'username,following_agentid_list\n"u0,[]\n', (1, None)),
    ("tweet_int.csv", HEAD + 'a,[],"[1, 2]",x\n', (1, "previous_tweets")),
    ("tweet_deep.csv", HEAD + f'a,[],"{DEEP}",x\n', (1, "previous_tweets")),
    ("tweet_huge.csv", HEAD + f'a,[],"[{HUGE}]",x\n', (1, "previous_tweets")),
    ("follow_huge.csv", HEAD + f'a,"[{HUGE}]",[],x\n', (1, "following_agentid_list")),
    ("follow_deep.csv", HEAD + f'a,"{DEEP}",[],x\n', (1, "following_agentid_list")),
    ("follow_float.csv", HEAD + "a,[1.5],[],x\n", (1, "following_agentid_list")),
    ("follow_nan.csv", HEAD + "a,[nan],[],x\n", (1, "following_agentid_list")),
    (
        "topics_surrogate.csv",
        "username,following_agentid_list,interested_topics\na,[],\"['\\udc80']\"\n",
        (1, "interested_topics"),
    ),
    (
        "topics_deep.csv",
        f'username,following_agentid_list,interested_topics\na,[],"{DEEP}"\n',
        (1, "interested_topics"),
    ),
    (
        "activity_inf.csv",
        'username,following_agentid_list,activity_level_frequency\na,[],"[' + ",".join(["1e400"] * 24) + ']"\n',
        (1, "activity_level_frequency"),
    ),
    (
        "activity_huge_int.csv",
        'username,following_agentid_list,activity_level_frequency\na,[],"[' + ",".join([HUGE] * 24) + ']"\n',
        (1, "activity_level_frequency"),
    ),
    (
        "activity_short.csv",
        "username,following_agentid_list,activity_level_frequency\na,[],[1]\n",
        (1, "activity_level_frequency"),
    ),
    ("opinion_huge.csv", f"username,following_agentid_list,opinion\na,[],{HUGE}\n", (1, "opinion")),
    ("opinion_text.csv", "username,following_agentid_list,opinion\na,[],left\n", (1, "opinion")),
    ("followers_huge.csv", f"username,following_agentid_list,followers_count\na,[],{HUGE}\n", (1, "followers_count")),
    ("super_user.csv", "username,following_agentid_list,is_super_user\na,[],maybe\n", (1, "is_super_user")),
    ("dup_user_id.csv", "username,following_agentid_list,user_id\na,[],1\nb,[],1\n", (2, "user_id")),
    ("no_username.csv", "username,following_agentid_list\n ,[]\n", (1, "username")),
    ("top_object.json", '{"username":"a"}', (None, None)),
    ("user_not_object.json", '[{"username":"a"}, 5]', ("index 1", None)),
    ("username_int.json", '[{"username":5}]', ("index 0", "username")),
    ("bio_list.json", '[{"username":"a","bio":["x"]}]', ("index 0", "bio")),
    ("topics_ints.json", '[{"username":"a","interested_topics":[1,2]}]', ("index 0", "interested_topics")),
    ("opinion_big.json", '[{"username":"a","opinion":1' + "0" * 400 + "}]", ("index 0", "opinion")),
    ("opinion_nan.json", '[{"username":"a","opinion":NaN}]', ("index 0", "opinion")),
    ("surrogate_key.json", '[{"username":"a","\\ud800":1}]', ("index 0", "\ud800")),
    ("bad_bytes.json", b'[{"username":"a","bio":"caf\xe9"}]', ("index 0", "bio")),
    ("truncated.json", '[{"username":"a"', ("line 1 column 17", None)),
    # hostile but valid: must load and run
    ("bom.csv", "\ufeffusername,following_agentid_list\nu0,[]\nu1,[0]\n", "ok"),
    ("bom.json", '\ufeff[{"username":"a"}]', "ok"),
    ("crlf.csv", "username,following_agentid_list\r\nu0,[]\r\nu1,[0]\r\n", "ok"),
    ("nul_text.csv", "username,following_agentid_list,description\nu0,[],a\x00b\n", "ok"),
    ("huge_field.csv", "username,following_agentid_list,description\nu0,[]," + "x" * 1_000_000 + "\n", "ok"),
    ("huge_user_id.csv", f"username,following_agentid_list,user_id\nu0,[],{HUGE}\n", "ok"),
    ("huge_field.json", '[{"username":"a","bio":"' + "y" * 1_000_000 + '"}]', "ok"),
    ("big_int_extra.json", '[{"username":"a","age":' + "9" * 100 + "}]", "ok"),
]


@pytest.mark.parametrize("name,content,expect", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_profile_files(tmp_path, name, content, expect):
    from oasis_gym.population import load_profiles

    p = _write(tmp_path, name, content)
    if expect != "ok":
        _expect_profile_error(p, tmp_path, *expect)
        return
    pop = load_profiles(p)
    env = _env(p, tmp_path)
    env.reset(seed=0)
    env.step({a: 0 for a in env.agents})  # do_nothing for everyone
    env.close()
    assert pop.n >= 1
