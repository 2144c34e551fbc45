"""Python tracebacks folded from line rows: chains, ExceptionGroups, logging's "Logging error".

`parse_traceback` never raises; line indexes in its result are 0-based indexes into the
list the caller passed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from analyzer.parse.rows import (
    Json,
    Row,
    clean_lines,
    dump_rows,
    fallback_rows,
)

_BARE_SUFFIXES = ("Error", "Exception", "Interrupt", "Exit", "Warning", "Iteration", "Group")

# Row kinds that start some other dump; they end a traceback section.
_FOREIGN_HEADS = frozenset(
    {"fatal", "thread_head", "stack_head", "ext_modules", "terminate", "bt_head"}
)


def _plausible_type(exc_type: str) -> bool:
    """Outside a traceback body (no header or frame above it) a `Name: text` or `Name`
    line is an exception only if the name looks like one (`queue.Empty`,
    `KeyboardInterrupt`), not like "Killed" or a progress bar's "Train: 8%|..."."""
    base = exc_type.split("(", 1)[0]
    return "." in base or base.endswith(_BARE_SUFFIXES)


@dataclass
class _Track:
    """Fold state for one nesting depth (0: top level, 2+: ExceptionGroup members)."""

    target: list[Json]
    depth: int
    cur: Json | None = None
    mode: str = ""  # "", "frames", "message", "swallow", "callstack", "foreign"
    pending: str | None = None  # relation of the next section to the previous one
    last_frame: Json | None = None
    borders: int = 0
    unindented: set[int] = field(default_factory=set)  # frames at column 0 (paste damage)


class _TracebackFold:
    """Groups rows into sections; rules follow CPython's traceback.py output."""

    def __init__(self, lines: list[str], rows: list[Row]) -> None:
        self.lines = lines
        self.margins = [row.margin for row in rows]
        self.sections: list[Json] = []
        self.groups: list[Json] = []
        self.tracks: dict[int, _Track] = {0: _Track(self.sections, 0)}
        self.group_base: int | None = None
        self.path: list[str] = []
        self.logging_error = False
        self.logged_message: str | None = None
        self.logged_args: str | None = None
        self.call_stack: list[Json] = []

    # -- depth of ExceptionGroup rows ----------------------------------------------------

    def _depth(self, row: Row) -> int:
        if row.kind == "group_header" and row.data[0]:  # "  + Exception Group Traceback"
            self.group_base = row.margin
            self.path = []
            return 1
        if row.kind == "group_rule":
            col = int(row.data[0])
            if self.group_base is None:
                self.group_base = col - 2
        elif row.margin >= 0:
            col = row.margin
            if self.group_base is None:
                self.group_base = col
        else:
            return 0
        return max(1, (col - self.group_base) // 2 + 1)

    def _track(self, depth: int) -> _Track:
        key = 0 if depth <= 1 else depth
        tr = self.tracks.get(key)
        if tr is None:
            tr = self.tracks[key] = _Track(self.groups, key)
        return tr

    # -- sections ------------------------------------------------------------------------

    def _open(self, tr: _Track, header_index: int | None) -> Json:
        sec: Json = {
            "exc_type": None,
            "message": None,
            "exc_index": None,
            "frames": [],
            "relation": tr.pending,
            "header_index": header_index,
            "_msg": None,
        }
        if tr.depth >= 2:
            sec["depth"] = tr.depth
            sec["path"] = ".".join(self.path[: tr.depth - 1])
        tr.pending = None
        tr.cur = sec
        tr.last_frame = None
        tr.target.append(sec)
        return sec

    def _content(self, i: int) -> str:
        """Line `i` without its ExceptionGroup margin ("    | ")."""
        line, margin = self.lines[i], self.margins[i]
        if margin < 0:
            return line
        line = line[margin + 1 :]
        return line[1:] if line[:1] == " " else line

    def _continue(self, tr: _Track, i: int) -> None:
        if tr.cur is not None and tr.cur["_msg"] is not None:
            tr.cur["_msg"].append(self._content(i).rstrip())

    def _frame(self, tr: _Track, i: int, data: tuple[Any, ...]) -> Json:
        path, lineno, func, indented = data
        frame: Json = {"file": path, "line": lineno, "func": func, "index": i, "source": None}
        if not indented:
            tr.unindented.add(i)
        tr.last_frame = frame
        return frame

    # -- rows ----------------------------------------------------------------------------

    def feed(self, i: int, row: Row) -> None:
        kind = row.kind
        depth = self._depth(row)
        if kind == "group_rule":
            self._group_rule(depth, row.data[1])
            return
        tr = self._track(depth)
        if tr.mode == "swallow" and self._swallow(tr, i, row):
            return
        if kind in ("tb_header", "group_header"):
            self._open(tr, i)
            tr.mode = "frames"
        elif kind in ("cause_sep", "context_sep"):
            tr.cur = None
            tr.pending = "cause" if kind == "cause_sep" else "context"
            tr.mode = ""
        elif kind == "frame":
            self._on_frame(tr, i, row)
        elif kind == "exc":
            self._on_exc(tr, i, row)
        elif kind == "source":
            self._on_source(tr, i)
        elif kind == "repeated":
            if tr.last_frame is not None and tr.mode in ("frames", "callstack"):
                tr.last_frame["repeated"] = row.data[0]
        elif kind == "blank":
            if tr.mode == "message":
                tr.mode = ""
        elif kind == "logging_error":
            self.logging_error = True
            tr.cur, tr.mode, tr.pending = None, "", None
        elif kind == "call_stack":
            tr.cur, tr.mode, tr.last_frame = None, "callstack", None
        elif kind == "logged_message":
            self.logged_message = row.data[0]
            tr.mode = ""
        elif kind == "logged_args":
            self.logged_args = row.data[0]
            tr.mode = ""
        elif kind in _FOREIGN_HEADS:
            tr.cur, tr.mode = None, "foreign"
        elif kind != "carets":
            self._on_text(tr, i)

    def _group_rule(self, depth: int, title: str | None) -> None:
        parent = self._track(depth - 1)
        if parent.mode in ("message", "swallow"):
            parent.mode = ""
        if title is None:  # "+------------------------------------": the group is closed
            tr = self._track(depth)
            tr.cur, tr.mode = None, ""
            return
        self.path = [*self.path[: max(depth - 2, 0)], title]
        for key in [k for k in self.tracks if k > depth]:
            del self.tracks[key]
        tr = self._track(depth)
        tr.cur, tr.mode, tr.pending, tr.last_frame = None, "", None, None

    def _on_frame(self, tr: _Track, i: int, row: Row) -> None:
        if tr.mode == "foreign":
            return
        frame = self._frame(tr, i, row.data)
        if tr.mode == "callstack":
            self.call_stack.append(frame)
            return
        if tr.cur is None or tr.cur["exc_index"] is not None:
            self._open(tr, None)
            tr.last_frame = frame
        assert tr.cur is not None
        tr.cur["frames"].append(frame)
        tr.mode = "frames"

    def _on_exc(self, tr: _Track, i: int, row: Row) -> None:
        if tr.mode == "message":
            self._continue(tr, i)
            return
        exc_type, has_sep, message = row.data
        if tr.mode == "foreign" or (tr.mode != "frames" and not _plausible_type(exc_type)):
            self._on_text(tr, i)
            return
        sec = tr.cur
        if sec is None or sec["exc_index"] is not None:
            sec = self._open(tr, None)
        sec["exc_type"] = exc_type
        sec["exc_index"] = i
        sec["_msg"] = [message] if has_sep else None
        tr.borders = 0
        if not has_sep:
            tr.mode = ""
        elif exc_type.endswith("ChildFailedError"):
            tr.mode = "swallow"  # its message is the elastic summary, frames and all
        else:
            tr.mode = "message"

    def _on_source(self, tr: _Track, i: int) -> None:
        if tr.mode == "message":
            self._continue(tr, i)
        elif tr.mode in ("frames", "callstack"):
            frame = tr.last_frame
            if frame is not None and frame["source"] is None:
                frame["source"] = self._content(i).strip()

    def _on_text(self, tr: _Track, i: int) -> None:
        if tr.mode == "message":
            self._continue(tr, i)
            return
        frame = tr.last_frame
        if (
            tr.mode in ("frames", "callstack")
            and frame is not None
            and frame["source"] is None
            and frame["index"] == i - 1
            and frame["index"] in tr.unindented
        ):
            frame["source"] = self._content(i).strip()  # indentation lost with the frame's

    def _swallow(self, tr: _Track, i: int, row: Row) -> bool:
        """ChildFailedError's message: the elastic summary up to its closing border."""
        if row.kind == "blank" or row.kind in ("cause_sep", "context_sep"):
            tr.mode = ""
            return row.kind == "blank"
        if row.kind == "tb_header" and not row.data[0] and self.lines[i][:1] == "T":
            tr.mode = ""
            return False
        self._continue(tr, i)
        text = self._content(i).strip()
        if len(text) >= 4 and set(text) <= {"=", "*"}:
            tr.borders += 1
            if tr.borders >= 2:
                tr.mode = ""
        return True

    # -- result --------------------------------------------------------------------------

    def result(self, parsed_by: str) -> Json:
        for sec in (*self.sections, *self.groups):
            msg = sec.pop("_msg")
            if msg is not None:
                sec["message"] = "\n".join(msg).rstrip().lstrip("\n")
        first = next((s for s in self.sections if s["exc_index"] is not None), None)
        last = self.sections[-1] if self.sections else None
        group_first = next((s for s in self.groups if s["exc_index"] is not None), None)
        frame_lists = [s["frames"] for s in (*self.sections, *self.groups)]
        frame_lists.append(self.call_stack)
        return {
            "sections": self.sections,
            "statement_index": first["exc_index"] if first else None,
            "exc_type": first["exc_type"] if first else None,
            "message": first["message"] if first else None,
            "final_exc_type": last["exc_type"] if last else None,
            "final_index": last["exc_index"] if last else None,
            "logging_error": self.logging_error,
            "logged_message": self.logged_message,
            "logged_args": self.logged_args,
            "call_stack": self.call_stack,
            "signal_handler_frames": _signal_handlers(frame_lists),
            "groups": self.groups,
            "group_statement_index": group_first["exc_index"] if group_first else None,
            "parsed_by": parsed_by,
        }


_SIGNAL_WORD = re.compile(
    r"sig(?:nals?|quit|term|int|chld|child|hup|usr[12]|abrt|segv|alrm|pipe|kill|bus|fpe)?"
)


def _is_signal_name(name: str) -> bool:
    """sigquit_handler, _signal_handler, launch_phase_sigquit_handler, handle_sigterm."""
    words = [w for w in name.lower().split("_") if w]
    return any(_SIGNAL_WORD.fullmatch(w) for w in words) and any("handl" in w for w in words)


# A caller line that runs a function it does not name: a generator resumed by next() (torch's
# `_tcp_rendezvous_handler` under `next(rendezvous_iterator)`), a coroutine, a callback.
_INDIRECT_CALL = re.compile(r"\bnext\(|\.send\(|\bawait\b|\byield\b|handler|callback|hook|"
                            r"dispatch|\bfn\(|\bfunc\(")


def _signal_handlers(frame_lists: list[list[Json]]) -> list[str]:
    """Frames that run as signal handlers: named so, or a `*_handler` that the frame
    below did not call (a signal interrupted that line)."""
    found: list[str] = []
    for frames in frame_lists:
        for j, frame in enumerate(frames):
            func = str(frame["func"])
            name = func.rsplit(".", 1)[-1]
            hit = _is_signal_name(name) or name.lower() == "sighandler"
            if not hit and (name == "handler" or name.endswith("_handler")) and j > 0:
                caller_source = str(frames[j - 1].get("source") or "")
                hit = (bool(caller_source) and name not in caller_source
                       and not _INDIRECT_CALL.search(caller_source))
            if hit and func not in found:
                found.append(func)
    return found


def _empty_traceback() -> Json:
    return {
        "sections": [],
        "statement_index": None,
        "exc_type": None,
        "message": None,
        "final_exc_type": None,
        "final_index": None,
        "logging_error": False,
        "logged_message": None,
        "logged_args": None,
        "call_stack": [],
        "signal_handler_frames": [],
        "groups": [],
        "group_statement_index": None,
        "parsed_by": "fallback",
    }


def _fold_traceback(lines: list[str], rows: list[Row], parsed_by: str) -> Json:
    fold = _TracebackFold(lines, rows)
    for i, row in enumerate(rows):
        fold.feed(i, row)
    return fold.result(parsed_by)


def parse_traceback(lines: list[str]) -> Json:
    """Sections (oldest first), the originating and the final exception of a traceback.

    Handles header-less fragments, frames that lost their indentation, 3.11+ caret
    lines, `raise ... from` / implicit chains, ExceptionGroup trees (members go to
    `groups`, each with `depth` and a `path` like "1.2"), and logging's
    "--- Logging error ---" block (its "Call stack:" frames go to `call_stack`).
    """
    clean = clean_lines(lines)
    try:
        rows, how = dump_rows(clean)
        return _fold_traceback(clean, rows, how)
    except Exception:  # never raise on log input
        try:
            return _fold_traceback(clean, fallback_rows(clean), "fallback")
        except Exception:
            return _empty_traceback()


