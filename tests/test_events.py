"""Events: every input line belongs to exactly one event; the corpus logs parse into the
checked-in golden summaries; interleaved tracebacks of different ranks come back whole.

Golden summaries (`corpus/**/<case>.events.json`) are written by `python -m tests.golden_events`
or `pytest --update-golden`; review their diff against the logs before committing.
"""

from __future__ import annotations

import difflib
import functools
import json
import random
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from analyzer import api
from analyzer.errors import InputError
from analyzer.model import Event, SourceLine
from analyzer.parse.blocks import STALE_LINES, Assembler
from analyzer.parse.framing import Framer
from tests.golden_events import (
    CORPUS,
    YEAR,
    block_exc_type,
    corpus_logs,
    golden_path,
    line_ranges,
    render,
    summarize_events,
)

LOGS = corpus_logs()
IDS = [p.stem for p in LOGS]


# -- coverage -------------------------------------------------------------------------------


def physical_lines(data: bytes) -> int:
    """How many lines the reader yields for these bytes (the last may lack its LF).

    As the reader does (sources.Source._text_chunks): a text with CRs but no LF at all ends
    each line with a bare CR (old Mac tools, serial consoles); hypothesis found '\r\r'."""
    if not data:
        return 0
    if b"\n" not in data and data.count(b"\r") >= 2:
        data = data.replace(b"\r", b"\n")
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


def assert_covers(events: Sequence[Event], n_lines: int) -> None:
    """Each of lines 1..n belongs to exactly one event; spans and order are consistent."""
    owned = Counter(line for ev in events for line in ev.lines)
    dupes = sorted(line for line, c in owned.items() if c > 1)
    assert not dupes, f"lines owned twice: {dupes[:10]}"
    missing = sorted(set(range(1, n_lines + 1)) - set(owned))
    assert not missing, f"lines owned by no event: {missing[:10]}"
    extra = sorted(set(owned) - set(range(1, n_lines + 1)))
    assert not extra, f"events own lines that do not exist: {extra[:10]}"
    for ev in events:
        assert ev.lines, ev
        assert ev.lines == sorted(ev.lines)
        assert (ev.line_start, ev.line_end) == (min(ev.lines), max(ev.lines)), ev
        assert len(ev.raw) == len(ev.clean) == len(ev.lines)
        runs = ev.as_record()["line_ranges"] or [[ev.line_start, ev.line_end]]
        assert [n for a, b in runs for n in range(a, b + 1)] == ev.lines, ev  # says its own lines
    starts = [ev.line_start for ev in events]
    assert starts == sorted(starts), "events must leave in line order"


def events_of_text(text: str) -> list[Event]:
    """Run framing and block assembly over in-memory text (no reader, no sniffing)."""
    framer, asm = Framer(2025), Assembler()
    out: list[Event] = []
    for i, line in enumerate(text.split("\n"), 1):
        out.extend(asm.feed(framer.frame(SourceLine(i, line, "mem"))))
    out.extend(asm.finish())
    return out


def events_of_bytes(data: bytes) -> list[Event] | None:
    """Write the bytes to a file and read it through the public API; None on InputError."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "input.log"
        path.write_bytes(data)
        try:
            return list(api.events([str(path)], year=2025))
        except InputError:
            return None


@functools.cache
def corpus_events(log: Path) -> tuple[Event, ...]:
    """A corpus log's events, parsed once for all the tests of this module."""
    return tuple(api.events([str(log)], year=YEAR))


@pytest.mark.corpus
@pytest.mark.parametrize("log", LOGS, ids=IDS)
def test_corpus_lines_each_belong_to_one_event(log: Path) -> None:
    """Every line of every corpus log is owned by exactly one event."""
    assert_covers(corpus_events(log), physical_lines(log.read_bytes()))


def test_interleaved_block_says_which_lines_are_its_own() -> None:
    """A traceback whose writer interleaved with another rank's records keeps its span, but
    its public record lists the runs it owns, so no other event's line looks enclosed."""
    text = "\n".join([
        "[rank0]: Traceback (most recent call last):",
        '[rank1]: [W socket.cpp:464] [c10d] The server socket has failed to bind.',
        '[rank0]:   File "/srv/a.py", line 3, in load',
        "[rank0]: KeyError: 'lm_head.weight'",
    ])
    events = events_of_text(text)
    assert_covers(events, 4)
    tb = next(ev for ev in events if ev.kind == "traceback")
    assert tb.as_record()["line_ranges"] == [[1, 1], [3, 4]]
    other = next(ev for ev in events if ev.kind != "traceback")
    assert other.as_record()["line_ranges"] is None


# Real line shapes, so that generated input exercises wrappers, heads and block assembly.
SNIPPETS = [
    "Traceback (most recent call last):",
    '  File "/srv/a.py", line 3, in load',
    '  File "/srv/a.py", line 3 in load',
    "    w = state['x']",
    "    ^^^^^^^^^^",
    "KeyError: 'lm_head.weight'",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "",
    "The above exception was the direct cause of the following exception:",
    "During handling of the above exception, another exception occurred:",
    "Fatal Python error: Segmentation fault",
    "Current thread 0x00007f95ca716740 (most recent call first):",
    "Thread 0x00007ee0b4dff640 (most recent call first):",
    "terminate called after throwing an instance of 'c10::DistBackendError'",
    "  what():  [PG 0 Rank 3] Process group watchdog thread terminated with exception",
    "Exception raised from ncclCommWatchdog at ../torch/csrc/distributed/c10d/"
    "ProcessGroupNCCL.cpp:1521 (most recent call first):",
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57 (0x7f in libc10.so)",
    "==== backtrace (tid:    319) ====",
    " 0 0x0000000000042520 __sigaction()  ???:0",
    "--- Logging error ---",
    "Call stack:",
    "Process 310: sglang::scheduler_TP7",
    'Thread 310 (active): "MainThread"',
    "    run_batch (scheduler.py:1930)",
    "[rank3]: Traceback (most recent call last):",
    "[rank3]:   File \"/srv/a.py\", line 3, in load",
    "[rank5]: torch.OutOfMemoryError: CUDA out of memory.",
    "(VllmWorker rank=1 pid=5356) ERROR 04-25 10:24:22 [multiproc_executor.py:380] Traceback "
    "(most recent call last):",
    "(VllmWorker rank=1 pid=5356) ERROR 04-25 10:24:22 [multiproc_executor.py:380] ValueError: x",
    "[2025-03-07 23:50:27 DP1 TP3] Scheduler hit an exception: Traceback (most recent call last):",
    "sglang-1  | [2025-03-07 23:50:27 TP0] Init torch distributed begin.",
    "sglang-1  |   File \"/srv/a.py\", line 3, in load",
    "node-0:3614588:3614588 [0] graph/rings.cc:51 NCCL WARN Error : ring 0 does not contain rank 1",
    "[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [Rank 3] Watchdog caught collective",
    "gpu-node-5: Traceback (most recent call last):",
    "gpu-node-5:",
    "[1,3]<stderr>:# Using devices",
    "\rLoading: 10%|#  | 1/10 [00:01<00:09]\rLoading: 20%|## | 2/10",
    "\x1b[32mINFO\x1b[0m 02-22 23:03:54 [core.py:58] Init",
    "2026-05-01 19:08:06.391 | (EngineCore pid=187) ",
    "Aug 19 18:30:11 vllm vllm[8707]: (APIServer pid=8707) Warning: HF",
]
LINE = st.one_of(st.sampled_from(SNIPPETS), st.text(max_size=40),
                 st.sampled_from(SNIPPETS).map(lambda s: s + " \r"))
TEXT = st.one_of(
    st.text(max_size=300),
    st.lists(LINE, max_size=40).flatmap(
        lambda lines: st.sampled_from(["\n", "\r\n"]).map(lambda sep: sep.join(lines))),
)


@settings(max_examples=150, deadline=None)
@given(TEXT)
def test_arbitrary_text_is_covered(text: str) -> None:
    """Framing and assembly never raise and cover every line of any text."""
    assert_covers(events_of_text(text), len(text.split("\n")))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TEXT)
@example("\r\r")  # CR-only line ends: two lines (found by hypothesis in CI)
@example("a\rb\rc")
def test_arbitrary_text_file_is_covered(text: str) -> None:
    """Any text written to a file reads back as events covering every line."""
    data = text.encode("utf-8", "surrogatepass")
    events = events_of_bytes(data)
    if events is None:  # empty, or too many control characters to be a log
        return
    assert_covers(events, physical_lines(data))


BYTES = st.one_of(
    st.binary(max_size=300),
    st.lists(st.one_of(st.binary(max_size=12),
                       st.sampled_from(SNIPPETS).map(lambda s: s.encode() + b"\n")),
             max_size=30).map(b"".join),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(BYTES)
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    """Arbitrary bytes: InputError (empty/binary) or events covering every line."""
    events = events_of_bytes(data)
    if events is None:
        return
    n = max((max(ev.lines) for ev in events), default=0)
    if not data.startswith(b"\x1f\x8b"):  # gzip magic: lines are counted after gunzip
        n = physical_lines(data)
    assert_covers(events, n)


# -- golden summaries -------------------------------------------------------------------------


def test_every_log_has_a_golden_summary() -> None:
    """A corpus log without `<case>.events.json` fails (run `python -m tests.golden_events`)."""
    missing = [str(p.relative_to(CORPUS)) for p in LOGS if not golden_path(p).exists()]
    assert missing == []
    stale = [p.name for p in CORPUS.rglob("*.events.json")
             if not (p.parent / (p.name[: -len(".events.json")] + ".log")).exists()]
    assert stale == [], "summaries without a log"


@pytest.mark.corpus
@pytest.mark.parametrize("log", LOGS, ids=IDS)
def test_golden_summary(log: Path, update_golden: bool) -> None:
    """The parser's summary of the log equals the reviewed, checked-in one."""
    path = golden_path(log)
    current = summarize_events(corpus_events(log), log.stem)
    if update_golden:
        path.write_text(render(current), encoding="utf-8")
        return
    if not path.exists():
        pytest.fail(f"{path.name} missing: run `python -m tests.golden_events {log.stem}`")
    expected = json.loads(path.read_text(encoding="utf-8"))
    if expected != current:
        diff = "".join(difflib.unified_diff(
            render(expected).splitlines(keepends=True), render(current).splitlines(keepends=True),
            fromfile=f"{path.name} (checked in)", tofile="current parser"))
        pytest.fail(f"event summary changed for {log.name}; if intended, regenerate with "
                    f"`python -m tests.golden_events {log.stem}` and review:\n{diff}",
                    pytrace=False)


def test_summary_shape() -> None:
    """The summary reports blocks with their owned lines as ranges, and plain samples."""
    text = "\n".join([
        "[rank1]: Traceback (most recent call last):",
        "[rank2]: Traceback (most recent call last):",
        '[rank1]:   File "/a.py", line 1, in f',
        '[rank2]:   File "/b.py", line 2, in g',
        "[rank1]:     f()",
        "just a line",
        "[rank1]: ValueError: one",
        "",
        "[rank2]: KeyError: 'two'",
    ])
    s = summarize_events(events_of_text(text), "mem")
    assert s["kinds"] == {"plain": 2, "traceback": 2}
    assert s["ranks"] == [{"global": 1}, {"global": 2}]
    assert [(b["lines"], b["exc_type"], b["rank"]) for b in s["blocks"]] == [
        ("1,3,5,7", "ValueError", {"global": 1}), ("2,4,9", "KeyError", {"global": 2})]
    assert s["plain"] == {"count": 1, "blank": 1, "sample": [{"line": 6, "text": "just a line"}]}


# -- block assembly ------------------------------------------------------------------------

BLOCK_CASES = {
    "C++ abort: what() goes on with NCCL's Last error": ("""
terminate called after throwing an instance of 'std::runtime_error'
  what():  NCCL error: unhandled system error, NCCL version 2.14.3
ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.
Last error:
NET/IB : Got completion from peer 10.0.0.2<48598> with error 12, opcode 0, len 0, vendor err 129
""", [("cpp_abort", "1-5", "std::runtime_error")]),
    "C++ abort: c10 hints, a blank line, then the c10 frames": ("""
terminate called after throwing an instance of 'c10::Error'
  what():  CUDA error: an illegal memory access was encountered
For debugging consider passing CUDA_LAUNCH_BLOCKING=1

Exception raised from c10_cuda_check_implementation at Exc.cpp:43 (most recent call first):
frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57 (0x7f in /usr/lib/libc10.so)
Fatal Python error: Aborted
""", [("cpp_abort", "1-6", "c10::Error"), ("faulthandler", "7", "Aborted")]),
    "a chained exception after text below the message": ("""
torch._dynamo.exc.InternalTorchDynamoError: RuntimeError: Cannot call current_seed during capture

You can suppress this exception and fall back to eager by setting:
    import torch._dynamo
    torch._dynamo.config.suppress_errors = True


During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/srv/scheduler.py", line 2255, in run_scheduler_process
    scheduler = Scheduler(server_args)
RuntimeError: Capture cuda graph failed
""", [("traceback", "1-13", "torch._dynamo.exc.InternalTorchDynamoError")]),
    "text held after a message is released when no chain follows": ("""
Traceback (most recent call last):
  File "/srv/a.py", line 1, in f
ValueError: boom

Killed
some other output
""", [("traceback", "1-3", "ValueError"), ("plain", "4", None), ("plain", "5", None),
      ("plain", "6", None)]),
    "a fragment that starts at the chain line": ("""
During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/srv/a.py", line 1, in f
Exception: Capture cuda graph failed
""", [("traceback", "1-5", "Exception")]),
    "faulthandler stacks without the Fatal Python error line": ("""
Thread 0x00007f0159038740 (most recent call first):
  File "/opt/conda/lib/python3.10/threading.py", line 320 in wait
  File "/opt/conda/lib/python3.10/queue.py", line 171 in get

Current thread 0x00007f95ca716740 (most recent call first):
  File "/srv/pynccl.py", line 138 in all_reduce
""", [("faulthandler", "1-6", None)]),
    "faulthandler frames without their thread line": ("""
  File "/opt/conda/lib/python3.10/threading.py", line 607 in wait
  File "/opt/conda/lib/python3.10/threading.py", line 973 in _bootstrap
""", [("faulthandler", "1-2", None)]),
    "py-spy dump": ("""
Process 310: sglang::scheduler_TP7
Python v3.12.12 (/usr/bin/python3.12)

Thread 310 (active): "MainThread"
    _apply (penaltylib/min_new_tokens.py:78)
    run_scheduler_process (scheduler.py:2769)
Thread 1607 (idle): "Thread-1 (_read_thread)"
    _recv_msg (torch/_inductor/compile_worker/subproc_pool.py:61)
""", [("pyspy", "1-8", None)]),
    "a collector's head-shaped timestamp on every traceback line": ("""
[2025-07-16 14:47:06] [2025-07-15 23:47:06] Error in request: x
[2025-07-16 14:47:06] Traceback (most recent call last):
[2025-07-16 14:47:06]   File "/srv/sglang/srt/entrypoints/openai/serving_base.py", line 35, in handle_request
[2025-07-16 14:47:06]     adapted_request = self._convert(request)
[2025-07-16 14:47:06]   File "/srv/sglang/srt/function_call/parser.py", line 116, in get_structure_tag
[2025-07-16 14:47:06]     raise NotImplementedError()
[2025-07-16 14:47:06] NotImplementedError
[2025-07-16 14:47:07] Next record: ValueError: not part of the traceback
""", [("log", "1", None), ("traceback", "2-7", "NotImplementedError"), ("log", "8", None)]),
}


@pytest.mark.parametrize("name", list(BLOCK_CASES))
def test_block_assembly(name: str) -> None:
    """Multi-line shapes come out as one block each, with the lines and type they own."""
    text, expected = BLOCK_CASES[name]
    events = events_of_text(text.strip("\n"))
    got = [(ev.kind, line_ranges(ev.lines), block_exc_type(ev)) for ev in events]
    assert got == expected


def test_pyspy_fields() -> None:
    """A py-spy dump keeps each thread's frames and the rank named by the dumped process."""
    text, _ = BLOCK_CASES["py-spy dump"]
    [ev] = events_of_text(text.strip("\n"))
    assert ev.rank == {"tp": 7} and ev.level is None
    assert ev.fields["pid"] == 310
    threads = ev.fields["threads"]
    assert [(t["id"], t["state"], t["name"]) for t in threads] == [
        ("310", "active", "MainThread"), ("1607", "idle", "Thread-1 (_read_thread)")]
    assert threads[0]["frames"][0] == {"func": "_apply", "file": "penaltylib/min_new_tokens.py",
                                       "line": 78, "index": 4}


def test_cpp_abort_what_keeps_nccl_detail() -> None:
    """The what() text of an NCCL abort includes the lines NCCL appends."""
    text, _ = BLOCK_CASES["C++ abort: what() goes on with NCCL's Last error"]
    [ev] = events_of_text(text.strip("\n"))
    assert "Last error:" in ev.fields["what"] and "vendor err 129" in ev.fields["what"]


def test_open_block_does_not_hold_back_the_log() -> None:
    """A traceback whose writer never writes again is closed after STALE_LINES other lines,
    so events keep streaming out (the reorder buffer stays small on GB logs)."""
    framer, asm = Framer(2025), Assembler()
    lines = ["Traceback (most recent call last):", '  File "/srv/a.py", line 1, in f',
             "ValueError: at start-up"]
    lines += [f"[2025-01-01 00:00:{i % 60:02d} TP0] Decode batch. #running-req: {i}"
              for i in range(3 * STALE_LINES)]
    released: list[Event] = []
    for i, line in enumerate(lines, 1):
        released.extend(asm.feed(framer.frame(SourceLine(i, line, "mem"))))
    assert len(released) >= len(lines) - STALE_LINES - 3
    assert released[0].kind == "traceback" and released[0].lines == [1, 2, 3]
    events = released + list(asm.finish())
    assert_covers(events, len(lines))


# -- interleaved tracebacks -------------------------------------------------------------------


def corpus_lines(rel: str, first: int, last: int) -> list[str]:
    """Lines first..last (1-based, inclusive) of a corpus log, exactly as in the file."""
    text = (CORPUS / rel).read_text(encoding="utf-8")
    return text.split("\n")[first - 1:last]


TORCH_OOM = "distributed/torch-multinode-oom-rank11-watchdog-cascade.log"  # [rank11]: lines 3-21
VLLM_OOM = "vllm/vllm-v1-tp8-cudagraph-capture-oom-rank6.log"  # rank=6 lines 9-11
IMPORT_ERR = "vllm/vllm-import-undefined-symbol-C-abi3.log"  # bare traceback lines 2-18
VLLM_HEAD = "ERROR 04-25 10:24:22 [multiproc_executor.py:380] "


@dataclass
class Piece:
    """One real traceback as its writer printed it (prefix included)."""

    lines: list[str]
    rank: dict[str, int]
    exc_type: str
    message_start: str


def rank11_torch() -> Piece:
    lines = corpus_lines(TORCH_OOM, 3, 21)
    assert all(line.startswith("[rank11]: ") for line in lines)
    return Piece(lines, {"global": 11}, "torch.OutOfMemoryError",
                 "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.35 GiB")


def import_error_as(prefix: str, rank: dict[str, int]) -> Piece:
    body = corpus_lines(IMPORT_ERR, 2, 18)
    assert body[0] == "Traceback (most recent call last):"
    return Piece([prefix + line for line in body], rank, "ImportError",
                 "ImportError: /home/user/data/vllm/vllm/vllm/_C.abi3.so: undefined symbol")


def rank6_vllm() -> Piece:
    lines = corpus_lines(VLLM_OOM, 9, 11)
    assert all(line.startswith("(VllmWorker rank=6 pid=5489) " + VLLM_HEAD) for line in lines)
    return Piece(lines, {"global": 6}, "torch.OutOfMemoryError",
                 "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 MiB")


# Lines of other writers (no rank prefix) that land between the traceback lines.
TORCH_OTHERS = [
    "W1026 03:51:31.222000 2521679 site-packages/torch/distributed/elastic/multiprocessing/"
    "api.py:908] Sending process 2521733 closing signal SIGTERM",
    "Loading extension module utils...",
    "",
    "[rank0]:[E1026 04:01:29.500973224 ProcessGroupNCCL.cpp:2573] [PG ID 1 PG GUID 1 Rank 0] "
    "First PG on this rank to signal dumping.",
]
VLLM_OTHERS = [
    "INFO 04-25 10:24:22 [core.py:58] EngineCore waiting for workers",
    "Capturing CUDA graph shapes:  39%|███▉      | 26/67 [00:00<00:00, 61.35it/s]",
    "(VllmWorker rank=7 pid=5514) ERROR 04-25 10:24:22 [multiproc_executor.py:380] "
    "WorkerProc hit an exception: %s",
]


def interleave(a: Piece, b: Piece, others: list[str], order: list[int]
               ) -> tuple[list[str], list[int], list[int]]:
    """Merge a's and b's lines (order: 0 takes from a, 1 from b, 2 an other writer's line)
    keeping each one's own order; returns the text lines and where a's and b's lines went."""
    out: list[str] = []
    where: tuple[list[int], list[int]] = ([], [])
    queues = [list(a.lines), list(b.lines)]
    k = 0
    for pick in order:
        if pick == 2:
            out.append(others[k % len(others)])
            k += 1
            continue
        if queues[pick]:
            out.append(queues[pick].pop(0))
            where[pick].append(len(out))
    for pick in (0, 1):  # whatever the order left over
        for line in queues[pick]:
            out.append(line)
            where[pick].append(len(out))
    return out, where[0], where[1]


def check_whole(events: list[Event], piece: Piece, lines: list[int]) -> None:
    """Exactly one traceback owns exactly `lines`, with the piece's rank and exception."""
    owners = [ev for ev in events if set(ev.lines) & set(lines)]
    assert len(owners) == 1, [(ev.kind, ev.lines) for ev in owners]
    [ev] = owners
    assert ev.kind == "traceback"
    assert ev.lines == lines
    assert ev.rank == piece.rank
    assert ev.fields.get("exc_type") == piece.exc_type
    assert ev.message.startswith(piece.message_start), ev.message


def rank3_torch_import_error() -> Piece:
    return import_error_as("[rank3]: ", {"global": 3})


def rank1_vllm_import_error() -> Piece:
    return import_error_as("(VllmWorker rank=1 pid=5356) " + VLLM_HEAD, {"global": 1})


# two ranks' tracebacks and the other writers' lines that land between them
PAIRS: dict[str, tuple[Callable[[], Piece], Callable[[], Piece], list[str]]] = {
    "torch [rankN]: prefixes": (rank11_torch, rank3_torch_import_error, TORCH_OTHERS),
    "vLLM worker prefixes": (rank6_vllm, rank1_vllm_import_error, VLLM_OTHERS),
}


@pytest.mark.parametrize("pair", list(PAIRS), ids=list(PAIRS))
def test_each_traceback_alone_is_whole(pair: str) -> None:
    """The reference: each piece on its own is one traceback event."""
    make_a, make_b, _ = PAIRS[pair]
    for piece in (make_a(), make_b()):
        events = events_of_text("\n".join(piece.lines))
        check_whole(events, piece, list(range(1, len(piece.lines) + 1)))


@pytest.mark.parametrize("pair", list(PAIRS), ids=list(PAIRS))
def test_line_by_line_interleaving(pair: str) -> None:
    """Alternating lines of two ranks, with other writers' lines between: two whole blocks."""
    make_a, make_b, others = PAIRS[pair]
    a, b = make_a(), make_b()
    order = [p for i in range(max(len(a.lines), len(b.lines)))
             for p in ((0, 1, 2) if i % 3 == 0 else (1, 0))]
    text, at_a, at_b = interleave(a, b, others, order)
    events = events_of_text("\n".join(text))
    assert_covers(events, len(text))
    check_whole(events, a, at_a)
    check_whole(events, b, at_b)
    assert sum(ev.kind == "traceback" for ev in events) == 2


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(list(PAIRS)), st.randoms(use_true_random=False))
def test_any_interleaving(pair: str, rnd: random.Random) -> None:
    """Any merge of the two ranks' lines (other writers included) gives the same two blocks."""
    make_a, make_b, others = PAIRS[pair]
    a, b = make_a(), make_b()
    order = [0] * len(a.lines) + [1] * len(b.lines) + [2] * rnd.randint(0, 6)
    rnd.shuffle(order)
    text, at_a, at_b = interleave(a, b, others, order)
    events = events_of_text("\n".join(text))
    assert_covers(events, len(text))
    check_whole(events, a, at_a)
    check_whole(events, b, at_b)
