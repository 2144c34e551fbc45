"""Paste damage must not change the answer: every corpus log, damaged the way real pastes
are, gives the same root-cause line (or stays quiet).

The shapes are the ones seen in public reports: a `> ` quote of the whole log, `srun -l`
labels padded to the widest task id, a CI runner's per-line timestamp, one cut by the
selection (`056444Z `), a scheduler's label nobody's list knows, and a line-numbered paste.
Only the prefix is added; every program-emitted byte stays as it was.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest

from analyzer import api
from analyzer.model import SourceLine
from analyzer.parse import prefixes
from analyzer.parse.framing import Framer
from analyzer.parse.prefixes import infer
from tests.conftest import corpus_logs, expected_for

Damage = Callable[[int, str], str]
_rnd = random.Random(7)
DAMAGE: dict[str, Damage] = {
    "quote": lambda i, line: f"> {line}" if line else ">",
    "srun-padded": lambda i, line: f" 3: {line}",
    "ci-timestamp": lambda i, line: f"2024-05-01T12:{i // 60 % 60:02d}:{i % 60:02d}.{_rnd.randrange(10**6, 10**7)}Z {line}",
    "cut-timestamp": lambda i, line: f"{_rnd.randrange(10**5, 10**6)}Z {line}",
    "unknown-label": lambda i, line: f"train-job-7.node-1 [stderr] {line}",
    "line-numbers": lambda i, line: f"{i + 1:5d} | {line}",
}
# logs with tqdm's carriage-return redraws are left out: a wrapper prefixes each write, not
# each physical line, so prefixing the physical line would be damage no paste has
CASES = [p for p in corpus_logs() if len(p.read_bytes()) < 200_000 and b"\r" not in p.read_bytes()]


def damaged(log: Path, damage: Damage, tmp: Path) -> Path:
    lines = log.read_text(encoding="utf-8", errors="replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    out = tmp / log.name
    out.write_text("\n".join(damage(i, line) for i, line in enumerate(lines)) + "\n",
                   encoding="utf-8")
    return out


@pytest.mark.corpus
@pytest.mark.parametrize("name", sorted(DAMAGE))
@pytest.mark.parametrize("log", CASES, ids=[p.stem for p in CASES])
def test_same_answer_after_paste_damage(log: Path, name: str, tmp_path: Path,
                                        request: pytest.FixtureRequest) -> None:
    exp = expected_for(log)
    if exp.get("known_gap"):
        pytest.skip(exp["known_gap"])
    gap = exp.get("paste_damage_gap") or {}
    if name in gap.get("damages", ()):  # a reviewed gap under these damages only: strict
        request.applymarker(pytest.mark.xfail(reason=gap["why"], strict=True))
    report = api.explain([str(damaged(log, DAMAGE[name], tmp_path))], excerpts=False)
    if exp["outcome"] in ("crash", "hang"):
        rc = report["root_cause"]
        assert rc is not None, report["headline"]
        assert exp["root_cause"]["match"] in rc["text"], rc["text"][:200]
    else:
        assert report["verdict"] == exp["outcome"], report["headline"]


def test_records_that_merely_start_alike_keep_their_heads() -> None:
    """vLLM's `INFO 05-01 ...` and SGLang's `[2025-...` start most lines alike, but peeling
    that start would lose the heads: nothing is inferred."""
    vllm = [f"INFO 05-01 17:08:{i:02d} [loader.py:{i}] Loading weights took {i}.1 seconds"
            for i in range(30)]
    sglang = [f"[2025-03-07 23:50:{i:02d} TP0] Load weight end. type=Qwen2ForCausalLM"
              for i in range(30)]
    framer = Framer(2025)
    assert infer(vllm, framer.recognised) == []
    assert infer(sglang, framer.recognised) == []


def test_a_label_whose_words_vary_is_peeled_whole() -> None:
    """`[stdout]` and `[stderr]` alternate behind a constant job label: one shape covers both."""
    lines = [f"job-3.node-1 [{'stderr' if i % 3 else 'stdout'}] [2025-03-07 23:50:{i:02d} TP0] "
             "Load weight end." for i in range(30)]
    found = infer(lines, Framer(2025).recognised)
    assert found
    framer = Framer(2025, found)
    for i in (0, 1):
        frame = framer.frame(SourceLine(i + 1, lines[i], "mem"))
        assert {p.kind for p in frame.prefixes} == {"inferred"}
        assert frame.head is not None and frame.head.fmt == "bracket_ts"
        assert frame.message == "Load weight end."


def test_quote_then_label() -> None:
    """A quoted paste of a labelled log: the quote, then the label, each peeled in turn."""
    lines = [f"> node-{i % 2}.job [stderr] INFO 05-01 17:08:{i:02d} [loader.py:{i}] Loading "
             "weights took 1.1 seconds" for i in range(30)]
    found = infer(lines, Framer(2025).recognised)
    frame = Framer(2025, found).frame(SourceLine(1, lines[3], "mem"))
    assert frame.head is not None and frame.head.fmt == "vllm", [p.text for p in frame.prefixes]


def test_pdsh_host_names_and_addresses_are_one_prefix() -> None:
    """DeepSpeed's multi-node runner (pdsh) puts `localhost: ` before node 0's lines and
    `10.0.0.2: ` before node 1's: a name and an address, one shape, peeled from both even
    when most of the job's lines (Megatron's banners) are of no known format."""
    lines = []
    for i in range(40):
        host = "localhost" if i % 2 else "10.0.0.2"
        if i % 4 in (0, 1):
            lines.append(f"{host}: [2026-03-28 00:09:{i:02d},719] [INFO] [launch.py:155:main] "
                         f"{i % 2} NCCL_IB_DISABLE=1")
        else:
            lines.append(f"{host}:      sequence length:           {2048 + i}")
    framer = Framer(2026, infer(lines, Framer(2026).recognised))
    for text in (lines[0], lines[1]):  # 10.0.0.2, then localhost
        frame = framer.frame(SourceLine(1, text, "mem"))
        assert frame.head is not None and " NCCL_IB_DISABLE" in frame.message, text


def test_a_tab_before_every_line_is_peeled_and_a_tracebacks_own_indent_stays() -> None:
    """A notes app (Obsidian) pasted the log with a tab before every line (b39's Windows
    torchrun run): the tab is peeled, so the records and the traceback are read; frames keep
    their own indentation. Spaces before every line are peeled only when that makes lines
    known: a log that is mostly one indented traceback keeps its indentation."""
    body = ["Traceback (most recent call last):",
            '  File "C:\\llama\\generation.py", line 85, in build',
            '    torch.distributed.init_process_group("nccl")',
            "RuntimeError: Distributed package doesn't have NCCL built in",
            "[W socket.cpp:697] [c10d] The client socket has failed to connect to [node-1]:29500."]
    lines = ["\t" + t for t in body * 6]
    framer = Framer(2025, infer(lines, Framer(2025).recognised))
    frame = framer.frame(SourceLine(3, lines[2], "mem"))
    assert frame.clean[sum(len(p.text) for p in frame.prefixes):] == body[2]
    head = framer.frame(SourceLine(5, lines[4], "mem")).head
    assert head is not None and head.level == "warning"
    frames_only = [f'    File "/srv/a.py", line {i}, in f' for i in range(30)]
    assert infer(frames_only, Framer(2025).recognised) == []


def test_a_level_word_before_every_line_is_not_a_prefix() -> None:
    """`INFO:root:` / `WARNING:root:` start each line of Python's default logging format:
    a coarse shape covers them, but peeling it would cost the levels, so nothing is peeled."""
    lines = [f"{'INFO' if i % 3 else 'WARNING'}:root:step {i} loss 0.{i}" for i in range(30)]
    assert infer(lines, Framer(2025).recognised) == []


ASCEND_WORKER = ("(Worker_DP1_TP3_EP7 pid=6088) ERROR 2025-11-05 17:47:06.062 "
                 "[multiproc_executor.py:699] ")  # vllm-ascend's worker: a head no grammar knows


def _ascend_traceback() -> list[str]:
    body = ["Traceback (most recent call last):"]
    for i in range(12):
        body += [f'  File "/srv/vllm/worker_{i}.py", line {10 + i}, in step_{i}',
                 f"    out = step_{i + 1}(x)"]
    body.append("RuntimeError: shape '[2, 32768]' is invalid for input of size 16384")
    return [ASCEND_WORKER + line for line in body]


def _learned(lines: list[str]) -> Framer:
    sniff = Framer(2025)
    texts = [prefixes.sample_text(sniff.frame(SourceLine(i + 1, t, "mem")))
             for i, t in enumerate(lines)]
    return Framer(2025, infer(texts, sniff.recognised, sniff.body))


@pytest.mark.parametrize("label", ["train-job-7.node-1 [stderr] ", "   12 | "])
def test_an_unknown_label_before_a_known_wrapper_before_an_unknown_head(label: str) -> None:
    """label, a known process wrapper, then a head only the file teaches: each round of
    inference sees what follows the known wrappers too, so the third layer is still learned
    (the b23 vllm-ascend case under the unknown-label and line-number damages)."""
    lines = [label + t for t in _ascend_traceback()]
    frame = _learned(lines).frame(SourceLine(1, lines[-1], "mem"))
    assert frame.message.startswith("RuntimeError: shape"), [p.text for p in frame.prefixes]
    assert frame.process == "Worker_DP1_TP3_EP7"


def test_a_quote_learned_and_peeled_as_a_wrapper_does_not_stop_the_chain() -> None:
    """A quoted paste teaches `> ` first (inference reads the quote back), but the quote
    wrapper peels it before the learned prefixes are tried: the chain goes on past it."""
    lines = ["> " + t for t in _ascend_traceback()]
    frame = _learned(lines).frame(SourceLine(1, lines[-1], "mem"))
    assert frame.message.startswith("RuntimeError: shape"), [p.text for p in frame.prefixes]
