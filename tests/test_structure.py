"""Structured multi-line bodies: tracebacks, faulthandler, C++ aborts, UCX backtraces,
torchelastic summaries, ServerArgs/Namespace dumps and WorkNCCL descriptions.

The examples keep the exact shapes these programs print (taken from real reports and from
CPython 3.11's own output); the parsers get bodies, i.e. lines with prefixes peeled.
Log lines keep their real width, hence the E501 exemption.
"""


from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer.parse.dumps import parse_cpp_abort, parse_faulthandler, parse_native_backtrace
from analyzer.parse.elastic import parse_elastic_summary
from analyzer.parse.grammars import grammar_dir
from analyzer.parse.pyrepr import parse_server_args, parse_worknccl
from analyzer.parse.tracebacks import parse_traceback


def block(text: str) -> list[str]:
    """A block as the framing stage hands it over: one string per line."""
    return text.strip("\n").split("\n")


def at(lines: list[str], index: int | None) -> str:
    assert index is not None
    return lines[index]


# -- Python tracebacks -------------------------------------------------------------------

SIMPLE = block("""
Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/vllm/worker/worker.py", line 145, in load_model
    self.model_runner.load_model()
  File "/usr/local/lib/python3.10/dist-packages/torch/nn/modules/module.py", line 1160, in to
    return self._apply(convert)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 2 has a total capacity of 14.62 GiB of which 3.31 MiB is free.
""")


def test_simple_traceback() -> None:
    r = parse_traceback(SIMPLE)
    assert r["parsed_by"] == "lark"
    [sec] = r["sections"]
    assert sec["relation"] is None and sec["header_index"] == 0
    assert r["exc_type"] == "torch.OutOfMemoryError"
    assert r["message"].startswith("CUDA out of memory. Tried to allocate 20.00 MiB")
    assert r["statement_index"] == r["final_index"] == 5
    assert [f["line"] for f in sec["frames"]] == [145, 1160]
    assert sec["frames"][0] == {
        "file": "/usr/local/lib/python3.10/dist-packages/vllm/worker/worker.py",
        "line": 145,
        "func": "load_model",
        "index": 1,
        "source": "self.model_runner.load_model()",
    }
    assert r["logging_error"] is False and r["groups"] == []


DIRECT_CAUSE = block("""
Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py", line 157, in _create_tcp_store
    store = TCPStore(
torch.distributed.DistNetworkError: The client socket has timed out after 60s while trying to connect to (10.0.0.1, 29400).

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/usr/local/bin/torchrun", line 8, in <module>
    sys.exit(main())
  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py", line 253, in create_backend
    store = _create_tcp_store(params)
  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py", line 181, in _create_tcp_store
    raise RendezvousConnectionError(
torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d store has failed. See inner exception for details.
""")


def test_direct_cause_chain_states_the_first_exception() -> None:
    r = parse_traceback(DIRECT_CAUSE)
    first, second = r["sections"]
    assert (first["relation"], second["relation"]) == (None, "cause")
    assert at(DIRECT_CAUSE, r["statement_index"]).startswith(
        "torch.distributed.DistNetworkError: The client socket has timed out"
    )
    assert r["exc_type"] == "torch.distributed.DistNetworkError"
    assert (
        r["final_exc_type"] == "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError"
    )
    assert r["final_index"] == len(DIRECT_CAUSE) - 1
    assert len(second["frames"]) == 3 and second["header_index"] == 7


# CUDA errors continue the message over several unindented lines; torch adds two blank
# lines before the separator, and 3.11 prints caret lines.
DURING_HANDLING = block("""
  File "/opt/conda/lib/python3.10/site-packages/sgl_kernel/moe.py", line 58, in moe_fused_gate
    return torch.ops.sgl_kernel.moe_fused_gate.default(
  File "/opt/conda/lib/python3.10/site-packages/torch/_ops.py", line 756, in __call__
    return self._op(*args, **kwargs)
           ^^^^^^^^^^^^^^^^^^^^^^^^^
RuntimeError: CUDA error: operation not permitted when stream is capturing
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1
Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.


During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/opt/conda/lib/python3.10/site-packages/sglang/srt/model_executor/cuda_graph_runner.py", line 336, in __init__
    self.capture()
    ~~~~~~~~~~~~^^
Exception: Capture cuda graph failed: CUDA error: operation not permitted when stream is capturing
""")


def test_during_handling_chain_and_headerless_start() -> None:
    r = parse_traceback(DURING_HANDLING)
    first, second = r["sections"]
    assert first["header_index"] is None  # the fragment starts at a frame
    assert second["relation"] == "context"
    assert r["statement_index"] == 5
    assert r["exc_type"] == "RuntimeError"
    assert r["message"].splitlines() == [
        "CUDA error: operation not permitted when stream is capturing",
        "CUDA kernel errors might be asynchronously reported at some other API call, "
        "so the stacktrace below might be incorrect.",
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
    ]
    assert r["final_exc_type"] == "Exception"
    assert second["frames"][0]["source"] == "self.capture()"


def test_separator_without_blank_lines() -> None:
    lines = block("""
Traceback (most recent call last):
  File "a.py", line 1, in <module>
KeyError: 'x'
During handling of the above exception, another exception occurred:
Traceback (most recent call last):
  File "a.py", line 3, in <module>
ZeroDivisionError: division by zero
""")
    r = parse_traceback(lines)
    assert [s["relation"] for s in r["sections"]] == [None, "context"]
    assert r["message"] == "'x'" and r["final_exc_type"] == "ZeroDivisionError"


def test_fragment_starting_at_source_lines() -> None:
    lines = block("""
    return forward_call(*args, **kwargs)
  File "/workspace/vllm/vllm/_custom_ops.py", line 106, in rms_norm
    vllm_ops.rms_norm(out, input, weight, epsilon)
NameError: name 'vllm_ops' is not defined
""")
    r = parse_traceback(lines)
    assert r["statement_index"] == 3 and r["exc_type"] == "NameError"
    assert [f["func"] for f in r["sections"][0]["frames"]] == ["rms_norm"]


def test_fragment_that_is_only_the_exception_line() -> None:
    r = parse_traceback(
        ["torch.AcceleratorError: CUDA error: an illegal memory access was encountered"]
    )
    assert r["statement_index"] == 0 and r["exc_type"] == "torch.AcceleratorError"


def test_lost_indentation_and_windows_paths() -> None:
    lines = block(r"""
Traceback (most recent call last):
File "C:\Users\dev\vllm\vllm\worker\model_runner.py", line 1455, in capture_model
graph_runner.capture(**capture_inputs)
File "C:\Users\dev\vllm\vllm\worker\model_runner.py", line 1690, in capture
torch.cuda.synchronize()
RuntimeError: CUDA error: operation failed due to a previous error during capture
""")
    r = parse_traceback(lines)
    frames = r["sections"][0]["frames"]
    assert frames[0]["file"] == r"C:\Users\dev\vllm\vllm\worker\model_runner.py"
    assert [f["source"] for f in frames] == [
        "graph_runner.capture(**capture_inputs)",
        "torch.cuda.synchronize()",
    ]
    assert r["statement_index"] == 5 and r["exc_type"] == "RuntimeError"


def test_raise_source_lines_are_not_exceptions() -> None:
    lines = block("""
Traceback (most recent call last):
  File "/x/model_runner.py", line 1612, in init_memory_pool
    raise RuntimeError(
RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.
""")
    r = parse_traceback(lines)
    assert r["statement_index"] == 3


def test_recursion_with_repeated_frames() -> None:
    lines = block("""
Traceback (most recent call last):
  File "/tmp/gen.py", line 33, in <module>
    try: rec(0)
         ^^^^^^
  File "/tmp/gen.py", line 32, in rec
    def rec(n): return rec(n+1)
                       ^^^^^^^^
  [Previous line repeated 996 more times]
RecursionError: maximum recursion depth exceeded
""")
    r = parse_traceback(lines)
    frames = r["sections"][0]["frames"]
    assert frames[-1]["repeated"] == 996
    assert r["statement_index"] == 8 and r["exc_type"] == "RecursionError"


def test_prefixed_header_and_bare_exception() -> None:
    lines = block("""
Scheduler hit an exception: Traceback (most recent call last):
  File "/sgl/scheduler.py", line 2981, in run_scheduler_process
    scheduler.event_loop()
KeyboardInterrupt
""")
    r = parse_traceback(lines)
    assert r["sections"][0]["header_index"] == 0
    assert r["exc_type"] == "KeyboardInterrupt" and r["message"] is None


def test_qualified_exception_types() -> None:
    for exc_line, exc_type in [
        (
            "ray.exceptions.RayTaskError(ActorDiedError): ray::TaskRunner.run() (pid=1)",
            "ray.exceptions.RayTaskError(ActorDiedError)",
        ),
        (
            "torch._dynamo.exc.InternalTorchDynamoError: RuntimeError: Cannot call x",
            "torch._dynamo.exc.InternalTorchDynamoError",
        ),
        (
            "subprocess.CalledProcessError: Command '['ninja']' returned non-zero exit status 1.",
            "subprocess.CalledProcessError",
        ),
        ("SystemExit: 1", "SystemExit"),
        ("AssertionError", "AssertionError"),
        ("_queue.Empty", "_queue.Empty"),
        ("socket.timeout: timed out", "socket.timeout"),
    ]:
        r = parse_traceback(['  File "x.py", line 1, in f', exc_line])
        assert r["exc_type"] == exc_type, exc_line
        assert r["statement_index"] == 1


def test_ray_task_error_with_embedded_remote_frames() -> None:
    lines = block("""
Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/ray/_private/worker.py", line 930, in get_objects
    raise value.as_instanceof_cause()
ray.exceptions.RayTaskError(ActorDiedError): ray::TaskRunner.run() (pid=20877, ip=10.0.255.4)
  File "/mnt/verl/trainer/main_ppo.py", line 241, in run
    trainer.fit()
ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.
""")
    r = parse_traceback(lines)
    assert r["statement_index"] == 3
    assert r["final_exc_type"] == "ray.exceptions.ActorDiedError" and r["final_index"] == 6


def test_non_exception_words_are_not_statements() -> None:
    lines = block("""
Train:   8%|▊         | 40/500 [15:18<2:32:54, 19.94s/it]
Killed
INFO:     10.0.0.42:54639 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error
""")
    r = parse_traceback(lines)
    assert r["statement_index"] is None and r["sections"] == []


def test_child_failed_error_swallows_the_elastic_summary() -> None:
    lines = block("""
Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/launcher/api.py", line 269, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2025-03-03_11:48:02
  rank      : 1 (local_rank: 1)
  traceback : Traceback (most recent call last):
    File "/w/train.py", line 3, in main
      boom()
  RuntimeError: boom
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2025-03-03_11:48:02
  exitcode  : -6 (pid: 8831)
============================================================
""")
    r = parse_traceback(lines)
    [sec] = r["sections"]
    assert sec["exc_type"].endswith("ChildFailedError") and sec["exc_index"] == 3
    assert sec["message"].splitlines()[1] == "train.py FAILED"
    assert sec["message"].endswith("=" * 60)


# -- ExceptionGroup ----------------------------------------------------------------------

TASKGROUP = block("""
  + Exception Group Traceback (most recent call last):
  |   File "/tmp/gen2.py", line 13, in <module>
  |     asyncio.run(main())
  |   File "/root/.pyenv/versions/3.11.7/lib/python3.11/asyncio/taskgroups.py", line 145, in __aexit__
  |     raise me from None
  | ExceptionGroup: unhandled errors in a TaskGroup (2 sub-exceptions)
  +-+---------------- 1 ----------------
    | Traceback (most recent call last):
    |   File "/tmp/gen2.py", line 4, in bad
    |     raise ValueError("one")
    | ValueError: one
    +---------------- 2 ----------------
    | Traceback (most recent call last):
    |   File "/tmp/gen2.py", line 6, in bad
    |     {}["x"]
    |     ~~^^^^^
    | KeyError: 'x'
    |
    | The above exception was the direct cause of the following exception:
    |
    | Traceback (most recent call last):
    |   File "/tmp/gen2.py", line 8, in bad
    |     raise RuntimeError("two") from e
    | RuntimeError: two
    +------------------------------------
""")


def test_exception_group_members() -> None:
    r = parse_traceback(TASKGROUP)
    [top] = r["sections"]
    assert top["exc_type"] == "ExceptionGroup" and top["header_index"] == 0
    assert [f["func"] for f in top["frames"]] == ["<module>", "__aexit__"]
    assert r["statement_index"] == 5
    members = r["groups"]
    assert [(m["path"], m["exc_type"], m["relation"]) for m in members] == [
        ("1", "ValueError", None),
        ("2", "KeyError", None),
        ("2", "RuntimeError", "cause"),
    ]
    assert all(m["depth"] == 2 for m in members)
    assert r["group_statement_index"] == 10
    assert members[1]["frames"][0]["source"] == '{}["x"]'


def test_nested_exception_group() -> None:
    lines = block("""
  + Exception Group Traceback (most recent call last):
  |   File "/tmp/gen.py", line 26, in <module>
  |     h()
  | ExceptionGroup: eg (3 sub-exceptions)
  +-+---------------- 1 ----------------
    | ValueError: a
    +---------------- 2 ----------------
    | ExceptionGroup: nested (2 sub-exceptions)
    +-+---------------- 1 ----------------
      | TypeError: b
      +---------------- 2 ----------------
      | KeyError: 'c'
      +------------------------------------
    +---------------- 3 ----------------
    | OSError: d
    +------------------------------------
""")
    r = parse_traceback(lines)
    got = [(m["path"], m["depth"], m["exc_type"], m["exc_index"]) for m in r["groups"]]
    assert got == [
        ("1", 2, "ValueError", 5),
        ("2", 2, "ExceptionGroup", 7),
        ("2.1", 3, "TypeError", 9),
        ("2.2", 3, "KeyError", 11),
        ("3", 2, "OSError", 14),
    ]
    assert r["exc_type"] == "ExceptionGroup" and r["statement_index"] == 3


# -- logging errors and signal handlers ---------------------------------------------------

LOGGING_ERROR = block("""
--- Logging error ---
Traceback (most recent call last):
  File "/usr/lib/python3.12/logging/__init__.py", line 1160, in emit
    msg = self.format(record)
          ^^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3.12/logging/__init__.py", line 640, in formatTime
    ct = self.converter(record.created)
         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/root/sglang/python/sglang/srt/entrypoints/engine.py", line 869, in launch_phase_sigquit_handler
    logger.error(
  File "/usr/lib/python3.12/logging/__init__.py", line 1568, in error
    self._log(ERROR, msg, args, **kwargs)
  File "/usr/lib/python3.12/logging/__init__.py", line 1148, in flush
    self.stream.flush()
RuntimeError: reentrant call inside <_io.BufferedWriter name='<stderr>'>
Call stack:
  File "<frozen runpy>", line 198, in _run_module_as_main
  File "/root/sglang/python/sglang/launch_server.py", line 11, in <module>
    launch_server(server_args)
  File "/root/sglang/python/sglang/srt/entrypoints/engine.py", line 845, in _launch_subprocesses
    logger.info(f"Waiting for rank {i} scheduler to be ready")
Message: 'Waiting for rank 3 scheduler to be ready'
Arguments: ()
""")


def test_logging_error_with_sigquit_handler() -> None:
    r = parse_traceback(LOGGING_ERROR)
    assert r["logging_error"] is True
    assert r["logged_message"] == "'Waiting for rank 3 scheduler to be ready'"
    assert r["logged_args"] == "()"
    assert r["signal_handler_frames"] == ["launch_phase_sigquit_handler"]
    [sec] = r["sections"]
    assert r["exc_type"] == "RuntimeError" and r["statement_index"] == 14
    assert len(sec["frames"]) == 5  # "Call stack:" frames are kept apart
    assert [f["func"] for f in r["call_stack"]] == [
        "_run_module_as_main",
        "<module>",
        "_launch_subprocesses",
    ]
    assert "Message" not in {s["exc_type"] for s in r["sections"]}


def test_generic_handler_interrupting_a_line_is_a_signal_handler() -> None:
    lines = block("""
Traceback (most recent call last):
  File "/srv/main.py", line 10, in loop
    time.sleep(1)
  File "/srv/main.py", line 3, in shutdown_handler
    raise SystemExit(0)
SystemExit: 0
""")
    assert parse_traceback(lines)["signal_handler_frames"] == ["shutdown_handler"]
    called = [
        '  File "/srv/main.py", line 10, in loop',
        "    self.shutdown_handler()",
        '  File "/srv/main.py", line 3, in shutdown_handler',
        "SystemExit: 0",
    ]
    assert parse_traceback(called)["signal_handler_frames"] == []
    named = [
        '  File "/a.py", line 1, in signature_handler',
        "    x()",
        'File "/a.py", line 2, in _signal_handler',
    ]
    assert parse_traceback(named)["signal_handler_frames"] == ["_signal_handler"]


# -- faulthandler --------------------------------------------------------------------------

FAULTHANDLER = block("""
Fatal Python error: Segmentation fault

Thread 0x00007ee0b4dff640 (most recent call first):
  File "/usr/lib/python3.12/threading.py", line 359 in wait
  File "/usr/local/lib/python3.12/dist-packages/tqdm/_monitor.py", line 60 in run
  File "/usr/lib/python3.12/threading.py", line 1032 in _bootstrap

Current thread 0x00007f95ca716740 (most recent call first):
  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/distributed/device_communicators/pynccl_wrapper.py", line 373 in ncclAllReduce
  File "<frozen importlib._bootstrap>", line ??? in _call_with_frames_removed

Extension modules: numpy.core._multiarray_umath, torch._C, torch._C._fft (total: 3)
""")


def test_faulthandler_dump() -> None:
    r = parse_faulthandler(FAULTHANDLER)
    assert r["parsed_by"] == "lark"
    assert r["error"] == "Segmentation fault" and r["error_index"] == 0
    first, current = r["threads"]
    assert (first["id"], first["current"], first["index"]) == ("0x00007ee0b4dff640", False, 2)
    assert [f["func"] for f in first["frames"]] == ["wait", "run", "_bootstrap"]
    assert current["current"] is True and current["id"] == "0x00007f95ca716740"
    assert current["frames"][0]["line"] == 373
    assert current["frames"][1]["line"] == 0  # faulthandler prints "???"


def test_faulthandler_error_glued_to_a_progress_bar_or_quoted() -> None:
    bar = "Capturing batches (bs=448 avail_mem=87.41 GB):   8%|███▋     Fatal Python error: Aborted"
    r = parse_faulthandler([bar, "", "Thread 0x00007f3e05ffe640 (most recent call first):"])
    assert r["error"] == "Aborted" and r["error_index"] == 0
    r = parse_faulthandler(
        ['Fatal Python error: "Aborted', "", "Current thread 0x1 (most recent call first):"]
    )
    assert r["error"] == "Aborted" and r["threads"][0]["current"] is True
    # the frame line being written when the abort hit, interleaved with the header
    glued = '  File "/opt/conda/lib/python3.10/site-packages/torch/utils/_contextlib.pyFatal Python error: "Aborted, line '
    r = parse_faulthandler(
        [glued, "", "120Thread 0x in 00007f3e05ffe640decorate_context (most recent call first):"]
    )
    assert r["error"] == "Aborted" and r["error_index"] == 0 and r["parsed_by"] == "lark"


# -- C++ aborts and native backtraces ---------------------------------------------------

CPP_ABORT = block("""
terminate called after throwing an instance of 'c10::DistBackendError'
  what():  [PG ID 0 PG GUID 0(default_pg) Rank 5] Process group watchdog thread terminated with exception: [Rank 5] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2210, OpType=ALLREDUCE, NumelIn=117440512, NumelOut=117440512, Timeout(ms)=1800000) ran for 1800412 milliseconds before timing out.
Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:760 (most recent call first):
frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57 (0x7f3a2c5b1897 in /usr/local/lib/python3.10/dist-packages/torch/lib/libc10.so)
frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, std::ratio<1l, 1000l> > >) + 0x1d2 (0x7f39e1d12345 in /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)
frame #2: <unknown function> + 0xd6df4 (0x7f3a2c0d6df4 in /lib/x86_64-linux-gnu/libstdc++.so.6)
frame #3: clone + 0x43 (0x7f3a2e40e133 in /lib/x86_64-linux-gnu/libc.so.6)
""")


def test_cpp_abort() -> None:
    r = parse_cpp_abort(CPP_ABORT)
    assert r["parsed_by"] == "lark"
    assert r["exc_type"] == "c10::DistBackendError" and r["terminate_index"] == 0
    assert r["what"].startswith("[PG ID 0 PG GUID 0(default_pg) Rank 5] Process group watchdog")
    assert r["what_index"] == 1
    assert r["raised_from"] == (
        "checkTimeout at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:760"
    )
    assert r["raised_index"] == 2
    assert [f["frame_no"] for f in r["frames"]] == [0, 1, 2, 3]
    assert r["frames"][0] == {
        "index": 3,
        "frame_no": 0,
        "func": "c10::Error::Error(c10::SourceLocation, std::string)",
        "offset": "0x57",
        "address": "0x7f3a2c5b1897",
        "library": "/usr/local/lib/python3.10/dist-packages/torch/lib/libc10.so",
    }
    assert r["frames"][1]["func"].endswith("std::ratio<1l, 1000l> > >)")
    assert r["frames"][2]["func"] == "<unknown function>"


def test_cpp_abort_multiline_what() -> None:
    lines = block("""
terminate called after throwing an instance of 'std::runtime_error'
  what():  NCCL error: unhandled system error, NCCL version 2.14.3
ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.
Last error:
NET/IB : Got completion from peer 10.0.0.2<48598> with error 12, opcode 0, len 0, vendor err 129
""")
    r = parse_cpp_abort(lines)
    assert r["exc_type"] == "std::runtime_error"
    assert r["what"].splitlines()[0] == "NCCL error: unhandled system error, NCCL version 2.14.3"
    assert r["what"].splitlines()[-1].startswith("NET/IB : Got completion from peer")
    assert r["frames"] == [] and r["raised_from"] is None


UCX = block("""
[node-0:319  :0:319] Caught signal 11 (Segmentation fault: address not mapped to object at address 0x8)
==== backtrace (tid:    319) ====
 0 0x0000000000042520 __sigaction()  ???:0
 1 0x0000000000049b8a ncclMemoryPoolAlloc<ncclProxyOp>()  /dvs/p4/build/sw/gpgpu/nccl/gitfusion/stable/src/include/utils.h:280
 2 0x0000000000049b8a addProxyOpIfNeeded()  /dvs/p4/build/sw/gpgpu/nccl/gitfusion/stable/src/enqueue.cc:180
 3 0x000000000004f5bd ncclLaunchPrepare()  /dvs/p4/build/sw/gpgpu/nccl/gitfusion/stable/src/enqueue.cc:844
=================================
""")


def test_native_backtrace() -> None:
    r = parse_native_backtrace(UCX)
    assert r["parsed_by"] == "lark" and r["tid"] == 319
    assert r["signal"] == 11 and r["signal_text"].startswith("Segmentation fault")
    assert [f["frame_no"] for f in r["frames"]] == [0, 1, 2, 3]
    assert r["frames"][0] == {
        "index": 2,
        "frame_no": 0,
        "address": "0x0000000000042520",
        "func": "__sigaction()",
        "location": "???:0",
    }
    assert r["crash_index"] == 3
    assert UCX[r["crash_index"]].startswith(" 1 0x0000000000049b8a ncclMemoryPoolAlloc")


def test_native_backtrace_skips_abort_machinery() -> None:
    lines = block("""
==== backtrace (tid:1234) ====
 0 0x0000000000001111 ucs_debug_print_backtrace()  ???:0
 1 0x0000000000002222 raise()  ???:0
 2 0x0000000000003333 abort()  ???:0
 3 0x0000000000004444 c10d::ProcessGroupNCCL::ncclCommWatchdog()  ???:0
""")
    r = parse_native_backtrace(lines)
    assert r["tid"] == 1234 and r["crash_index"] == 4


# -- torchelastic summary --------------------------------------------------------------------

ELASTIC = block("""
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2025-03-03_11:48:02
  host      : node-0
  rank      : 3 (local_rank: 3)
  exitcode  : -6 (pid: 8831)
  error_file: <N/A>
  traceback : Signal 6 (SIGABRT) received by PID 8831
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2025-03-03_11:48:01
  host      : node-0
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 8828)
  error_file: /tmp/torchelastic_x/attempt_0/0/error.json
  traceback : Traceback (most recent call last):
    File "/usr/lib/python3/dist-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper
      return f(*args, **kwargs)
    File "/w/train.py", line 10, in main
      raise RuntimeError("boom")
  RuntimeError: boom

============================================================
""")


def test_elastic_summary() -> None:
    r = parse_elastic_summary(ELASTIC)
    assert r["parsed_by"] == "lark" and r["binary"] == "train.py" and not r["truncated"]
    [failure] = r["failures"]
    assert failure == {
        "rank": 3,
        "local_rank": 3,
        "exitcode": -6,
        "pid": 8831,
        "host": "node-0",
        "time": "2025-03-03_11:48:02",
        "signal": "SIGABRT",
        "error_file": None,
        "traceback": "Signal 6 (SIGABRT) received by PID 8831",
        "index": 4,
    }
    root = r["root_cause"]
    assert (root["rank"], root["exitcode"], root["pid"], root["signal"]) == (0, 1, 8828, None)
    assert root["error_file"] == "/tmp/torchelastic_x/attempt_0/0/error.json"
    assert root["traceback"].splitlines() == [
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3/dist-packages/torch/distributed/elastic/multiprocessing/'
        'errors/__init__.py", line 355, in wrapper',
        "    return f(*args, **kwargs)",
        '  File "/w/train.py", line 10, in main',
        '    raise RuntimeError("boom")',
        "RuntimeError: boom",
    ]
    # the embedded traceback parses as one
    tb = parse_traceback(root["traceback"].splitlines())
    assert tb["exc_type"] == "RuntimeError"


def test_elastic_no_other_failures() -> None:
    lines = block("""
============================================================
/home/user/ms-swift/train_embedding_ms_swift.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2025-10-26_04:09:30
  host      : node-0
  rank      : 0 (local_rank: 0)
  exitcode  : -6 (pid: 2904068)
  error_file: <N/A>
  traceback : Signal 6 (SIGABRT) received by PID 2904068
============================================================
""")
    r = parse_elastic_summary(lines)
    assert r["binary"] == "/home/user/ms-swift/train_embedding_ms_swift.py"
    assert r["failures"] == [] and r["root_cause"]["signal"] == "SIGABRT"
    assert r["root_cause"]["index"] == 7 and not r["truncated"]


@pytest.mark.parametrize("cut", [1, 2, 4, 6, 8, 10, 13, 15, 18, 20])
def test_elastic_summary_cut_off_anywhere(cut: int) -> None:
    r = parse_elastic_summary(ELASTIC[:cut])
    assert r["parsed_by"] == "lark" and r["truncated"]
    if cut >= 2:
        assert r["binary"] == "train.py"
    if cut >= 9:
        assert r["failures"][0]["exitcode"] == -6
    if cut >= 15:
        assert r["root_cause"] is not None and r["root_cause"]["index"] == 13


def test_elastic_summary_cut_mid_line() -> None:
    r = parse_elastic_summary([*ELASTIC[:7], "  rank      : 3 (local_"])
    assert r["failures"][0]["rank"] == 3 and r["failures"][0]["host"] == "node-0"


def test_elastic_old_layout() -> None:
    lines = block("""
***************************************
            train.py FAILED
=======================================
Root Cause:
[0]:
  time: 2021-06-07_10:23:11
  rank: 1 (local_rank: 1)
  exitcode: 1 (pid: 2137)
  error_file: <N/A>
  msg: "Process failed with exitcode 1"
=======================================
Other Failures:
  <NO_OTHER_FAILURES>
***************************************
""")
    r = parse_elastic_summary(lines)
    assert r["binary"] == "train.py" and not r["truncated"]
    assert r["root_cause"]["rank"] == 1 and r["root_cause"]["traceback"] == (
        '"Process failed with exitcode 1"'
    )


# -- repr dumps ----------------------------------------------------------------------------------


def test_server_args() -> None:
    text = (
        "ServerArgs(model_path='/m', tp_size=4, mem_fraction_static=0.88, "
        "json_model_override_args='{}', lora_paths=None, enable_x=False, "
        "cuda_graph_bs=[1, 2, 4], dist_init_addr=None, load_format=<LoadFormat.AUTO: 'auto'>, "
        "download_dir=PosixPath('/x'), sizes=(1, 2), extra={'a': [1, {'b': True}]}, "
        'eps=1e-05, neg=-1, inf_val=inf, dtype=torch.bfloat16, quoted="it\'s")'
    )
    assert parse_server_args(text) == {
        "model_path": "/m",
        "tp_size": 4,
        "mem_fraction_static": 0.88,
        "json_model_override_args": "{}",
        "lora_paths": None,
        "enable_x": False,
        "cuda_graph_bs": [1, 2, 4],
        "dist_init_addr": None,
        "load_format": "<LoadFormat.AUTO: 'auto'>",
        "download_dir": "PosixPath('/x')",
        "sizes": [1, 2],
        "extra": {"a": [1, {"b": True}]},
        "eps": 1e-05,
        "neg": -1,
        "inf_val": float("inf"),
        "dtype": "torch.bfloat16",
        "quoted": "it's",
    }


def test_server_args_truncated() -> None:
    text = "ServerArgs(model_path='/data/models/Kimi', tp_size=8, mem_fraction_static=0.55, tokenizer_mode='au"
    assert parse_server_args(text) == {
        "model_path": "/data/models/Kimi",
        "tp_size": 8,
        "mem_fraction_static": 0.55,
    }
    assert parse_server_args("ServerArgs(model_path='/m', cuda_graph_bs=[1, 2, 4") == {
        "model_path": "/m"
    }
    assert parse_server_args("ServerArgs(model_pa") == {}


def test_namespace_and_non_default_args() -> None:
    ns = (
        "Namespace(subparser='serve', model_tag='Qwen/Qwen2.5-1.5B-Instruct', config='', "
        "host=None, port=8000, dispatch_function=<function ServeSubcommand.cmd at 0x7f2c>)"
    )
    r = parse_server_args(ns)
    assert r["port"] == 8000 and r["host"] is None and r["config"] == ""
    assert r["dispatch_function"] == "<function ServeSubcommand.cmd at 0x7f2c>"
    nd = "{'model_tag': 'google/gemma-3-270m', 'model': 'google/gemma-3-270m'}"
    assert parse_server_args(nd) == {
        "model_tag": "google/gemma-3-270m",
        "model": "google/gemma-3-270m",
    }
    # the text may still carry its label
    assert parse_server_args("non-default args: " + nd)["model"] == "google/gemma-3-270m"
    assert parse_server_args("server_args=ServerArgs(tp_size=2)") == {"tp_size": 2}


def test_worknccl() -> None:
    text = (
        "WorkNCCL(SeqNum=2210, OpType=ALLREDUCE, NumelIn=117440512, NumelOut=117440512, "
        "Timeout(ms)=1800000) ran for 1800412 milliseconds before timing out."
    )
    assert parse_worknccl(text) == {
        "SeqNum": 2210,
        "OpType": "ALLREDUCE",
        "NumelIn": 117440512,
        "NumelOut": 117440512,
        "Timeout(ms)": 1800000,
        "ran_for_ms": 1800412,
        "parsed_by": "lark",
    }
    old = "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=BROADCAST, TensorShape=[12, 4], Timeout(ms)=60000) ran for 60123 milliseconds before timing out."
    r = parse_worknccl(old)
    assert r["TensorShape"] == [12, 4] and r["ran_for_ms"] == 60123


def test_worknccl_truncated() -> None:
    cut = "WorkNCCL(SeqNum=4486, OpType=ALLTOALL, NumelIn=46684160, NumelOut=46684160, Timeo"
    r = parse_worknccl(cut)
    assert r == {
        "SeqNum": 4486,
        "OpType": "ALLTOALL",
        "NumelIn": 46684160,
        "NumelOut": 46684160,
        "ran_for_ms": None,
        "parsed_by": "lark",
    }
    r = parse_worknccl("WorkNCCL(SeqNum=1, OpType=_REDUCE_SCATTER_BASE, Timeout(ms)=600000) ran f")
    assert r["OpType"] == "_REDUCE_SCATTER_BASE" and r["ran_for_ms"] is None


# -- robustness and speed ------------------------------------------------------------------------


def test_damaged_line_is_demoted_not_fatal() -> None:
    lines = block("""
Traceback (most recent call last):
  File "/opt/conda/lib/python3.10/site-packages/torch/utils/_contextlib.py
  File   File ""/opt/x.py/opt/y.py""
  File "/opt/conda/lib/python3.10/site-packages/torch/_ops.py", line 829, in __call__
    return self._op(*args, **kwargs)
RuntimeError: boom
""")
    r = parse_traceback(lines)
    assert r["parsed_by"] == "lark"
    assert r["statement_index"] == 5
    assert [f["index"] for f in r["sections"][0]["frames"]] == [3]


def _seconds(fn: Callable[[], object]) -> float:
    """Best of three runs: the least noisy figure on a shared machine."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _grows_linearly(make: Callable[[int], list[str]], n: int) -> None:
    """A complexity guard, not a speed target: 4x the input may cost at most ~9x the time
    (linear: 4x; a quadratic slip: 16x), whatever the machine's speed or load."""
    small, big = make(n), make(4 * n)
    parse_traceback(small[:10])  # build the parser outside the timing
    t_small = max(_seconds(lambda: parse_traceback(small)), 0.005)
    t_big = _seconds(lambda: parse_traceback(big))
    assert t_big < 9 * t_small, (t_small, t_big)


def _recursion(n: int) -> list[str]:
    frame = [
        '  File "/usr/lib/python3.12/site-packages/pkg/mod.py", line 12, in rec',
        "    return rec(n + 1)",
    ]
    return ["Traceback (most recent call last):", *frame * n, "RecursionError: too deep"]


def test_long_traceback_is_parsed_whole_and_in_linear_time() -> None:
    r = parse_traceback(_recursion(2500))
    assert len(r["sections"][0]["frames"]) == 2500 and r["statement_index"] == 5001
    _grows_linearly(_recursion, 600)


def test_many_damaged_lines_stay_linear() -> None:
    def damaged(n: int) -> list[str]:
        return ['  File "/x.py' for _ in range(n)]

    assert parse_traceback(damaged(3000))["sections"] == []
    _grows_linearly(damaged, 750)


def test_grammar_dir() -> None:
    assert (grammar_dir() / "traceback.lark").is_file()


PARSERS = [
    parse_traceback,
    parse_faulthandler,
    parse_cpp_abort,
    parse_native_backtrace,
    parse_elastic_summary,
]

_LINE_PIECES = st.sampled_from(
    [
        "Traceback (most recent call last):",
        '  File "/x.py", line 3, in f',
        'File "/x.py", line 3 in f',
        "    ^^^^",
        "ValueError: x",
        "KeyError",
        "",
        "  | ",
        "  + Exception Group Traceback (most recent call last):",
        "  +-+---------------- 1 ----------------",
        "    +------------------------------------",
        "The above exception was the direct cause of the following exception:",
        "During handling of the above exception, another exception occurred:",
        "--- Logging error ---",
        "Call stack:",
        "Message: 'x'",
        "Fatal Python error: Aborted",
        "Thread 0x0000 (most recent call first):",
        "terminate called after throwing an instance of 'c10::Error'",
        "  what():  x",
        "Exception raised from f at a.cpp:1 (most recent call first):",
        "frame #0: f + 0x1 (0x2 in /l.so)",
        "==== backtrace (tid: 1) ====",
        " 0 0x00 f()  a:1",
        "[0]:",
        "  rank      : 3 (local_rank: 3)",
        "  exitcode  : -6 (pid: 1)",
        "============================================================",
        "Root Cause (first observed failure):",
        "x FAILED",
    ]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.text(max_size=40), _LINE_PIECES), max_size=30))
def test_parsers_never_raise(lines: list[str]) -> None:
    for parse in PARSERS:
        result = parse(lines)
        assert result["parsed_by"] in ("lark", "fallback")
    for text in lines:
        assert isinstance(parse_server_args(text), dict)
        assert isinstance(parse_worknccl(text), dict)
    joined = "".join(lines)
    parse_server_args("ServerArgs(" + joined)
    parse_worknccl("WorkNCCL(" + joined)


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="()[]{}'\",=:<>. aZ_09-\\\n", max_size=60))
def test_repr_parsers_never_raise(text: str) -> None:
    assert isinstance(parse_server_args("ServerArgs(" + text), dict)
    assert isinstance(parse_server_args("{" + text), dict)
    assert isinstance(parse_worknccl("WorkNCCL(" + text), dict)


# -- the shared corpus, where present -------------------------------------------------------------

SHARED_CORPUS = Path("/work/shared/corpus")


@pytest.mark.skipif(not SHARED_CORPUS.is_dir(), reason="shared corpus not mounted")
def test_shared_corpus_blocks() -> None:
    seed = (SHARED_CORPUS / "seed/seed-sglang-tp8-oom-sigquit-logging-error.log").read_text()
    lines = seed.splitlines()
    start = next(i for i, s in enumerate(lines) if s == "--- Logging error ---")
    end = next(i for i, s in enumerate(lines) if s.startswith("Arguments:"))
    r = parse_traceback(lines[start : end + 1])
    assert r["logging_error"] and r["signal_handler_frames"] == ["launch_phase_sigquit_handler"]
    ucx = SHARED_CORPUS / "sglang/sglang-nccl-segfault-during-capture-peer-gloo-closed.log"
    lines = ucx.read_text().splitlines()
    r = parse_native_backtrace(lines[:8])
    assert "ncclMemoryPoolAlloc" in lines[r["crash_index"]]


def _plain(value: object) -> bool:
    """JSON-shaped: no lark Token or Tree may leak into a result."""
    if type(value) in (str, int, float, bool, type(None)):
        return True
    if type(value) is list:
        return all(_plain(v) for v in value)
    if type(value) is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    return False


def test_results_are_plain_data() -> None:
    for lines in (SIMPLE, DIRECT_CAUSE, DURING_HANDLING, TASKGROUP, LOGGING_ERROR):
        assert _plain(parse_traceback(lines))
    assert _plain(parse_faulthandler(FAULTHANDLER))
    assert _plain(parse_cpp_abort(CPP_ABORT))
    assert _plain(parse_native_backtrace(UCX))
    assert _plain(parse_elastic_summary(ELASTIC))
    assert _plain(parse_server_args("ServerArgs(a='x', b=[1, (2, 3)], c={'k': P(1)}, d=<X>)"))
    assert _plain(parse_worknccl("WorkNCCL(SeqNum=1, TensorShape=[1, 2]) ran for 5 milliseconds"))


# ----------------------------------------------------------------------- the row cache
_SEED_LINES = (Path(__file__).resolve().parent.parent / "corpus" / "seed"
               / "seed-sglang-tp8-oom-sigquit-logging-error.log").read_text().splitlines()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_SEED_LINES), min_size=1, max_size=60))
def test_cached_rows_equal_a_fresh_parse(lines: list[str]) -> None:
    """Rows come from a per-line cache; in any order and with repeats they are the rows a
    fresh parse of the same lines gives (the line grammar is context-free per line)."""
    from analyzer.parse import rows

    parser = rows.dump_parser()
    assert rows.cached_rows(parser, lines) == rows.parse_lines(parser, lines)
    assert rows.cached_rows(parser, lines) == rows.parse_lines(parser, lines)  # warm


def test_repeated_lines_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from analyzer.parse import rows

    parser = rows.dump_parser()
    monkeypatch.setitem(rows.ROW_CACHES, id(parser), {})
    seen: list[int] = []
    real = rows.parse_lines
    monkeypatch.setattr(rows, "parse_lines",
                        lambda p, lines: seen.append(len(lines)) or real(p, lines))
    frame = '  File "/srv/x.py", line 3, in f'
    rows.cached_rows(parser, [frame, "    g()"] * 500)
    rows.cached_rows(parser, [frame] * 8)
    assert seen == [2]  # two distinct lines, parsed once, then only cache hits
