#!/usr/bin/env python3
"""Deterministic generator of a large, realistic SGLang TP8 serving log that ends in a crash.

The log is what an 8-GPU SGLang server (``--tp 8``, ``NCCL_DEBUG=INFO``) writes when it starts up,
serves traffic for a long time and then dies:

* start-up: ``server_args=ServerArgs(...)``, ``Init torch distributed begin/ends``, NCCL INFO
  communicator set-up, ``Load weight begin/end`` with the safetensors progress bar, ``KV Cache is
  allocated``, ``Capture cuda graph begin/end``, uvicorn start-up lines, warm-up requests and
  ``The server is fired up and ready to roll!``;
* serving (the bulk, repeated until the requested size is reached): 8 interleaved TP ranks
  printing ``Decode batch. ...`` and ``Prefill batch. ...``, uvicorn access lines, periodic bursts
  of NCCL INFO lines (a new communicator being set up on every rank), a few harmless warnings;
* the ending: a crash cascade shaped like
  ``corpus/seed/seed-sglang-tp8-oom-sigquit-logging-error.log`` -- a TP3 ``Scheduler hit an
  exception:`` traceback ending in ``torch.OutOfMemoryError``, the parent's ``Received sigquit
  from a child process...``, a ``--- Logging error ---`` block and ``Killed``.

Alongside the large log it writes the *small* version of the same content: the first
``--small-lines`` (2,000) lines plus the identical ending, so a benchmark can check that loglens
gives the same verdict and root cause on both ("speed never changes answers").

Output is byte-for-byte deterministic for a given ``--seed`` and ``--size``. Generation writes
in multi-megabyte chunks; 1 GiB takes well under a minute. With ``--gz`` a gzip copy is written
too (by a ``gzip -1`` child process when ``gzip`` is on PATH, so compression runs on the other
core).

Usage::

    python tests/benchmarks/gen_log.py --size 64M --out tests/benchmarks/data/sglang-tp8-64M.log [--gz]
"""

from __future__ import annotations

import argparse
import gzip
import os
import random
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO

NRANKS = 8
HOST = "node-0"
MAIN_PID = 4242
RANK_PIDS = [MAIN_PID + 131 + 7 * r for r in range(NRANKS)]  # scheduler processes, one per GPU
START = datetime(2026, 2, 22, 23, 13, 41)
CHUNK_BYTES = 8 << 20
MODEL = "/data/models/Qwen3-235B-A22B-Instruct-2507-FP8"

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """'64M' -> 64 MiB, '1G' -> 1 GiB, '8388608' -> bytes."""
    m = _SIZE_RE.match(text)
    if not m:
        raise argparse.ArgumentTypeError(f"bad size {text!r}; use e.g. 8M, 64M, 256M, 1G")
    mult = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[m.group(2).upper()]
    return int(float(m.group(1)) * mult)


def _ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S")


# --------------------------------------------------------------------------------------------------
# start-up section
# --------------------------------------------------------------------------------------------------


def _nccl_comm_setup(rng: random.Random, nchannels: int, tid_base: int) -> list[str]:
    """NCCL INFO lines of one communicator being created on all 8 ranks, interleaved by rank."""
    per_rank: list[list[str]] = []
    comm_id = rng.getrandbits(64)
    for r in range(NRANKS):
        p = f"{HOST}:{RANK_PIDS[r]}:{RANK_PIDS[r] + tid_base + r} [{r}] NCCL INFO "
        comm = rng.getrandbits(44) | 0x550000000000
        nxt, prv = (r + 1) % NRANKS, (r - 1) % NRANKS
        lines = [
            f"{p}comm 0x{comm:x} rank {r} nRanks {NRANKS} nNodes 1 localRanks {NRANKS} "
            f"localRank {r} MNNVL 0",
            f"{p}Trees [0] {nxt}/-1/-1->{r}->{prv} [1] {nxt}/-1/-1->{r}->{prv}",
            f"{p}P2P Chunksize set to 524288",
        ]
        if r == 0:
            ring = "".join(f"{i:>4}" for i in range(NRANKS))
            lines += [f"{p}Channel {c:02d}/{nchannels} :{ring}" for c in range(nchannels)]
        lines += [
            f"{p}Channel {c:02d}/0 : {r}[{r}] -> {nxt}[{nxt}] via P2P/IPC" for c in range(nchannels)
        ]
        lines += [
            f"{p}Connected all rings",
            f"{p}Connected all trees",
            f"{p}threadThresholds 8/8/64 | 64/8/64 | 512 | 512",
            f"{p}{nchannels} coll channels, {nchannels} collnet channels, 0 nvls channels, "
            f"32 p2p channels, 32 p2p channels per peer",
            f"{p}ncclCommInitRank comm 0x{comm:x} rank {r} nranks {NRANKS} cudaDev {r} nvmlDev {r} "
            f"busId {0x18000 + 0x11000 * r:x} commId 0x{comm_id:016x} - Init COMPLETE",
        ]
        per_rank.append(lines)
    # interleave the ranks the way concurrent writers to one terminal do: a few lines at a time
    out: list[str] = []
    idx = [0] * NRANKS
    while any(idx[r] < len(per_rank[r]) for r in range(NRANKS)):
        r = rng.randrange(NRANKS)
        if idx[r] < len(per_rank[r]):
            k = rng.randint(1, 4)
            out.extend(per_rank[r][idx[r] : idx[r] + k])
            idx[r] += k
    return out


def _ranks_shuffled(rng: random.Random) -> list[int]:
    order = list(range(NRANKS))
    rng.shuffle(order)
    return order


def startup_lines(rng: random.Random) -> tuple[list[str], datetime]:
    t = START
    L: list[str] = []
    L.append(
        f"[{_ts(t)}] server_args=ServerArgs(model_path='{MODEL}', tokenizer_path='{MODEL}', "
        "tokenizer_mode='auto', load_format='auto', trust_remote_code=True, dtype='auto', "
        "kv_cache_dtype='auto', quantization=None, host='0.0.0.0', port=30000, "
        "mem_fraction_static=0.85, max_running_requests=None, max_total_tokens=None, "
        "chunked_prefill_size=8192, max_prefill_tokens=16384, schedule_policy='fcfs', "
        "cuda_graph_max_bs=256, disable_cuda_graph=False, tp_size=8, dp_size=1, ep_size=1, "
        "stream_interval=1, random_seed=1234, log_level='info', log_requests=False, "
        "enable_metrics=True, decode_log_interval=40, attention_backend='fa3', "
        "watchdog_timeout=300, context_length=None)"
    )
    L.append(
        f"[{_ts(t)}] WARNING model_config.py:955: DeepGemm is enabled but the scale_fmt of "
        "checkpoint is not ue8m0. This might cause accuracy degradation on Blackwell."
    )
    t += timedelta(seconds=11)
    for r in _ranks_shuffled(rng):
        L.append(f"[{_ts(t)} TP{r}] Init torch distributed begin.")
    p0 = f"{HOST}:{RANK_PIDS[0]}:{RANK_PIDS[0]} [0] NCCL INFO "
    L.append(f"{p0}Bootstrap : Using eth0:10.0.0.11<0>")
    L.append(f"{p0}cudaDriverVersion 12080")
    L.append("NCCL version 2.26.2+cuda12.8")
    for r in range(NRANKS):
        p = f"{HOST}:{RANK_PIDS[r]}:{RANK_PIDS[r] + 129} [{r}] NCCL INFO "
        L.append(f"{p}NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.")
        L.append(f"{p}NET/IB : No device found.")
        L.append(f"{p}NET/Socket : Using [0]eth0:10.0.0.11<0>")
        L.append(f"{p}Using network Socket")
    L.extend(_nccl_comm_setup(rng, 24, 129))
    L.append(f"[{_ts(t)} TP0] sglang is using nccl==2.26.2")
    t += timedelta(seconds=5)
    for r in _ranks_shuffled(rng):
        L.append(f"[{_ts(t)} TP{r}] Init torch distributed ends. mem usage=1.12 GB")
    t += timedelta(seconds=3)
    for r in _ranks_shuffled(rng):
        L.append(f"[{_ts(t)} TP{r}] Load weight begin. avail mem=77.87 GB")
    t += timedelta(seconds=1)
    for r in _ranks_shuffled(rng):
        L.append(
            f"[{_ts(t)} TP{r}] Using default MoE kernel config. Performance might be sub-optimal! "
            "Config file not found at /sgl-workspace/sglang/python/sglang/srt/layers/moe/"
            "fused_moe_triton/configs/triton_3_3_1/E=128,N=192,device_name=NVIDIA_H100_80GB_HBM3,"
            "dtype=fp8_w8a8,block_shape=[128, 128].json"
        )
    total = 48
    for done in (0, 1, 4, 12, 24, 36, 47, 48, 48):
        pct = done * 100 // total
        el = done * 4.9
        rem = (total - done) * 4.9
        rate = "?it/s" if done == 0 else "4.90s/it"
        L.append(
            f"Loading safetensors checkpoint shards: {pct:3d}% Completed | {done}/{total} "
            f"[{int(el) // 60:02d}:{int(el) % 60:02d}<{int(rem) // 60:02d}:{int(rem) % 60:02d}, "
            f"{rate:>8}]"
        )
    t += timedelta(seconds=235)
    for r in _ranks_shuffled(rng):
        L.append(
            f"[{_ts(t)} TP{r}] Load weight end. type=Qwen3MoeForCausalLM, dtype=torch.bfloat16, "
            "avail mem=47.61 GB, mem usage=30.26 GB."
        )
    t += timedelta(seconds=1)
    for r in _ranks_shuffled(rng):
        L.append(
            f"[{_ts(t)} TP{r}] KV Cache is allocated. #tokens: 1622944, K size: 17.02 GB, "
            "V size: 17.02 GB"
        )
    for r in _ranks_shuffled(rng):
        L.append(f"[{_ts(t)} TP{r}] Memory pool end. avail mem=11.36 GB")
    t += timedelta(seconds=1)
    for r in _ranks_shuffled(rng):
        L.append(
            f"[{_ts(t)} TP{r}] Capture cuda graph begin. This can take up to several minutes. "
            "avail mem=11.02 GB"
        )
    bs = [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 144, 160,
          176, 192, 208, 224, 240, 256]
    L.append(f"[{_ts(t)} TP0] Capture cuda graph bs {bs}")
    t += timedelta(seconds=38)
    for r in _ranks_shuffled(rng):
        L.append(
            f"[{_ts(t)} TP{r}] Capture cuda graph end. Time elapsed: 37.84 s. mem usage=1.73 GB. "
            "avail mem=9.29 GB."
        )
    L.append(
        f"[{_ts(t)} TP0] max_total_num_tokens=1622944, chunked_prefill_size=8192, "
        "max_prefill_tokens=16384, max_running_requests=4096, context_len=262144, "
        "available_gpu_mem=9.29 GB"
    )
    t += timedelta(seconds=1)
    L.append(f"[{_ts(t)}] INFO:     Started server process [{MAIN_PID}]")
    L.append(f"[{_ts(t)}] INFO:     Waiting for application startup.")
    L.append(f"[{_ts(t)}] INFO:     Application startup complete.")
    L.append(f"[{_ts(t)}] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)")
    t += timedelta(seconds=1)
    L.append(f'[{_ts(t)}] INFO:     127.0.0.1:52800 - "GET /get_model_info HTTP/1.1" 200 OK')
    for r in _ranks_shuffled(rng):
        L.append(
            f"[{_ts(t)} TP{r}] Prefill batch. #new-seq: 1, #new-token: 6, #cached-token: 0, "
            "token usage: 0.00, #running-req: 0, #queue-req: 0, "
        )
    t += timedelta(seconds=1)
    L.append(f'[{_ts(t)}] INFO:     127.0.0.1:52814 - "POST /generate HTTP/1.1" 200 OK')
    L.append(f"[{_ts(t)}] The server is fired up and ready to roll!")
    return L, t


# --------------------------------------------------------------------------------------------------
# serving section
# --------------------------------------------------------------------------------------------------

_ENDPOINTS = (
    ('"POST /generate HTTP/1.1" 200 OK', 40),
    ('"POST /v1/chat/completions HTTP/1.1" 200 OK', 45),
    ('"POST /v1/completions HTTP/1.1" 200 OK', 8),
    ('"GET /health HTTP/1.1" 200 OK', 4),
    ('"GET /metrics HTTP/1.1" 200 OK', 2),
    ('"GET /v1/models HTTP/1.1" 200 OK', 1),
)

_WARNINGS = (
    # (probability per simulated second, producer)
    (0.004, lambda ts, r, rng: f"[{ts}] WARNING:  Invalid HTTP request received."),
    (
        0.003,
        lambda ts, r, rng: (
            f"[{ts} TP{r}] KV cache pool is full. Retract requests. #retracted_reqs: "
            f"{rng.randint(1, 3)}, #new_token_ratio: 0.4000 -> 0.5500"
        ),
    ),
    (
        0.002,
        lambda ts, r, rng: (
            f'[{ts}] INFO:     10.0.3.{rng.randint(2, 250)}:{rng.randint(30000, 60999)} - '
            '"POST /v1/chat/completions HTTP/1.1" 400 Bad Request'
        ),
    ),
    (
        0.001,
        lambda ts, r, rng: (
            f"[{ts}] WARNING:  Unsupported upgrade request."
        ),
    ),
)


class ServingSim:
    """Produces the serving-phase lines one simulated second at a time."""

    def __init__(self, rng: random.Random, t: datetime) -> None:
        self.rng = rng
        self.t = t
        self.running = 32
        self.tokens = 40000
        self.queue = 0
        self.port = 52815
        self.next_nccl = 90
        self.sec = 0
        ends, weights = zip(*_ENDPOINTS, strict=True)
        self._endpoints = ends
        self._ep_cum = []
        acc = 0
        for w in weights:
            acc += w
            self._ep_cum.append(acc)
        self._ep_total = acc

    def second(self, out: list[str]) -> None:
        rng = self.rng
        rnd = rng.random
        self.t += timedelta(seconds=1)
        self.sec += 1
        ts = _ts(self.t)
        pre = [f"[{ts} TP{r}] " for r in range(NRANKS)]

        # load drifts slowly; every rank of a TP group reports the same batch
        self.running = max(1, min(256, self.running + rng.randint(-6, 6)))
        self.queue = max(0, self.queue + rng.randint(-3, 2)) if self.running > 200 else 0
        self.tokens = max(500, min(1_600_000, self.tokens + rng.randint(-4000, 4000)))
        usage = self.tokens / 1_622_944

        # prefill (~60% of seconds), logged by every rank
        if rnd() < 0.6:
            new_seq = rng.randint(1, 6)
            new_tok = new_seq * rng.randint(200, 3000)
            cached = rng.randint(0, new_tok)
            body = (
                f"Prefill batch. #new-seq: {new_seq}, #new-token: {new_tok}, "
                f"#cached-token: {cached}, token usage: {usage:.2f}, "
                f"#running-req: {self.running}, #queue-req: {self.queue}, "
            )
            for r in _ranks_shuffled(rng):
                out.append(pre[r] + body)

        # decode: 1-2 log points per second (decode_log_interval=40), all 8 ranks, interleaved
        for _ in range(1 + (rnd() < 0.5)):
            thr = self.running * (35.0 + 10.0 * rnd())
            self.tokens = min(1_600_000, self.tokens + self.running * 40)
            usage = self.tokens / 1_622_944
            body = (
                f"Decode batch. #running-req: {self.running}, #token: {self.tokens}, "
                f"token usage: {usage:.2f}, cuda graph: True, "
                f"gen throughput (token/s): {thr:.2f}, #queue-req: {self.queue}, "
            )
            order = _ranks_shuffled(rng)
            for r in order:
                out.append(pre[r] + body)

            # access lines land between scheduler lines
            for _ in range(rng.randint(0, 5)):
                x = rnd() * self._ep_total
                i = 0
                while x >= self._ep_cum[i]:
                    i += 1
                self.port = 30000 + (self.port - 30000 + rng.randint(1, 40)) % 35000
                out.append(f"[{ts}] INFO:     127.0.0.1:{self.port} - {self._endpoints[i]}")

        # harmless warnings
        for p, make in _WARNINGS:
            if rnd() < p:
                out.append(make(ts, rng.randrange(NRANKS), rng))

        # every few minutes a new NCCL communicator is created on all ranks (NCCL_DEBUG=INFO)
        if self.sec >= self.next_nccl:
            self.next_nccl = self.sec + rng.randint(60, 240)
            nch = rng.choice((2, 4, 8, 16, 24))
            out.extend(_nccl_comm_setup(rng, nch, 300 + rng.randint(0, 99)))


# --------------------------------------------------------------------------------------------------
# crash ending (shape of corpus/seed/seed-sglang-tp8-oom-sigquit-logging-error.log)
# --------------------------------------------------------------------------------------------------


def ending_lines(t: datetime) -> list[str]:
    t1 = t + timedelta(seconds=1)
    ts0, ts1 = _ts(t), _ts(t1)
    sg = "/sgl-workspace/sglang/python/sglang/srt"
    py = "/usr/lib/python3.12"
    L = [
        f"[{ts0} TP3] Scheduler hit an exception: Traceback (most recent call last):",
        f'  File "{sg}/managers/scheduler.py", line 2984, in run_scheduler_process',
        "    scheduler.event_loop_overlap()",
        '  File "/usr/local/lib/python3.12/dist-packages/torch/utils/_contextlib.py", line 116, '
        "in decorate_context",
        "    return func(*args, **kwargs)",
        "           ^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{sg}/managers/scheduler.py", line 1043, in event_loop_overlap',
        "    result = self.run_batch(batch)",
        "             ^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{sg}/managers/scheduler.py", line 2012, in run_batch',
        "    ) = self.tp_worker.forward_batch_generation(model_worker_batch)",
        "        ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{sg}/managers/tp_worker.py", line 251, in forward_batch_generation',
        "    logits_output, can_run_cuda_graph = self.model_runner.forward(",
        "                                        ^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{sg}/model_executor/model_runner.py", line 1845, in forward',
        "    output = self._forward_raw(",
        "             ^^^^^^^^^^^^^^^^^",
        f'  File "{sg}/model_executor/model_runner.py", line 1896, in _forward_raw',
        "    ret = self.forward_extend(",
        "          ^^^^^^^^^^^^^^^^^^^",
        f'  File "{sg}/model_executor/model_runner.py", line 1794, in forward_extend',
        "    return self.model.forward(",
        "           ^^^^^^^^^^^^^^^^^^^",
        f'  File "{sg}/models/qwen3_moe.py", line 771, in forward',
        "    return self.logits_processor(",
        "           ^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{sg}/layers/logits_processor.py", line 339, in forward',
        "    logits = self._get_logits(pruned_states, lm_head, logits_metadata)",
        "             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{sg}/layers/logits_processor.py", line 496, in _get_logits',
        "    logits = torch.matmul(",
        "             ^^^^^^^^^^^^^",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.32 GiB. GPU 3 has a "
        "total capacity of 79.19 GiB of which 1.87 GiB is free. Including non-PyTorch memory, "
        "this process has 77.31 GiB memory in use. Of the allocated memory 72.94 GiB is allocated "
        "by PyTorch, with 1.73 GiB allocated in private pools (e.g., CUDA Graphs), and 1.12 GiB is "
        "reserved by PyTorch but unallocated. If reserved but unallocated memory is large try "
        "setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
        "documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
        "",
        f"[{ts1}] Received sigquit from a child process. It usually means the child failed.",
        "--- Logging error ---",
        "Traceback (most recent call last):",
    ]
    frames = [
        (f"{py}/logging/__init__.py", 1160, "emit", "msg = self.format(record)",
         "      ^^^^^^^^^^^^^^^^^^^"),
        (f"{py}/logging/__init__.py", 999, "format", "return fmt.format(record)",
         "       ^^^^^^^^^^^^^^^^^^"),
        (f"{py}/logging/__init__.py", 705, "format",
         "record.asctime = self.formatTime(record, self.datefmt)",
         "                 ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
        (f"{py}/logging/__init__.py", 640, "formatTime", "ct = self.converter(record.created)",
         "     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
        (f"{sg}/entrypoints/engine.py", 869, "launch_phase_sigquit_handler", "logger.error(", None),
        (f"{py}/logging/__init__.py", 1568, "error", "self._log(ERROR, msg, args, **kwargs)", None),
        (f"{py}/logging/__init__.py", 1684, "_log", "self.handle(record)", None),
        (f"{py}/logging/__init__.py", 1700, "handle", "self.callHandlers(record)", None),
        (f"{py}/logging/__init__.py", 1762, "callHandlers", "hdlr.handle(record)", None),
        (f"{py}/logging/__init__.py", 1028, "handle", "self.emit(record)", None),
        (f"{py}/logging/__init__.py", 1168, "emit", "self.flush()", None),
        (f"{py}/logging/__init__.py", 1148, "flush", "self.stream.flush()", None),
    ]
    for path, line, fn, src, caret in frames:
        L.append(f'  File "{path}", line {line}, in {fn}')
        L.append(f"    {src}")
        if caret:
            L.append(f"    {caret}")
    L += [
        "RuntimeError: reentrant call inside <_io.BufferedWriter name='<stderr>'>",
        "Call stack:",
        '  File "<frozen runpy>", line 198, in _run_module_as_main',
        '  File "<frozen runpy>", line 88, in _run_code',
        '  File "/sgl-workspace/sglang/python/sglang/launch_server.py", line 11, in <module>',
        "    launch_server(server_args)",
        f'  File "{sg}/entrypoints/http_server.py", line 1105, in launch_server',
        "    uvicorn.run(",
        f'  File "{py}/logging/__init__.py", line 1489, in info',
        "    self._log(INFO, msg, args, **kwargs)",
        "Message: '127.0.0.1:52990 - \"POST /v1/chat/completions HTTP/1.1\" 200'",
        "Arguments: ()",
        "Killed",
    ]
    return L


# --------------------------------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------------------------------


class _GzSink:
    """Compress to PATH.gz: a `gzip -1` child (runs on the other core) or Python's gzip module."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: IO[bytes] | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        exe = shutil.which("gzip")
        if exe:
            self._out = open(path, "wb")  # noqa: SIM115
            self._proc = subprocess.Popen([exe, "-1", "-c", "-n"], stdin=subprocess.PIPE,
                                          stdout=self._out)
            self._fh = self._proc.stdin
        else:
            self._fh = gzip.GzipFile(path, "wb", compresslevel=1, mtime=0)

    def write(self, data: bytes) -> None:
        assert self._fh is not None
        self._fh.write(data)

    def close(self) -> None:
        assert self._fh is not None
        self._fh.close()
        if self._proc is not None:
            rc = self._proc.wait()
            self._out.close()
            if rc != 0:
                raise RuntimeError(f"gzip exited with {rc}")


def small_path_for(out: Path) -> Path:
    name = out.name
    if name.endswith(".log"):
        return out.with_name(name[:-4] + ".small.log")
    return out.with_name(name + ".small")


def generate(
    size: int,
    out: Path,
    *,
    seed: int = 20260222,
    gz: bool = False,
    small: Path | None = None,
    small_lines: int = 2000,
) -> dict[str, object]:
    """Write a log of about `size` bytes (never less) to `out`; return a summary dict."""
    rng = random.Random(seed)
    out.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    head, t = startup_lines(rng)
    sim = ServingSim(rng, t)

    first: list[str] = []  # first `small_lines` lines, for the small version
    written = 0
    nlines = 0
    sink = _GzSink(out.with_name(out.name + ".gz")) if gz else None
    with open(out, "wb") as fh:

        def emit(lines: list[str]) -> None:
            nonlocal written, nlines
            if len(first) < small_lines:
                first.extend(lines[: small_lines - len(first)])
            data = ("\n".join(lines) + "\n").encode()
            fh.write(data)
            if sink is not None:
                sink.write(data)
            written += len(data)
            nlines += len(lines)

        emit(head)
        # the ending is ~6 KB; stop the serving section once the rest of the file fits.
        tail_est = sum(len(x) + 1 for x in ending_lines(sim.t))
        buf: list[str] = []
        buf_bytes = 0
        while written + buf_bytes + tail_est < size:
            n0 = len(buf)
            sim.second(buf)
            for i in range(n0, len(buf)):
                buf_bytes += len(buf[i]) + 1
            if buf_bytes >= CHUNK_BYTES:
                emit(buf)
                buf, buf_bytes = [], 0
        if buf:
            emit(buf)
        tail = ending_lines(sim.t)
        emit(tail)
    if sink is not None:
        sink.close()

    small = small if small is not None else small_path_for(out)
    with open(small, "w", encoding="utf-8") as fh:
        fh.write("\n".join(first) + "\n")
        fh.write("\n".join(tail) + "\n")

    return {
        "path": str(out),
        "bytes": written,
        "lines": nlines,
        "small": str(small),
        "small_lines": len(first) + len(tail),
        "gz": str(sink.path) if sink is not None else None,
        "seconds": round(time.perf_counter() - t0, 2),
        "seed": seed,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=parse_size, default=parse_size("64M"),
                    help="target size, e.g. 8M, 64M, 256M, 1G (binary units; default 64M)")
    ap.add_argument("--out", type=Path, required=True, help="output .log path")
    ap.add_argument("--gz", action="store_true", help="also write OUT.gz")
    ap.add_argument("--small", type=Path, default=None,
                    help="path of the small version (default: OUT with .small.log)")
    ap.add_argument("--small-lines", type=int, default=2000,
                    help="lines of the large log kept at the top of the small version")
    ap.add_argument("--seed", type=int, default=20260222)
    args = ap.parse_args(argv)
    info = generate(args.size, args.out, seed=args.seed, gz=args.gz, small=args.small,
                    small_lines=args.small_lines)
    print(
        f"wrote {info['path']}: {info['bytes']:,} bytes, {info['lines']:,} lines in "
        f"{info['seconds']} s (seed {info['seed']}); small version {info['small']} "
        f"({info['small_lines']} lines)" + (f"; gzip copy {info['gz']}" if info["gz"] else ""),
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
