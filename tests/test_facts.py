"""Facts as data (#11): every [[fact]] in the knowledge files extracts the value its real
example lines carry, the loader refuses malformed entries with one line, and the post-mortem
reads versions, memory figures and metrics only through these tables."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer import knowledge
from analyzer.errors import RulesError

KNOWLEDGE = knowledge.load()
FACTS = KNOWLEDGE.facts


def test_the_shipped_facts_cover_the_three_groups() -> None:
    groups = {f.group for f in FACTS}
    assert groups == {"version", "memory", "metric"}
    assert all(f.examples for f in FACTS), [f.id for f in FACTS if not f.examples]


@pytest.mark.parametrize("fact", FACTS, ids=[f.id for f in FACTS])
def test_fact_extracts_its_examples(fact: knowledge.Fact) -> None:
    for line, value in fact.examples:
        got = fact.value(line)
        assert got is not None, f"{fact.id} does not match {line!r}"
        assert got[0] == value, (fact.id, line, got)


def test_metric_and_memory_subjects() -> None:
    by_id = {f.id: f for f in FACTS}
    got = by_id["memory.torch.gpu_capacity"].value(
        "GPU 7 has a total capacity of 31.36 GiB of which 598.06 MiB is free.")
    assert got == ("31.36", "7")
    assert by_id["metric.sglang.token_usage"].scale == 100.0
    assert by_id["metric.sglang.queued"].prefill and not by_id["metric.sglang.running"].prefill


@pytest.mark.parametrize("body,message", [
    ('[[fact]]\nid = "x"\ngroup = "version"\nname = "X"\npattern = "v(\\\\d+)"\n',
     "needs a (?P<value>"),
    ('[[fact]]\nid = "x"\ngroup = "colour"\nname = "X"\npattern = "(?P<value>v)"\n',
     "group must be one of"),
    ('[[fact]]\nid = "x"\ngroup = "metric"\nname = "X"\npattern = "(?P<value>v)"\n',
     "a metric needs system"),
    ('[[fact]]\nid = "x"\ngroup = "version"\nname = "X"\npattern = "(?P<value>v)"\nscale = "2"\n',
     "scale must be float"),
    ('[[fact]]\nid = "x"\ngroup = "version"\nname = "X"\npattern = "(?P<value>v)"\n'
     'examples = ["just a line"]\n', "each example is"),
])
def test_malformed_user_facts_are_refused(tmp_path: Path, body: str, message: str) -> None:
    (tmp_path / "f.toml").write_text(body)
    with pytest.raises(RulesError, match=message.replace("(", r"\(").replace("?", r"\?")):
        knowledge.load([str(tmp_path)])


def test_a_user_fact_reaches_the_postmortem(tmp_path: Path) -> None:
    from analyzer import api

    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "f.toml").write_text(
        '[[fact]]\nid = "user.mylib"\ngroup = "version"\nname = "mylib"\n'
        'pattern = \'\'\'mylib version (?P<value>\\S+)\'\'\'\n')
    log = tmp_path / "a.log"
    log.write_text("INFO 01-01 10:00:00 [x.py:1] mylib version 1.2.3\n")
    data = api.postmortem([str(log)], rules=[str(rules)])
    versions = {v["name"]: v["value"] for v in data["environment"]["versions"]}
    assert versions.get("mylib") == "1.2.3"
