"""The knowledge files test themselves: every entry that names a corpus case matches a line of
it, the schema is enforced, `--rules` extends it, and no pattern backtracks catastrophically."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from analyzer import api, knowledge
from analyzer.errors import RulesError
from analyzer.model import SourceLine
from analyzer.parse.framing import Framer

ROOT = Path(__file__).resolve().parent.parent
KNOWLEDGE = knowledge.load()
LOGS = {p.stem: p for p in (ROOT / "corpus").rglob("*.log")}


@pytest.mark.parametrize("sig", [s for s in KNOWLEDGE.signatures if s.case],
                         ids=[s.id for s in KNOWLEDGE.signatures if s.case])
def test_signature_matches_its_case(sig: knowledge.Signature) -> None:
    """A signature that cites a corpus case must recognise a line of that case."""
    assert sig.case in LOGS, f"{sig.id}: case {sig.case} is not in corpus/"
    text = LOGS[sig.case].read_text(encoding="utf-8", errors="replace")
    assert any(sig.pattern.search(line.replace("\r", " ")) for line in text.split("\n")), sig.id


def test_every_failure_has_a_category_and_every_entry_a_summary() -> None:
    for sig in KNOWLEDGE.signatures:
        if sig.kind == "failure":
            assert sig.category, sig.id
        assert sig.summary, sig.id


def test_rules_dir_adds_and_overrides(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "site.toml").write_text('''
[[signature]]
id = "site.fabric_manager"
kind = "failure"
system = "any"
category = "hardware"
pattern = \'\'\'fabric manager is not running\'\'\'
summary = "NVSwitch fabric manager down."
remediation = "systemctl start nvidia-fabricmanager"
''', encoding="utf-8")
    log = tmp_path / "x.log"
    log.write_text("starting\nERROR: fabric manager is not running\n", encoding="utf-8")
    report = api.explain([str(log)], rules=[str(rules)], excerpts=False)
    assert report["root_cause"]["signature"] == "site.fabric_manager"
    assert report["root_cause"]["remediation"] == "systemctl start nvidia-fabricmanager"


def test_bad_rules_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text('[[signature]]\nid = "x"\nkind = "failure"\n'
                                       'pattern = "("\ncategory = "other"\n', encoding="utf-8")
    with pytest.raises(RulesError, match="bad pattern"):
        knowledge.load([str(tmp_path)])


ADVERSARIAL = [
    "a" * 200_000,
    "[" * 100_000,
    "(" * 50_000 + ")" * 50_000,
    "File \"" + "x" * 100_000,
    "0:" * 60_000,
    "[2025-01-01 00:00:00 " + "TP1 " * 20_000,
    "NCCL WARN " + "Cuda failure " * 10_000,
    " " * 100_000 + "Error:",
    "WorkNCCL(" + "SeqNum=1, " * 20_000,
]


@pytest.mark.parametrize("text", ADVERSARIAL, ids=range(len(ADVERSARIAL)))
def test_no_catastrophic_backtracking(text: str) -> None:
    """Pathological lines finish quickly in signatures, markers and head parsing (a generous
    bound: it catches exponential blow-ups, not speed regressions)."""
    start = time.perf_counter()
    KNOWLEDGE.match(text)
    KNOWLEDGE.markers_for(text)
    Framer(2025).frame(SourceLine(1, text, "x"))
    assert time.perf_counter() - start < 5.0


@pytest.mark.parametrize("sig", [s for s in KNOWLEDGE.signatures if s.not_examples],
                         ids=[s.id for s in KNOWLEDGE.signatures if s.not_examples])
def test_signature_rejects_its_look_alikes(sig: knowledge.Signature) -> None:
    """Real lines an entry must not take for its own (interleaved or glued look-alikes)."""
    for line in sig.not_examples:
        assert sig.id not in [s.id for s, _ in KNOWLEDGE.match(line)], line


@pytest.mark.parametrize("marker", [m for m in KNOWLEDGE.markers if m.examples],
                         ids=[m.id for m in KNOWLEDGE.markers if m.examples])
def test_marker_matches_its_examples(marker: knowledge.Marker) -> None:
    """Each real example line a phase marker carries is recognised by it."""
    for line in marker.examples:
        hits = [m.id for m, _ in KNOWLEDGE.markers_for(line)]
        assert marker.id in hits, f"{marker.id} does not match its example {line!r}"


@pytest.mark.parametrize("sig", [s for s in KNOWLEDGE.signatures if s.examples],
                         ids=[s.id for s in KNOWLEDGE.signatures if s.examples])
def test_signature_matches_its_examples(sig: knowledge.Signature) -> None:
    """Each real example line an entry carries is recognised by it (and by no benign entry
    that would hide it)."""
    for line in sig.examples:
        hits = [s.id for s, _ in KNOWLEDGE.match(line)]
        assert sig.id in hits, f"{sig.id} does not match its example {line!r}"
        if sig.kind != "benign":
            benign = [s.id for s, _ in KNOWLEDGE.match(line) if s.kind == "benign"]
            assert not benign, f"{sig.id}: example hidden by benign {benign}"


def test_every_knowledge_entry_carries_real_examples() -> None:
    """Every signature and marker proves itself with real lines (`examples`), except the
    entries listed, with the reason, in tests/cases/knowledge_without_examples.txt."""
    listed_file = ROOT / "tests" / "cases" / "knowledge_without_examples.txt"
    listed = {ln.strip() for ln in listed_file.read_text(encoding="utf-8").splitlines()
              if ln.strip() and not ln.startswith("#")}
    bare = {s.id for s in KNOWLEDGE.signatures if not s.examples} | \
        {m.id for m in KNOWLEDGE.markers if not m.examples}
    assert sorted(bare - listed) == [], "entries without examples (add real lines)"
    assert sorted(listed - bare) == [], "listed entries that have examples now (unlist them)"
