"""Hard wraps (analyzer/parse/wraps.py): a paste cut at a terminal's width is read as the
records it was, and a log whose long lines merely share a length is left alone."""

from __future__ import annotations

from pathlib import Path

from analyzer import api
from analyzer.model import SourceLine
from analyzer.parse.framing import Framer
from analyzer.parse.wraps import wrap_width

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
# real pastes: VLM-R1's GRPO watchdog (116 columns, padded), AnomalyGPT's DeepSpeed launcher
# (204 columns), and a vLLM GH200 log whose ranks print one 719-character OOM line each
WRAPPED_116 = CORPUS / "b40-serving-training-launchers-pastes/vlmr1-grpo-watchdog-stuck-hard-wrapped-paste-hang.log"
WRAPPED_204 = CORPUS / "b47-training-launchers-hangs-pastes/anomalygpt-deepspeed-hardwrapped-sigkill-crash.log"
SAME_LENGTH = next(CORPUS.glob("*/vllm-gh200-slurm-glm52-flashmla-sparse-prefill-cuda-oom-serving.log"))


def _width(path: Path) -> int | None:
    framer = Framer()
    texts = path.read_text(encoding="utf-8").splitlines()[:400]
    return wrap_width([framer.frame(SourceLine(i + 1, t, path.name)) for i, t in enumerate(texts)])


def test_the_width_of_a_wrapped_paste_is_found() -> None:
    assert _width(WRAPPED_116) == 116
    assert _width(WRAPPED_204) == 204


def test_ranks_printing_one_long_line_are_no_width() -> None:
    assert _width(SAME_LENGTH) is None


def test_a_cut_record_is_one_event_that_owns_its_pieces() -> None:
    events = list(api.events([str(WRAPPED_116)]))
    first = events[0]
    assert first.kind == "log" and first.lines == list(range(1, 9))
    assert "ProcessGroupNCCL's watchdog got stuck for 480 seconds" in first.message
    assert first.message.endswith("please attempt to debug the hang.")  # padding dropped
    assert first.raw[0].startswith("[rank6]:[E429") and len(first.raw) == len(first.lines)
    assert events[1].line_start == 9  # the next record starts a new event


def test_the_whole_statement_is_the_root_cause() -> None:
    report = api.explain([str(WRAPPED_204)], excerpts=False)
    rc = report["root_cause"]
    assert rc["line"] == 4 and rc["category"] == "host_oom"
    assert rc["text"].endswith("exits with return code = -9")


def test_a_c10_continuation_is_not_a_piece(tmp_path: Path) -> None:
    """A record at the width followed by c10's "Exception raised from ..." line: that line
    belongs to the exception's context, not to the record's message."""
    head = "[rank3]:[E716 19:47:26.324588983 shim_common.cpp:523] Exception in aoti_torch: CUDA out of memory."
    line = head + " x" * ((150 - len(head)) // 2)
    lines = []
    for _ in range(3):
        lines += [line, "Exception raised from malloc at /pytorch/c10/cuda/CUDACachingAllocator.cpp:1574 (most recent call first):"]
    log = tmp_path / "w.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    events = list(api.events([str(log)]))
    assert all(ev.fields.get("wrapped_lines") is None for ev in events)
