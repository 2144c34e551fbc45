"""Native crash dumps folded from line rows: faulthandler, C++ terminate, UCX backtraces.

`parse_faulthandler` ("Fatal Python error" thread dumps), `parse_cpp_abort` ("terminate
called after throwing ..." with c10 "frame #N" lines) and `parse_native_backtrace`
("==== backtrace (tid: N) ====") never raise; line indexes are 0-based into the caller's list.
"""

from __future__ import annotations

from analyzer.parse.rows import (
    Json,
    clean_lines,
    dump_rows,
)


def _fatal_error(text: str) -> str | None:
    """The error named by "Fatal Python error: ...".

    When another writer interleaved with faulthandler, the text can carry its debris:
    'Fatal Python error: "Aborted, line ' (the quote and ", line" of a frame line).
    """
    text = text.strip()
    if text.startswith('"'):
        text = text[1:].split('"', 1)[0].split(",", 1)[0]
    return text.strip() or None


def parse_faulthandler(lines: list[str]) -> Json:
    """The fatal error and each thread's frames (most recent call first) of a dump."""
    clean = clean_lines(lines)
    error: str | None = None
    error_index: int | None = None
    threads: list[Json] = []
    how = "fallback"
    try:
        rows, how = dump_rows(clean)
        cur: Json | None = None
        for i, row in enumerate(rows):
            if row.kind == "fatal":
                if error_index is None:
                    error = _fatal_error(str(row.data[0]))
                    error_index = i
            elif row.kind == "thread_head":
                cur = {"id": row.data[0], "current": row.data[1], "frames": [], "index": i}
                threads.append(cur)
            elif row.kind == "stack_head":
                cur = {"id": None, "current": True, "frames": [], "index": i}
                threads.append(cur)
            elif row.kind == "frame":
                if cur is None:  # a fragment that starts inside a thread's stack
                    cur = {"id": None, "current": False, "frames": [], "index": i}
                    threads.append(cur)
                path, lineno, func, _ = row.data
                cur["frames"].append({"file": path, "line": lineno, "func": func, "index": i})
            elif row.kind in ("ext_modules", "tb_header", "terminate", "bt_head"):
                cur = None
    except Exception:  # never raise on log input
        how = "fallback"
    return {"error": error, "error_index": error_index, "threads": threads, "parsed_by": how}


_WHAT_CONTINUES = frozenset({"text", "source", "exc", "carets"})


def parse_cpp_abort(lines: list[str]) -> Json:
    """`terminate called after throwing ...`: the C++ type, what(), and c10 frames.

    `what` keeps the lines that follow "what():" (NCCL appends "Last error:" lines) up
    to "Exception raised from", a frame, or a blank line.
    """
    clean = clean_lines(lines)
    out: Json = {
        "exc_type": None,
        "terminate_index": None,
        "what": None,
        "what_index": None,
        "raised_from": None,
        "raised_func": None,
        "raised_at": None,
        "raised_index": None,
        "frames": [],
        "parsed_by": "fallback",
    }
    try:
        rows, out["parsed_by"] = dump_rows(clean)
        what: list[str] | None = None
        for i, row in enumerate(rows):
            kind = row.kind
            if what is not None and kind not in _WHAT_CONTINUES:
                out["what"] = "\n".join(what).rstrip()
                what = None
            if kind == "terminate" and out["terminate_index"] is None:
                out["terminate_index"] = i
                out["exc_type"] = row.data[0]
            elif kind == "what" and out["what_index"] is None:
                out["what_index"] = i
                what = [row.data[0]]
            elif kind == "raised_from" and out["raised_index"] is None:
                func, at = row.data
                out["raised_func"], out["raised_at"], out["raised_index"] = func, at, i
                out["raised_from"] = f"{func} at {at}" if at else func
            elif kind == "cpp_frame":
                no, symbol, offset, address, library = row.data
                out["frames"].append(
                    {
                        "index": i,
                        "frame_no": no,
                        "func": symbol,
                        "offset": offset,
                        "address": address,
                        "library": library,
                    }
                )
            elif what is not None:
                what.append(clean[i].rstrip())
        if what is not None:
            out["what"] = "\n".join(what).rstrip()
    except Exception:  # never raise on log input
        out["parsed_by"] = "fallback"
    return out


# Frames a crash passes through after the fault: the signal delivery and abort path, and
# UCX's own handler. The first frame that is none of these is where the process died.
_SIGNAL_MACHINERY = frozenset(
    {
        "__sigaction",
        "__restore_rt",
        "killpg",
        "kill",
        "raise",
        "abort",
        "gsignal",
        "__GI_raise",
        "__GI_abort",
        "pthread_kill",
        "__pthread_kill",
        "__pthread_kill_implementation",
        "__pthread_kill_internal",
        "__libc_signal_restore_set",
    }
)


def _is_machinery(func: str | None) -> bool:
    if not func:
        return False
    name = func.strip()
    if name.endswith("()"):
        name = name[:-2]
    return name in _SIGNAL_MACHINERY or name.startswith(("ucs_", "ucm_"))


def parse_native_backtrace(lines: list[str]) -> Json:
    """UCX's `==== backtrace (tid: N) ====` frames and the frame where the crash happened.

    Each frame's `index` is its line index; `frame_no` is the number UCX printed.
    `crash_index` is the line index of the first frame that is not signal machinery.
    """
    clean = clean_lines(lines)
    out: Json = {
        "tid": None,
        "frames": [],
        "crash_index": None,
        "signal": None,
        "signal_text": None,
        "parsed_by": "fallback",
    }
    try:
        rows, out["parsed_by"] = dump_rows(clean)
        for i, row in enumerate(rows):
            if row.kind == "bt_head" and out["tid"] is None:
                out["tid"] = row.data[0]
            elif row.kind == "caught_signal" and out["signal"] is None:
                out["signal"], out["signal_text"] = row.data[0], row.data[1].strip("() ") or None
            elif row.kind == "bt_frame":
                no, address, func, location = row.data
                out["frames"].append(
                    {
                        "index": i,
                        "frame_no": no,
                        "address": address,
                        "func": func,
                        "location": location,
                    }
                )
        crash = next((f for f in out["frames"] if not _is_machinery(f["func"])), None)
        out["crash_index"] = crash["index"] if crash else None
    except Exception:  # never raise on log input
        out["parsed_by"] = "fallback"
    return out


