"""Fuzzed corpus logs (#12): whatever a log turns into (lines shuffled or spliced from two
logs, bytes flipped, huge numbers, odd dates, CR, CRLF and NUL endings), explain answers with
the JSON contract or refuses with an `InputError` (exit 2), and events cover every line: never
an exception (exit 70).

In-process through `analyzer.api` so that hypothesis can try many inputs in a few seconds; the
CLI's mapping of `InputError` to exit 2 is tested in test_cli.py and test_bad_input.py.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer import api
from analyzer.errors import InputError
from analyzer.report.jsonfmt import render_json

ROOT = Path(__file__).resolve().parent.parent
SEEDS = [ROOT / "corpus" / "seed" / "seed-sglang-tp8-oom-sigquit-logging-error.log",
         ROOT / "corpus" / "b07-paste" / "torch-lightning-slurm-first-broadcast-watchdog-timeout.log",
         ROOT / "corpus" / "b07-paste" / "vllm-wsl-6gb-qwen25-7b-load-oom-stated-twice.log"]
LINES = [p.read_bytes().splitlines() for p in SEEDS]
ODD = [b"9" * 5000, b"-" + b"9" * 400, b"1e999", b"nan", b"[9999-12-31 23:59:59]",
       b"[0000-00-00 00:00:00]", b"\x00" * 8, b"\xff\xfe", b"\x1b[31m", b"\r", "\u202e".encode(),
       b"Traceback (most recent call last):", b"[rank99999999999999999999]:", b"    ^^^^^"]
KEYS = {"schema", "verdict", "root_cause", "candidates", "symptoms", "phases", "stats"}


@st.composite
def mutated_log(draw: st.DrawFn) -> bytes:
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    a, b = rng.sample(LINES, 2)
    cut = rng.randrange(len(a) + 1)
    lines = a[:cut] + b[rng.randrange(len(b) + 1):]  # a splice of two logs
    if draw(st.booleans()):
        lo = rng.randrange(len(lines) + 1)
        chunk = lines[lo:lo + 20]
        rng.shuffle(chunk)
        lines[lo:lo + 20] = chunk
    for _ in range(draw(st.integers(0, 6))):  # odd tokens inside lines
        if lines:
            i = rng.randrange(len(lines))
            pos = rng.randrange(len(lines[i]) + 1)
            lines[i] = lines[i][:pos] + rng.choice(ODD) + lines[i][pos:]
    data = bytearray(rng.choice([b"\n", b"\r\n", b"\r"]).join(lines))
    for _ in range(draw(st.integers(0, 4))):  # flipped bytes
        if data:
            data[rng.randrange(len(data))] = rng.randrange(256)
    return bytes(data)


# LOGLENS_FUZZ_EXAMPLES=1000 for a long local run (the closing note of #12 reports one)
@settings(max_examples=int(os.environ.get("LOGLENS_FUZZ_EXAMPLES", "60")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(mutated_log())
def test_fuzzed_log_answers_or_refuses(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.log"
        path.write_bytes(data)
        try:
            report = api.explain([str(path)])
        except InputError:
            return  # a refusal with one line (empty, binary): exit 2
        assert set(report) >= KEYS
        assert report["verdict"] in ("crash", "hang", "healthy", "in_progress", "unknown")
        json.loads(render_json(report), parse_constant=_no_constants)  # strict JSON
        covered = sum(ev.line_end - ev.line_start + 1 if not ev.line_ranges() else
                      sum(r[1] - r[0] + 1 for r in ev.line_ranges() or [])
                      for ev in api.events([str(path)]))
        assert covered == report["lines"]


def _no_constants(name: str) -> None:
    raise AssertionError(f"{name} is not JSON")
