"""Causal rules: separate the primary error from the cascade it started.

RULES run in order over the findings; each is a small function with a docstring saying what
it looks at and why. `choose_root` then applies "the first primary error wins" on what is left.
"""

from __future__ import annotations

import bisect
import datetime as dt
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from analyzer.analysis.findings import LEXICAL_TIER, Finding, carries_on


@dataclass(frozen=True)
class Context:
    """What some rules need beyond the findings: where the server became ready (None when it
    never did, or when several inputs are merged and line numbers do not compare)."""

    ready_line: int | None = None
    serving_line: int | None = None  # the first line showing a request answered (an access
    # line): the HTTP server was up from there on, whatever its ready marker said
    done_line: int | None = None  # where the job reported its own successful end
    exit_line: int | None = None  # where a process first said it is leaving at exit
    writer_lines: Mapping[tuple[str, int], int] = field(default_factory=dict)  # (source, pid)
    # -> the last ordinary line that process printed
    launch_lines: Sequence[int] = ()  # where a server or job printed its start banner
    nccl_returns: Sequence[tuple[str | None, int]] = ()  # (process, line) of NCCL's
    # error-return trace lines ("NCCL INFO init.cc:1248 -> 3")
    nccl_inits: Sequence[tuple[str | None, int]] = ()  # (process, line) of "- Init COMPLETE"


Rule = Callable[[list[Finding], Context], None]


def resolved_failures(findings: list[Finding], ctx: Context) -> None:
    """Signal: a failure whose `resolved_by` pattern matches a later line (e.g. an IB port that
    goes 'port error' then 'port active'). Why: a recovered fault is not what killed the job.
    Example: mixed-llmd-ib-port-flap-tp-worker-exception."""
    for i, f in enumerate(findings):
        if f.sig is None or not f.sig.resolved_by or f.kind != "failure":
            continue
        try:
            template = f.sig.resolved_by.format(**{k: re.escape(v) for k, v in f.groups.items()})
            pattern = re.compile(template)
        except (KeyError, IndexError, re.error):
            continue
        for later in findings[i + 1:]:
            if pattern.search(later.clean):
                f.resolved = True
                f.reason = f"recovered later (line {later.line})"
                break


def explained_failures(findings: list[Finding], ctx: Context) -> None:
    """Signal: a failure whose signature `explains` another finding's signature or category
    (host OOM explains 'Killed'; an Xid 31 MMU fault explains the illegal memory access).
    Why: the explained one is the visible effect; the explainer is the cause, wherever it is
    printed (kernel logs are often pasted after the application's). Example:
    torch-xid31-mmu-fault-illegal-memory-access."""
    explainers = [f for f in findings if f.tier <= 2 and f.sig and f.sig.explains
                  and not f.resolved]
    for f in findings:
        if f.tier > 2:
            continue
        for ex in explainers:  # an explainer can be explained in turn (bind -> listen -> nonce)
            if ex is f or (f.sig is not None and ex.sig_id in f.sig.explains):
                continue
            if f.sig_id in ex.sig.explains or (f.category and f.category in ex.sig.explains):  # type: ignore[union-attr]
                f.kind, f.tier = "symptom", 3
                f.reason = f"explained by line {ex.line} ({ex.sig_id})"
                break


NCCL_RETURN_GAP = 4  # lines between a WARN and the first return of the error it raised


def unreturned_nccl_warnings(findings: list[Finding], ctx: Context) -> None:
    """Signal: NCCL WARN lines of a process, one of them followed within a few lines by the
    error-return trace ("NCCL INFO graph/paths.cc:608 -> 3", "init.cc:1248 -> 3", ...). Why:
    NCCLCHECK prints that trace on the way up from the call that failed, so the WARN before
    it is where the failing error was raised; the other WARNs (RCCL's "Could not read node",
    a topology probe) were printed and NCCL went on: not the cause.
    Example: nccl-rccl-mi300x-vf-azure-topology-reverse-path-internal-error-crash."""
    if not ctx.nccl_returns:
        return
    warns = [f for f in findings if "NCCL WARN" in f.clean  # (the text: a wrapper that
             and f.block_start is None and f.tier <= 2 and not f.resolved]  # hides the head)
    returns = _lines_by_process(ctx.nccl_returns)
    raised = {id(f) for f in warns if _returned_after(returns, f)}
    if not raised:
        return
    origin = next(g for g in warns if id(g) in raised)
    for f in warns:
        if id(f) in raised:
            continue
        f.kind, f.tier = "symptom", 3
        f.reason = (f"an NCCL warning it went on from: no error was returned after it (the "
                    f"error returned from line {origin.line} is what failed)")


def _lines_by_process(pairs: Sequence[tuple[str | None, int]]) -> dict[str | None, list[int]]:
    """(process, line) pairs, in line order, as each process's sorted lines."""
    out: dict[str | None, list[int]] = {}
    for process, line in pairs:
        out.setdefault(process, []).append(line)
    return out


def _returned_after(returns: dict[str | None, list[int]], f: Finding) -> bool:
    """Whether NCCL's error-return trace follows `f` in its process within a few lines."""
    lines = returns.get(f.process, [])
    i = bisect.bisect_right(lines, f.line)
    return i < len(lines) and lines[i] - f.line <= NCCL_RETURN_GAP


def nccl_warnings_init_went_past(findings: list[Finding], ctx: Context) -> None:
    """Signal: an NCCL WARN of a process, with no error returned after it, and later the same
    process's communicator reports "Init COMPLETE". Why: NCCL warns and falls back (a network
    plugin that fails to load, aws-ofi-nccl or a SHARP/CollNet plugin, leaves it on sockets;
    a topology probe fails) and goes on; a WARN it did not go past is followed by an error
    return and no completed init. Example: deepspeed-zero3-offload-p4d-aws-ofi-nccl-init-failed-
    socket-fallback-in-progress (b38)."""
    if not ctx.nccl_inits:
        return
    completed = _lines_by_process(ctx.nccl_inits)
    returns = _lines_by_process(ctx.nccl_returns)
    for f in findings:
        if ("NCCL WARN" not in f.clean or f.block_start is not None or f.tier > 2
                or f.resolved or f.process is None or f.process not in completed):
            continue
        inits = completed[f.process]
        i = bisect.bisect_right(inits, f.line)
        if i == len(inits):
            continue  # no init completed after it
        if _returned_after(returns, f):
            continue  # an error was returned from it: the unreturned-warnings rule decides
        f.kind, f.tier = "nonfatal", 8
        f.reason = (f"an NCCL warning its process went past: its communicator reported Init "
                    f"COMPLETE after it (line {inits[i]})")


REQUEST_SITE = re.compile(r"[\[ ](?:serving(?:_\w+)?|api_server|protocol)\.py:\d+\]")  # logger site
# (newer vLLM logs request errors from serving.py: "[serving.py:220] Error with model")
# "for request chatcmpl-96075...": an error line that names the one request it is about
REQUEST_ID = re.compile(r"\brequest (?:id )?[\"']?(?:chatcmpl|cmpl|req|embd)-[0-9a-f]{6}")
RESTATE_WINDOW = 8  # lines before a traceback where its error may have been stated first
# a C++ library's source site and function in an exception's message ("oneCCL: global.cpp:150
# getenv_local_coord: EXCEPTION: ..."): the library logged the same site when it raised,
# however far before the traceback and from whichever process (b38's Aurora oneCCL run)
NATIVE_SITE = re.compile(r"\b[\w/.-]+\.(?:cpp|cc|cu|cxx|hpp|c|h):\d+ [A-Za-z_]\w+")
WORD = re.compile(r"[A-Za-z][A-Za-z_]{2,}")
COMMON = frozenset({"error", "the", "and", "for", "with", "from", "this", "that", "exception",
                    "runtimeerror", "valueerror", "traceback", "most", "recent", "call", "last",
                    "info", "warning", "debug", "critical"})


def _words(text: str) -> set[str]:
    return {w.lower() for w in WORD.findall(text)} - COMMON


# the exception type of a statement line, after whatever wrappers and record head precede it
EXC_NAME = re.compile(r"\b[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Failure)\b(?=:|\s*$)")


def _exception_message(f: Finding) -> str:
    """The message of a traceback's statement, without the exception type (nor the wrappers
    and head before it: a bare "AssertionError" says nothing, so it restates nothing)."""
    m = EXC_NAME.search(f.clean)
    if m is not None:
        return f.clean[m.end():].lstrip(": ").strip()
    return f.clean[f.clean.find(": ") + 2:] if ": " in f.clean else f.clean


def _other_writer(a: Finding, b: Finding) -> bool:
    """Whether two findings name different writers (a library's own line often lacks the
    process prefix its Python caller's lines have: that is not a difference)."""
    return (a.process is not None and b.process is not None and a.process != b.process) or \
        (a.rank is not None and b.rank is not None and a.rank != b.rank)


def restated_errors(findings: list[Finding], ctx: Context) -> None:
    """Signal: a traceback's exception whose message was already printed, just before the
    traceback, by a line of the same writer ("ERROR ... HIP error: invalid device function",
    then the traceback ending in "RuntimeError: HIP error: invalid device function"; a c10
    `[E ...]` line, then the Python exception that carries it). Why: it is one event stated
    twice; the earlier statement is where it happened, the exception names its type. Rule:
    the earliest statement is the root and takes the exception's signature and tier; the
    exception is listed as the same event.
    Example: vllm-rocm-gfx1151-hip-invalid-device-function-rope-init."""
    for s in findings:
        if s.role != "statement" or s.block is None or s.tier > 2 or s.resolved:
            continue
        start = s.block_start if s.block_start is not None else s.line  # (None: a blank line
        # cut the exception off its frames, as a paste does)
        said = _words(_exception_message(s))
        bare = None  # a statement with no message ("AssertionError") is restated by its type
        if len(said) < 2:
            m = EXC_NAME.search(s.clean)
            if m is None or _exception_message(s):
                continue
            name = re.escape(m.group().rsplit(".", 1)[-1])  # its repr, not a `raise` line
            bare = re.compile(rf"(?<!raise )(?<![\w.]){name}(?:\(|:|\s*$)")
        site = NATIVE_SITE.search(_exception_message(s))
        for p in findings:
            if p is s or p.block == s.block or p.source != s.source or p.resolved \
                    or p.role == "statement":  # another traceback: a repeat, not a statement
                continue
            sited = (site is not None and p.line < start and p.tier <= 2
                     and p.block is None and site.group() in p.clean)
            if not sited:  # (sited: the C++ site the exception quotes, logged by the library)
                if not (start - RESTATE_WINDOW <= p.line < start):
                    continue
                if p.tier > 2 or _other_writer(p, s):
                    continue
                if bare is not None:  # a log line of its own naming the type, not a frame
                    if p.block is not None or not bare.search(p.clean):
                        continue
                elif len(said & _words(p.clean)) * 2 < len(said):
                    continue
            if s.sig is not None and p.sig is None:
                # the exception is the specific statement; the line before it is a handler's
                # message about it ("Failed to load model - not enough GPU memory ...")
                p.kind, p.tier = "symptom", 3
                p.reason = (f"a message about the exception at line {s.line}, printed while "
                            "handling it")
                break
            if p.tier > s.tier or p.sig is None:
                p.tier, p.kind = s.tier, s.kind
                if p.sig is None:
                    p.sig, p.category, p.groups = s.sig, s.category, s.groups
                p.frames = s.frames
            s.kind, s.tier = "symptom", 3
            s.reason = f"the same error as line {p.line}, restated by the exception"
            break


def bare_causes(findings: list[Finding], ctx: Context) -> None:
    """Signal: a chain whose first exception is a bare type with no message ("TimeoutError",
    raised by a queue's wait) and whose next exception, raised from it, is the same type with
    a message ("TimeoutError: RPC call to execute_model timed out."). Why: the bare one says
    nothing a reader can act on; the one raised from it states, in the program's words, what
    timed out. Rule: the exception with the message is the statement; the bare one its
    context.
    Example: vllm-v1-tp4-deepseek-32b-rpc-execute-model-timeout-after-day-hang."""
    for s in findings:
        if s.role != "statement" or s.block is None or s.tier > 2 or s.resolved:
            continue
        m = EXC_NAME.search(s.clean)
        if m is None or _exception_message(s):
            continue
        name = m.group().rsplit(".", 1)[-1]
        nxt = min((c for c in findings if c.block == s.block and c.role == "chained"
                   and c.line > s.line), key=lambda c: c.line, default=None)
        if nxt is None:
            continue
        n = EXC_NAME.search(nxt.clean)
        if n is None or n.group().rsplit(".", 1)[-1] != name or not _exception_message(nxt):
            continue
        nxt.kind, nxt.tier, nxt.role = s.kind, s.tier, "statement"
        if nxt.sig is None:
            nxt.sig, nxt.category, nxt.groups = s.sig, s.category, s.groups
        nxt.frames, nxt.reason = s.frames, None
        s.kind, s.tier, s.role = "symptom", 3, "context"
        s.reason = (f"a bare {name} with no message; the {name} raised from it (line "
                    f"{nxt.line}) says what it was")


def relayed_errors(findings: list[Finding], ctx: Context) -> None:
    """Signal: a traceback whose last exception is a heading ("RuntimeError: Error raised in
    subprocess:") and the traceback that follows it at once: the heading's content, a child
    process's own traceback relayed in the message. Why: the outer chain only reports that
    the child failed (a CalledProcessError, "returned non-zero exit status 1"); the child's
    traceback says why. Rule: the relayed traceback's statement is the root; the reporting
    chain's statement is its symptom.
    Example: vllm-triton-placeholder-shadows-triton-granite-inspect-failed-crash."""
    by_block: dict[int, list[Finding]] = {}
    for f in findings:
        if f.block is not None:
            by_block.setdefault(f.block, []).append(f)
    for s in findings:
        if s.role != "statement" or s.block is None or s.tier > 2 or s.resolved \
                or s.block_end is None:
            continue
        last = max(by_block[s.block], key=lambda f: f.line)
        if not EXC_NAME.search(last.clean) or not last.clean.rstrip().endswith(":"):
            continue
        relayed = next((t for t in findings if t.role == "statement" and t.tier <= 2
                        and t.block is not None and t.block != s.block
                        and t.source == s.source and t.block_start is not None
                        and s.block_end < t.block_start <= s.block_end + 2
                        and not _other_writer(s, t)), None)
        if relayed is None:
            continue
        s.kind, s.tier = "symptom", 3
        s.reason = (f"reports that a child failed; the child's own traceback, relayed in the "
                    f"message below (line {relayed.line}), states why")


def request_scoped(findings: list[Finding], ctx: Context) -> None:
    """Signal: an error raised inside a request handler (the OpenAI-compatible server's
    serving_* code) after the server was ready, or after it had answered a request (an access
    line: a paste that starts while serving has no ready marker). Why: a bad request (too
    long, a template that does not apply, a model name that does not exist) fails that request
    only; the server answers 400/404/500 and goes on.
    An error line that names the one request it is about ("Failed to advance FSM for
    request chatcmpl-...") is such an error too.
    Examples: vllm-v1-serving-context-length-request-errors-healthy,
    sglang-kimi-k2-strict-tool-call-notimplemented-500-request-error-healthy,
    vllm-qwen-tool-call-xgrammar-fsm-advance-errors-serving-healthy."""
    ready_line = min((x for x in (ctx.ready_line, ctx.serving_line) if x is not None),
                     default=None)
    if ready_line is None:
        return
    headers: set[tuple[str, int]] = set()
    for f in findings:
        if f.tier > 2 or f.line < ready_line or f.resolved:
            continue
        if any("entrypoints/openai" in fr or "/serving_" in fr for fr in f.frames) or \
                (not f.frames and (REQUEST_SITE.search(f.clean[:200])
                                   or REQUEST_ID.search(f.clean))):
            f.kind, f.tier = "nonfatal", 8
            f.category = "request_error"
            f.reason = ("raised while handling one request after the server was ready: that "
                        "request failed, the server went on")
            if f.block_start is not None:
                headers.add((f.source, f.block_start))
    for f in findings:  # logger.exception("msg"): the message line just before its traceback
        if f.kind == "error" and f.sig is None and any(
                (f.source, f.line + gap) in headers for gap in (1, 2)):
            f.kind, f.tier, f.category = "nonfatal", 8, "request_error"
            f.reason = "the message of the request error whose traceback follows"


def logged_and_went_on(findings: list[Finding], ctx: Context) -> None:
    """Signal: a traceback the program's own logger printed ("ERROR:...:Traceback ..."),
    after which the same process (pid) printed ordinary output again. Why: code that logs an
    exception caught it; a process that then goes on (an agent loop that could not parse one
    answer, a worker that skips one item) survived it. A process that dies prints nothing
    ordinary after its last words (teardown lines are not counted).
    The same exception (or a traceback cut off in the same frames) in another process, one
    whose output ends soon after (a paste cut there) or whose logger head was lost among
    interleaved lines, is the same caught exception: the code that caught it once catches
    it in every worker (b38's GUI-agent rollouts: three workers, the log cut in the third).
    Examples: mixed-verl-qwen3vl-gui-agent-resume-step200-vllm-http-rollout-extract-error-healthy,
    mixed-verl-vllm-qwen3-vl-agent-loop-grpo-reward-parse-errors-healthy."""
    survived: dict[str, int] = {}  # the shape of an exception a process survived -> its pid
    pending: list[Finding] = []
    for f in findings:
        if f.tier > 2 or f.resolved or f.pid is None or f.role not in ("statement", "cut"):
            continue
        if f.role == "cut":
            pending.append(f)
            continue
        later = ctx.writer_lines.get((f.source, f.pid))
        if not f.logged:
            pending.append(f)  # (its logger's head may be lost in an interleaving)
        elif later is not None and later > (f.block_end or f.line) + 1:
            f.kind, f.tier = "nonfatal", 8
            f.reason = (f"logged by the program, and the same process (pid {f.pid}) went on "
                        f"printing (line {later}): it caught the exception and survived it")
            for shape in _exception_shapes(f):
                survived.setdefault(shape, f.pid)
        else:
            pending.append(f)
    for f in pending:  # a statement by its message; a cut traceback has only its stack
        keys = _exception_shapes(f) if f.role == "cut" else _exception_shapes(f) - _stacks(f)
        pid = next((survived[k] for k in keys if k in survived), None)
        if pid is not None and pid != f.pid:
            f.kind, f.tier = "nonfatal", 8
            f.reason = (f"logged by the program, as the same exception was in process {pid}, "
                        "which went on: caught, not fatal")


def _stacks(f: Finding) -> set[str]:
    return {"stack: " + " < ".join(f.frames[-3:])} if f.frames else set()


def _exception_shapes(f: Finding) -> set[str]:
    """What identifies the same `raise` in two workers: the exception's type and the first
    words of its message, numbers masked ("ValueError: step 0 - extract action failed
    from: <answer>"), and the innermost frames of its stack (all a cut traceback has)."""
    shapes = _stacks(f)
    if f.role == "statement":
        m = EXC_NAME.search(f.clean)
        words = DIGITS.sub("0", _exception_message(f)).split()[:6]
        shapes.add(f"{m.group() if m is not None else ''}: {' '.join(words)}")
    return shapes


# blocks a native crash handler prints (faulthandler, C++ terminate, a native backtrace)
NATIVE_CRASHES = frozenset({"faulthandler", "cpp_abort", "native"})


def before_success(findings: list[Finding], ctx: Context) -> None:
    """Signal: a warning-level record (an `NCCL WARN`, a c10d `[W ...]`) before the job's own
    report that it finished successfully (nccl-tests' closing bandwidth summary, MLPerf's
    run_stop with status success, a trainer's completion line). Why: the job did all its
    work after it, so it outlived what the warning said (NCCL fell back from a CollNet/SHARP
    init failure to point-to-point): non-fatal, not the cause. A failure statement before
    the summary still counts: nccl-tests prints its summary after wrong values too.
    Example: nccl-tests-a100-sharp-collnet-fallback-p2p-healthy."""
    done = ctx.done_line
    if done is None:
        return
    for f in findings:
        if f.tier > 3 or f.resolved or f.line >= done or f.kind == "failure":
            continue
        if f.block_start is not None or f.level != "warning":
            continue
        f.kind, f.tier = "nonfatal", 8
        f.reason = f"the job reported its successful end after it (line {done}): outlived"


def after_success(findings: list[Finding], ctx: Context) -> None:
    """Signal: a warning-level record (a c10d `[W ...]`, an `NCCL WARN`) after the job said it
    finished successfully (MLPerf's run_stop with status success, nccl-tests' closing
    bandwidth summary, a trainer's completion line). Why: once the work is done, ranks leave
    at different moments and the survivors' sockets to the departed ones fail: teardown
    chatter. An exception after it (a final checkpoint that cannot be written) still counts.
    The same holds after a process said it is leaving at interpreter exit (torch's
    destructor warning "destroy_process_group() was not called before program exit"): the
    rank that hosted the TCPStore left first, the others' heartbeat monitors lose it.
    A native crash with no Python frame on its stack (an abort in a destructor, "Fatal Python
    error: Aborted" while garbage-collecting) after it is the interpreter's teardown, and the
    launcher's report of that exit with it; one raised from Python code still counts. An
    error-level record that no signature knows, after the job's own report of success, is a
    report step failing (NeMo's TFLOPs estimate), not the work.
    Examples: torch-mlperf-llama2-70b-lora-mi300x-rccl-mscclpp-warn-c10d-errno97-healthy,
    torch-torchtitan-2gpu-pretrain-completed-fatal-python-abort-at-exit-healthy,
    torch-mlperf-flux1-4node-b200-success-tcpstore-teardown-warnings-healthy,
    torch-mlperf-retinanet-h200-success-nccl-proxy-teardown-warn-healthy,
    torch-megatron-2node-tp2-finished-tcpstore-should-dump-errors-at-exit-healthy."""
    ends = [(line, why) for line, why in (
        (ctx.done_line, "the job reported success"),
        (ctx.exit_line, "a process said it is leaving at exit")) if line is not None]
    if not ends:
        return
    end, why = min(ends)
    teardown_crash: int | None = None
    for f in sorted(findings, key=lambda x: x.line):
        if f.tier > 3 or f.resolved or f.line <= end:
            continue
        if f.event_kind in NATIVE_CRASHES and not f.frames and f.kind != "failure":
            teardown_crash = teardown_crash or f.line
            f.kind, f.tier = "nonfatal", 8
            f.reason = (f"a native crash with no Python code on its stack after {why} (line "
                        f"{end}): the interpreter's teardown (destructors, garbage collection) "
                        "failed, not the work")
        elif teardown_crash is not None and f.kind == "symptom":
            f.kind, f.tier = "nonfatal", 8
            f.reason = (f"a report of the crash at exit (line {teardown_crash}) after {why}: "
                        "teardown, not a failure")
        elif f.block_start is None and f.level == "warning":  # NCCL WARN lines: head says so
            f.kind, f.tier = "nonfatal", 8
            f.reason = f"a warning after {why} (line {end}): teardown, not a failure"
        elif f.block_start is None and f.level == "error" and f.sig is None \
                and ctx.done_line is not None and f.line > ctx.done_line:
            # an error-level record no signature knows after the job's own report of
            # success (NeMo's "Failed to calculate TFLOPs per sec per GPU." after MLPerf's
            # run_stop): a report step after the work failed, not the work
            f.kind, f.tier = "nonfatal", 8
            f.reason = (f"an error-level record after the job reported success (line "
                        f"{ctx.done_line}): the work was done")


def test_verdicts(findings: list[Finding], ctx: Context) -> None:
    """Signal: an AssertionError raised by a test harness (unittest, pytest) after the server
    was ready. Why: a test that checks the server's output or speed failed; the server itself
    kept running. Example: sglang-ascend-qwen3-32b-eagle3-perf-assert-fail-server-healthy."""
    ready_line = ctx.ready_line
    if ready_line is None:
        return
    for f in findings:
        if f.tier > 3 or f.line < ready_line or f.resolved or "AssertionError" not in f.clean:
            continue
        if any("unittest/" in fr or "/_pytest/" in fr or "/test_" in fr for fr in f.frames):
            f.kind, f.tier = "nonfatal", 8
            f.reason = ("a test's assertion about a server that was up: the test failed, not "
                        "the server")


REPEATS_SURVIVED = 3
DIGITS = re.compile(r"\d+")
EXC_START = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b.*")
RAY_DEDUP = re.compile(r"\s*\[repeated (\d+)x across cluster\]")  # Ray folds repeats


def repeated_by_one_process(findings: list[Finding], ctx: Context) -> None:
    """Signal: the same error, from the same process (pid), three times or more. Why: an
    error that kills a process is printed once; one that a worker prints again and again
    (a reward function that fails to parse an answer, a request that is retried) was caught
    and survived each time.
    Example: mixed-verl-vllm-qwen3-vl-agent-loop-grpo-reward-parse-errors-healthy."""
    groups: dict[tuple[str, int, str], list[Finding]] = {}
    times: dict[tuple[str, int, str], int] = {}
    for f in findings:  # Python exceptions only: a native library repeats its last words
        if f.pid is None or f.tier > 2 or f.resolved or f.role != "statement":
            continue
        text = f.clean[f.clean.find(")") + 1:] if f.clean.startswith("(") else f.clean
        # Ray's "[repeated Nx across cluster]" folds the same line from N *other* processes
        # (its log deduplication is across workers): not this process surviving it N times
        text = DIGITS.sub("0", RAY_DEDUP.sub("", text)).strip()
        exc = EXC_START.search(text)  # "ValueError: step 0 - extract action failed from: ..."
        key = (f.source, f.pid, exc.group()[:60] if exc else text[:200])
        groups.setdefault(key, []).append(f)
        times[key] = times.get(key, 0) + 1
    for key, same in groups.items():
        if times[key] < REPEATS_SURVIVED:
            continue
        for f in same:
            f.kind, f.tier = "nonfatal", 8
            f.reason = (f"the same error {times[key]} times from one process (pid {f.pid}): "
                        "it was caught and the process went on")


PERIODIC_SPAN_S = 10.0  # a report repeated over at least this long is a monitor's


def _seconds(stamp: str | None) -> float | None:
    try:
        return dt.datetime.fromisoformat(stamp).timestamp() if stamp else None
    except ValueError:
        return None


def periodic_reports(findings: list[Finding], ctx: Context) -> None:
    """Signal: an error-level line that no signature knows, printed three times or more by
    one writer over ten seconds or more (Ray's raylet: "/tmp/ray/session_... is over 95%
    full" every 10 s). Why: a monitor that reports a condition again and again is a process
    that is alive and a job that went on; a fatal error is printed once, or repeated within
    the same moment by a dying process. Example:
    mixed-verl-grpo-ray-vllm-finished-dataloader-killed-teardown."""
    groups: dict[tuple[str, str | None, int | None, str], list[Finding]] = {}
    for f in findings:
        if f.kind != "error" or f.sig is not None or f.resolved or f.tier > 2:
            continue
        text = DIGITS.sub("0", f.clean[f.clean.find("]") + 1:] if "]" in f.clean[:80]
                          else f.clean)[:120]
        groups.setdefault((f.source, f.process, f.rank, text), []).append(f)
    for same in groups.values():
        if len(same) < REPEATS_SURVIVED:
            continue
        times = [t for t in (_seconds(f.timestamp) for f in same) if t is not None]
        if len(times) < REPEATS_SURVIVED or max(times) - min(times) < PERIODIC_SPAN_S:
            continue
        for f in same:
            f.kind, f.tier = "nonfatal", 8
            f.reason = (f"reported {len(same)} times by one writer over "
                        f"{max(times) - min(times):.0f} s: a monitor's report, the job went on")


def stop_request(findings: Sequence[Finding]) -> Finding | None:
    """The first line that says the job was told to stop (Ctrl-C, SIGTERM, a scheduler's
    cancel), if any."""
    return next((f for f in findings if f.sig is not None and f.sig.ends and not f.resolved),
                None)


CANCELLED = re.compile(r"^(?:asyncio\.(?:exceptions\.)?)?CancelledError\b|\.CancelledError$")
REPORT_GAP = 3  # lines between a logger's report and the traceback it prints


def cancelled_tasks(findings: list[Finding], ctx: Context) -> None:
    """Signal: an error-level report right before a traceback (asyncio's "Exception in
    callback ...", "Task exception was never retrieved") whose every statement is a
    CancelledError. Why: the task was cancelled (a shutdown, a closed client), nothing raised
    an error; the report is its logger's, not a failure's.
    Example: art-langgraph-mcp-agent-model-test-shutdown-cancellederror-noise-healthy."""
    del ctx
    for i, f in enumerate(findings):
        if f.block is not None or f.level not in ("error", "critical") or f.kind == "failure":
            continue
        nxt = next((g for g in findings[i + 1:] if g.block is not None), None)
        if nxt is None or nxt.block_start is None or nxt.source != f.source \
                or not 0 < nxt.block_start - f.line <= REPORT_GAP:
            continue
        block = [g for g in findings if g.block == nxt.block and g.source == nxt.source
                 and g.role == "statement"]
        if block and all(CANCELLED.search(g.clean.strip()) for g in block):
            f.kind, f.tier, f.resolved = "nonfatal", 8, True
            f.reason = ("the traceback it reports ends in CancelledError: a task was cancelled "
                        "(shutdown), nothing failed")


def stopped(findings: list[Finding], ctx: Context) -> None:
    """Signal: a line that says the job was told to stop (see after_stop)."""
    stop = stop_request(findings)
    if stop is not None:
        after_stop(findings, stop, on_purpose=ctx.ready_line is not None
                   and ctx.ready_line < stop.line)


def after_stop(findings: Sequence[Finding], stop: Finding, *, on_purpose: bool) -> None:
    """Signal: the job was told to stop. Why: what it prints afterwards is teardown (workers
    killed, an engine that is gone, a handler's traceback), never a cause; a server that was
    ready before it was stopped on purpose, so the stop itself is not a failure either.
    Examples: torch-olmo-torchrun-agent-sigterm-during-training (a training killed from
    outside), vllm-v1-gb10-laguna-nvfp4-dflash-serving-sigterm-enginedead-healthy (a server
    stopped after serving)."""
    start = (stop.block_start or stop.line) - 2  # a logger.exception() header just before it
    for f in findings:
        if f is stop or f.source != stop.source or f.tier > 2:
            continue
        if f.seq <= stop.seq and not (f.kind == "error" and start <= f.line < stop.line):
            continue
        f.kind, f.tier = ("nonfatal", 8) if on_purpose else ("symptom", 3)
        f.reason = f"printed after the job was told to stop (line {stop.line}): teardown"
    if on_purpose:
        stop.kind, stop.tier = "nonfatal", 8
        stop.reason = "the server had been ready and was then stopped on purpose"
SURVIVED_AFTER = 3  # successful serving lines after an error that show the server outlived it


# The order is the rule set: recovered faults, causes stated elsewhere, one event stated
# twice, errors a process kept surviving or a monitor kept reporting, then what a stop
# request, a request handler or a test harness says about the lines around them.
# choose_root picks among what is left.
def earlier_attempts(findings: list[Finding], ctx: Context) -> None:
    """Signal: a failure, then the program's start banner again (vLLM's version line,
    SGLang's server_args, MLPerf's init_start), then another failure. Why: the log holds
    several attempts (a wrapper or a user re-ran it, often with the first error fixed); the
    last attempt's failure is the state the log ends in, the earlier one stays a candidate.
    Example: vllm-v1-091-port-8000-address-in-use-after-bad-args-retry."""
    if not ctx.launch_lines:
        return
    for f in findings:
        if f.tier > 2 or f.resolved:
            continue
        end = f.block_end or f.line
        restart = next((ln for ln in ctx.launch_lines if ln > end), None)
        if restart is None:
            continue
        later = next((g for g in findings if g.line > restart and g.tier <= 2
                      and not g.resolved), None)
        if later is None:
            continue
        f.kind, f.tier = "symptom", 3
        f.reason = (f"an earlier attempt: the program started again (line {restart}) and "
                    f"failed again (line {later.line}); the last attempt's failure is the "
                    "one the log ends in")


RULES: tuple[Rule, ...] = (resolved_failures, unreturned_nccl_warnings,
                           nccl_warnings_init_went_past, explained_failures,
                           bare_causes, restated_errors, relayed_errors,
                           repeated_by_one_process,
                           periodic_reports,
                           cancelled_tasks, stopped, request_scoped, test_verdicts,
                           logged_and_went_on,
                           before_success, after_success, earlier_attempts)


def survived(findings: list[Finding], alive_after: Callable[[int, str | None], int],
             ready_after: Callable[[Finding], bool]) -> list[Finding]:
    """Signal: the server reached ready, or kept serving requests successfully, after an error.
    Why: an error the process outlived (a failed request, a retried download, an optional
    import) did not kill it; it is reported as a non-fatal error, not as the cause.
    A statement that the engine died after the error (vLLM's "Got fatal signal from worker
    processes, shutting down") overrides the lines that follow it: vLLM's API server kept
    answering /health with 200 after its EngineCore was gone.
    Example: a request that raises in the API server while decode batches go on."""
    out = []
    deaths = [g.line for g in findings if g.sig is not None and g.sig.dead and not g.resolved]
    for f in findings:
        if f.tier > 2 or f.resolved:
            continue
        if any(d >= f.line for d in deaths) and not ready_after(f):
            continue  # the program said its engine died after it: what answers later (an
            # API server's /health, its stats loop) is not the engine outliving it
        if ready_after(f) or alive_after(f.line, f.timestamp) >= SURVIVED_AFTER:
            f.kind, f.tier = "nonfatal", 8
            f.reason = "the server kept running after it (ready or serving lines follow)"
            out.append(f)
    return out


def choose_root(findings: Sequence[Finding], *, by_time: bool = False) -> Finding | None:
    """The first primary error (tier 1) wins; a stand-in (tier 2) only when there is none.

    Within one file "first" is the line order (timestamps are too coarse, and many lines have
    none). Across files (one log per rank) it is the time: the earliest timestamped candidate,
    then file and line order.
    """
    for tier in (1, 2):
        cands = [f for f in findings if f.tier == tier and not f.resolved]
        if cands:
            if by_time:
                return min(cands, key=lambda f: (f.timestamp or "9999", f.seq))
            return min(cands, key=lambda f: f.seq)
    return None


def last_resort(findings: Sequence[Finding], alive_after: Callable[[int, str | None], int],
                ready_after: Callable[[int], bool], *, went_on: Callable[[Finding], bool],
                ready: bool = False) -> Finding | None:
    """Signal: no line states a primary error or a stand-in, yet a line states a consequence
    of one ("Some NCCL operations have failed or timed out ... taking the entire process
    down", "ChildFailedError", a cut-off traceback's context). Why: a paste often starts
    after the cause (the selection began too late, the cause went to another file); the
    consequences still say the job failed, and the earliest of them is the nearest line to
    the cause. It is chosen with low confidence, and never when the job kept running after
    it. Failing that, the first line of no known format that says something failed
    ("CUDA Error: out of memory at cumem_allocator.cpp:62") after which the job printed
    almost nothing ordinary (a job that goes on was not killed by it), in a server that
    never came up.
    Example: torch-llamafactory-line-numbered-watchdog-timeout-after-loss-zero."""
    if any(f.tier == 8 and f.kind == "nonfatal" for f in findings):
        return None  # an error was judged and found non-fatal (outlived, a stop on purpose):
        # the consequences follow from it
    stop = stop_request(findings)
    for f in findings:
        if f.tier != 3 or f.resolved or f.kind != "symptom" or f.role == "handler":
            continue
        if stop is not None and f.seq > stop.seq:
            continue  # teardown after the job was told to stop
        if f.sig is not None and f.sig.hang_if_repeated:
            continue  # a wait, read by the repeated-wait rule
        if f.block is None and f.level not in ("error", "critical"):
            continue  # teardown chatter at WARNING level (NCCL's proxy thread at exit)
        if ready_after(f.line) or alive_after(f.line, f.timestamp) >= SURVIVED_AFTER:
            continue
        f.reason = ("the earliest consequence in the log: no line states the error that "
                    "caused it")
        return f
    if ready:
        return None  # a server that came up: an unknown line is not proof that it died
    for f in findings:  # a line of no known format that says something failed, at the end
        if f.tier != LEXICAL_TIER or f.kind != "error" or f.resolved:
            continue
        if carries_on(f.clean) or went_on(f):
            continue
        return f
    return None


MAX_CANDIDATES = 3


def candidates(findings: Sequence[Finding], root: Finding) -> list[tuple[Finding, str]]:
    """Up to three other lines that could have been the root cause, best first, each with the
    rule that ranked it below the chosen one. The order is the choice's own: unresolved
    primary errors, then stand-ins, then what the process outlived or recovered from, then
    consequences. A line that repeats the root's signature (the same error on another rank)
    is not a rival and is left out."""
    def rule(f: Finding) -> tuple[int, str]:
        if f.resolved:
            return 4, f"recovered: {f.reason or 'a later line shows it cleared'}"
        if f.tier == 1:
            return 1, ("a primary error printed later: the first primary error wins"
                       if f.seq > root.seq else "a primary error printed earlier on another input")
        if f.tier == 2:
            if root.tier == 1:
                return 2, ("a stand-in (a generic error or report): used only when no primary "
                           "error is stated")
            return 2, "a stand-in printed later: the first one wins"
        if f.kind == "nonfatal":
            return 3, f"non-fatal: {f.reason or 'the process went on after it'}"
        return 5, f"consequence: {f.reason or 'follows from the root cause'}"

    seen = {root.sig_id} if root.sig_id else set()
    texts = {root.clean.strip()}
    ranked = []
    for f in findings:
        if f is root or f.seq == root.seq or (f.tier == LEXICAL_TIER and root.tier < 3):
            continue
        key = f.clean.strip()
        if (f.sig_id and f.sig_id in seen) or key in texts:
            continue
        order, why = rule(f)
        ranked.append((order, f.seq, f, why))
    ranked.sort(key=lambda r: (r[0], r[1]))
    out: list[tuple[Finding, str]] = []
    for _order, _seq, f, why in ranked:
        if (f.sig_id and f.sig_id in seen) or f.clean.strip() in texts:
            continue
        out.append((f, why))
        if f.sig_id:
            seen.add(f.sig_id)
        texts.add(f.clean.strip())
        if len(out) == MAX_CANDIDATES:
            break
    return out


def confidence(root: Finding, rivals: Sequence[tuple[Finding, str]], *,
               from_silence: bool = False) -> tuple[str, str]:
    """How sure the choice is (high | medium | low) and why, from what kind of evidence the
    root is: a known failure signature is high; an exception or stand-in no signature knows,
    or a known one with an unrelated primary error close behind, is medium; an unknown
    error-level line or a hang read from silence is low."""
    if from_silence:
        return "low", "no line states a failure: the hang is read from where the ranks went silent"
    if root.tier == 3:
        return "low", "only consequences are in the log: the line that states the cause is missing"
    if root.tier == LEXICAL_TIER:
        return "low", ("a line of no known format that says something failed, with no progress "
                       "after it; nothing else states an error")
    if root.kind == "error":
        return "low", ("an error-level line no signature knows, and nothing more specific "
                       "was printed")
    close = [f for f, _ in rivals if f.tier == 1 and f.category != root.category
             and abs(f.line - root.line) <= 3 and f.source == root.source]
    if root.sig is not None and root.tier == 1:
        if close:
            return "medium", (f"another primary error of a different kind follows at line "
                              f"{close[0].line}")
        return "high", f"a known failure signature ({root.sig.id})"
    if root.sig is not None:
        return "medium", (f"a report of the failure ({root.sig.id}), not its statement: nothing "
                          "earlier says why")
    if root.role == "statement":
        return "medium", "the originating exception of a traceback, but no signature knows it"
    return "medium", "a generic failure line"


def symptom_reason(f: Finding, root: Finding) -> str:
    """Why a finding is listed under the root cause rather than as a cause of its own."""
    if f.reason:
        return f.reason
    if f.sig is not None and f.sig.id == root.sig_id and f.rank != root.rank:
        where = f"rank {f.rank}" if f.rank is not None else "another process"
        return f"the same on {where}: the ranks stopped together"
    if f.sig is not None and f.sig.kind == "symptom":
        return f.sig.summary.split(";")[0].split(". ")[0]
    if f.line > root.line:
        return "later error: a consequence of the root cause"
    return "earlier than the root cause but not a primary error"
