"""Stage 2: physical lines -> frames (wrappers peeled, head parsed, message isolated).

A physical line may carry several wrappers (`sglang-1  | `, `(WorkerDict pid=8, ip=…) `,
`[rank3]:`), tqdm's carriage-return refreshes and ANSI colours around the program's own
record. Framing removes all of that, recording what it removed, so later stages see the
record itself and know who wrote it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from analyzer.model import Frame, Head, Prefix, SourceLine, bounded_int
from analyzer.parse import grammars
from analyzer.parse.timestamps import MONTHS, YearResolver, iso

ANSI = re.compile(r"\x1b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
SGLANG_TAG = re.compile(r"(DP|TP|PP|EP|ATTN_CP|MOE_DP|CP)(-?\d+)")
PROC_RANKS = re.compile(r"_(TP|DP|PP|EP|PCP|DCP)(\d+)")
ENGINE_CORE_DP = re.compile(r"EngineCore_(\d+)$")  # vLLM 0.10: "EngineCore_0" is DP rank 0
C10_RANK = re.compile(r"\[(?:PG[^\]]*?)?Rank (\d+)\]")
# glued in front of a record by a terminal or by two writers sharing a line: "^C" echoes, a
# printer's dots, a traceback's ^^^^ marker line that lost its newline
GLUED_JUNK = re.compile(r"(?:\^C)+|\.{2,}(?=\[)|\s*[\^~]{3,}(?=\[rank\d+\]:)")
LOOKS_LIKE_RECORD = re.compile(
    r"(?:Traceback \(|\s|[\w.]+(?:Error|Exception|Exit)\b|[\w.-]+:\d+:\d+ |\[|\(|[A-Z]+ \d\d-\d\d )"
)
# the end of a tqdm state: "42%|####  | 10/24 [00:03<00:04,  3.1it/s]" (bounded: no backtracking
# over long lines); a record glued after it belongs to the line too
TQDM_STATE = re.compile(r"\d{1,3}%(?: Completed \||\|[^|\r]{0,200}\|)\s*\d+(?:\.\d+)?[kMGTPEZY]?/"
                        r"\d+(?:\.\d+)?[kMGTPEZY]? \[[^\]\r]{0,100}\]")
VLLM_PROCS = ("VllmWorker", "Worker", "EngineCore", "APIServer", "RayWorkerWrapper", "MainProcess")
TIMESTAMP_WRAPPERS = {"docker_ts", "kubectl", "launcher", "journald"}
LEVEL_WORDS = {
    "DEBUG": "debug", "INFO": "info", "WARNING": "warning", "WARN": "warning",
    "ERROR": "error", "CRITICAL": "critical", "FATAL": "critical",
}
SEVERITY_LETTERS = {"F": "critical", "E": "error", "W": "warning", "I": "info", "V": "debug",
                    "D": "debug"}
CCL_LEVELS = {"CCL_ERROR": "error", "CCL_FATAL": "critical", "CCL_WARN": "warning",
              "CCL_INFO": "info", "CCL_DEBUG": "debug", "CCL_TRACE": "debug"}
TAG_SYSTEMS = {"gloo": "torch", "c10d": "torch"}  # others: the writer decides (process, ...)
RANK_KEYS = {"TP": "tp", "DP": "dp", "PP": "pp", "EP": "ep", "ATTN_CP": "cp", "CP": "cp",
             "MOE_DP": "moe_dp", "PCP": "cp", "DCP": "dcp"}


# a colour code whose ESC a paste lost: "[36m(RayWorkerWrapper pid=1)[0m", "[0;36m(Worker_TP2
# pid=4)[0;0m" (GitHub shows the rest of the sequence as text); an SGR shape, never "[5m]"
# rsyslog writes the ESC as "#033": "#033[2m#033[33m(raylet)#033[0m"
ORPHAN_SGR = re.compile(r"(?:#033|(?<![\w\[\]]))\[(?:\d{1,3};)*\d{1,3}m(?!\])")


def strip_ansi(text: str) -> str:
    """Remove terminal escape sequences (colours, cursor moves), and colour codes that lost
    their ESC in a paste; keep the text."""
    if "\x1b" in text:
        text = ANSI.sub("", text)
    if "m" in text and "[" in text:
        text = ORPHAN_SGR.sub("", text)
    return text


def level_word(word: str) -> str | None:
    """Map a level word, tolerating pasted damage such as 'RROR' or 'ARNING'."""
    if word in LEVEL_WORDS:
        return LEVEL_WORDS[word]
    for full, level in LEVEL_WORDS.items():
        if len(word) >= 3 and full.endswith(word):
            return level
    return None


@cache
def _first_wrapper() -> Callable[[str], int]:
    return grammars.first_candidate(grammars.wrapper_parsers())


@cache
def _first_head() -> Callable[[str], int]:
    return grammars.first_candidate(grammars.head_parsers())


class Framer:
    """Frames the lines of one input; keeps the little state that needs (year, last system)."""

    def __init__(self, year: int | None = None,
                 inferred: Sequence[re.Pattern[str]] = ()) -> None:
        self.years = YearResolver(year)
        self.system_hint = "other"
        self.inferred = tuple(inferred)  # this input's own prefixes (prefixes.infer)
        self.labels: set[str] = set()  # pdsh/srun labels seen in front of a record

    def frame(self, line: SourceLine) -> Frame:
        """Frame one physical line."""
        raw = line.text
        text = strip_ansi(raw)
        prefixes, rest = self._peel(text)
        segments = [s for s in rest.split("\r") if s.strip()] if "\r" in rest else []
        body = segments[-1] if segments else rest.replace("\r", "")
        frame = Frame(
            lineno=line.lineno, raw=raw, clean=text.replace("\r", " ") if "\r" in text else text,
            prefixes=prefixes, head=None, message=body,
            segments=segments if len(segments) > 1 else [],
        )
        self._identity_from_prefixes(frame)
        head_info = self._head(body, prefixes)
        if (head_info is None or head_info[0].fmt == "wrapper") and "%" in body:
            glued = self._glued_record(frame, segments, body)
            if glued is not None:
                body, head_info = glued
                frame.message = body
        if head_info is not None:
            head, end = head_info
            frame.head = head
            frame.message = body[end:]
            for key, value in head.rank.items():
                frame.rank.setdefault(key, value)
            if head.process and not frame.process:
                frame.process = head.process
            if head.pid is not None and frame.pid is None:
                frame.pid = head.pid
        if "global" not in frame.rank and "Rank " in frame.message:
            m = C10_RANK.search(frame.message)
            if m and (frame.head is None or frame.head.system in ("torch", "ray")):  # Ray
                # relays a torch C++ exception's what(): "[PG 0 (default_pg) Rank 0] ..."
                frame.rank["global"] = bounded_int(m.group(1))
        return frame

    def timestamp(self, line: SourceLine) -> str | None:
        """The timestamp `frame(line).head` would have, at a third of the cost: what a line
        without its own time inherits from the line before it."""
        text = strip_ansi(line.text)
        prefixes, rest = self._peel(text)
        if "\r" in rest or "%" in rest:  # progress redraws and glued records: the full way
            head = self.frame(line).head
            return head.timestamp if head is not None else None
        info = self._head(rest, prefixes)
        return info[0].timestamp if info is not None else None

    def _glued_record(self, frame: Frame, segments: list[str], body: str
                      ) -> tuple[str, tuple[Head, int]] | None:
        """A progress bar that did not end its line, then another program's record:
        "...| 0/67 [00:00<?, ?it/s]DEBUG 08-06 10:25:44 [cuda_piecewise_backend.py:151] ...".
        The bar becomes a "progress" prefix; the record's wrappers and head are parsed."""
        last = None
        for m in TQDM_STATE.finditer(body):
            last = m
        if last is None or not body[last.end():].strip():
            return None
        inner_prefixes, rest = self._peel(body[last.end():])
        bar = "\r".join([*segments[:-1], body[:last.end()]])
        prefixes = [*frame.prefixes, Prefix("progress", bar), *inner_prefixes]
        head_info = self._head(rest, prefixes)
        if head_info is None or head_info[0].fmt == "wrapper":
            return None
        frame.prefixes, frame.segments = prefixes, []
        self._identity_from_prefixes(frame)
        return rest, head_info

    # -- wrappers -------------------------------------------------------------------------
    def _peel(self, text: str) -> tuple[list[Prefix], str]:
        prefixes: list[Prefix] = []
        pos = 0
        parsers = grammars.wrapper_parsers()
        first = _first_wrapper()
        inferred = 0
        for _ in range(8):
            here = text[pos:] if pos else text
            for parser in parsers[first(here):]:
                hit = parser.match(here)
                if hit is None:
                    continue
                end, fields = hit
                rest = text[pos + end:]
                if parser.name == "quote" and not (pos == 0 and self.recognised(rest)):
                    continue  # only before a known record: "> building index" is a bullet
                if parser.name == "pdsh":
                    label = text[pos:pos + end].strip()
                    if label in self.labels and (not rest or text[pos + end - 1].isspace()):
                        pass  # a label this input already used: any body may follow
                    elif not _pdsh_prefix(text, pos, end, rest):
                        continue
                    elif len(self.labels) < 4096:
                        self.labels.add(label)
                prefixes.append(Prefix(parser.name, text[pos:pos + end], _clean_fields(fields)))
                pos += end
                break
            else:
                junk = GLUED_JUNK.match(here)  # "^C" echoed by a terminal, a printer's "...."
                if junk is not None:
                    prefixes.append(Prefix("junk", junk.group()))
                    pos += junk.end()
                    continue
                # no known wrapper here: the next of the prefixes this input taught that
                # matches. One may be skipped: inference reads a quote back (sample_text), so
                # a quoted paste teaches `> ` first, which the quote wrapper peeled already
                m = None
                while inferred < len(self.inferred) and m is None:
                    m = self.inferred[inferred].match(here)
                    inferred += 1
                if m is None or not m.end():
                    break
                prefixes.append(Prefix("inferred", text[pos:pos + m.end()]))
                pos += m.end()
        return prefixes, text[pos:]

    def body(self, text: str) -> str:
        """The text after its wrappers (the record itself)."""
        return self._peel(strip_ansi(text))[1]

    def recognised(self, text: str) -> bool:
        """Whether a text starts with a wrapper or a record head the grammars know."""
        prefixes, rest = self._peel(text)
        if prefixes:
            return True
        info = self._head(rest, prefixes)  # a bare [word] tag is a head only in context
        return info is not None and info[0].fmt not in ("wrapper", "tag")

    def _identity_from_prefixes(self, frame: Frame) -> None:
        for p in frame.prefixes:
            f = p.fields
            if p.kind == "process":
                if "RAY_DAEMON" in f:  # Ray's own daemon: a name, no pid
                    frame.process = f["RAY_DAEMON"]
                    continue
                name = f.get("PROC_NAME", "").strip()
                frame.pid = bounded_int(f["INT"])
                frame.process = name or f"pid={f['INT']}"
                if "PROC_RANK" in f:
                    frame.rank["global"] = bounded_int(f["PROC_RANK"].strip().split("=")[1])
                for key, num in PROC_RANKS.findall(name):
                    frame.rank[RANK_KEYS.get(key, key.lower())] = bounded_int(num)
                dp = ENGINE_CORE_DP.match(name)
                if dp:
                    frame.rank["dp"] = bounded_int(dp.group(1))
                if name.startswith(VLLM_PROCS):
                    self.system_hint = "vllm"
            elif p.kind == "kubectl_prefix":
                frame.process = frame.process or str(f["K8S_POD"])  # the pod: one process
            elif p.kind == "rank":
                frame.rank["global"] = bounded_int(f["INT"])
            elif p.kind == "pdsh" and p.text.strip().rstrip(":").isdigit():
                # srun --label's task id: the rank when srun starts one task per GPU (a
                # [rankN] label inside, from torchrun under srun, is more precise)
                frame.rank["task"] = bounded_int(p.text.strip().rstrip(":"))
            elif p.kind == "mpirun":  # "[jobid,rank]<stdout>:"; _clean_fields joined the INTs
                ints = f.get("INT", "").split(",")
                if len(ints) == 2 and ints[1].isdigit():
                    frame.rank["global"] = bounded_int(ints[1])

    # -- heads ----------------------------------------------------------------------------
    def _head(self, body: str, prefixes: list[Prefix]) -> tuple[Head, int] | None:
        wrapper_ts = self._wrapper_timestamp(prefixes)
        parsers = grammars.head_parsers()
        for parser in parsers[_first_head()(body):]:
            hit = parser.match(body)
            if hit is None:
                continue
            end, fields = hit
            head = self._build_head(parser.name, body[:end], fields)
            if parser.name == "bracket_ts":
                end = self._message_head(head, body, end)
            if wrapper_ts is not None:
                head.timestamp = wrapper_ts
            return head, end
        if wrapper_ts is None:
            return None
        launcher = next((p for p in prefixes if p.kind == "launcher"), None)
        if launcher is not None:  # the launcher's own record: its level and logger are the head
            logger = launcher.fields.get("LOGGER", "")
            return Head(fmt="launcher", system="torch" if logger.startswith("torch") else "python",
                        text="", timestamp=wrapper_ts, level=LEVEL_WORDS.get(
                            launcher.fields.get("LEVEL", "")), site=logger or None), 0
        return Head(fmt="wrapper", system="other", text="", timestamp=wrapper_ts), 0

    def _message_head(self, head: Head, body: str, end: int) -> int:
        """After `[date time]`, the message may open with another program's head."""
        rest = body[end:]
        for parser in grammars.message_head_parsers():
            hit = parser.match(rest)
            if hit is None:
                continue
            inner_end, fields = hit
            name = parser.name
            if name == "nccl":
                inner = self._build_head("nccl", rest[:inner_end], fields)
                inner.timestamp = head.timestamp
                head.fmt, head.system, head.level = "nccl", "nccl", inner.level
                head.process, head.pid, head.site = inner.process, inner.pid, inner.site
                head.fields.update(inner.fields)
            elif name == "msg_deepspeed":
                head.fmt, head.system = "deepspeed", "torch"
                head.level = LEVEL_WORDS.get(fields.get("LEVEL", ""))
                head.site = fields.get("DS_SITE")
            elif name == "msg_torch_legacy":
                head.fmt, head.system = "torch_legacy", "torch"
                head.level = LEVEL_WORDS.get(fields.get("LEVEL", ""))
                head.site = fields.get("LOGGER")
            elif name == "msg_level_site":
                head.level = LEVEL_WORDS.get(fields.get("LEVEL", ""))
                head.site = fields.get("SRCSITE")
            elif name == "uvicorn":
                head.level = LEVEL_WORDS.get(fields.get("LEVEL", ""))
                head.fields["uvicorn"] = True
            head.text = body[: end + inner_end]
            return end + inner_end
        return end

    def _wrapper_timestamp(self, prefixes: list[Prefix]) -> str | None:
        for p in prefixes:
            if p.kind not in TIMESTAMP_WRAPPERS:
                continue
            f = p.fields
            if "RFC3339" in f:
                stamp = str(f["RFC3339"])
                return _iso_from_date(self, stamp[:10], stamp[11:19], stamp[19:].split("+")[0]
                                      .split("Z")[0].split("-")[0] or None)
            if "DATE" in f:
                return _iso_from_date(self, str(f["DATE"]), str(f["TIME"]), f.get("FRAC"))
            if "SYSLOG_TS" in f:
                mon, day, time = str(f["SYSLOG_TS"]).split()
                month = MONTHS.get(mon)
                if month:
                    return iso(self.years.month(month), month, int(day), time)
        return None

    def _build_head(self, rule: str, text: str, f: dict[str, Any]) -> Head:
        head = Head(fmt=rule, system="other", text=text)
        if rule == "bracket_ts":
            head.system = "sglang"
            head.timestamp = _iso_from_date(self, str(f["DATE"]), str(f["TIME"]), f.get("FRAC"))
            tags = f.get("RANK_TAG")
            tag_list = tags if isinstance(tags, list) else ([tags] if tags else [])
            for tag in tag_list:
                m = SGLANG_TAG.fullmatch(tag)
                if m:
                    head.rank[RANK_KEYS[m.group(1)]] = bounded_int(m.group(2))
            if tag_list:
                head.process = " ".join(tag_list)
                self.system_hint = "sglang"
            elif self.system_hint == "other":
                self.system_hint = "sglang"
        elif rule == "vllm":
            head.system = "vllm"
            self.system_hint = "vllm"
            head.level = level_word(str(f["VLLM_LEVEL"]))
            month, day = (int(x) for x in str(f["MMDD"]).split("-"))
            head.timestamp = iso(self.years.month(month), month, day, str(f["TIME"]), f.get("FRAC"))
            head.site = str(f["SRCSITE"])
        elif rule == "nccl":
            head.system = "nccl"
            ints = f.get("INT")
            int_list = ints if isinstance(ints, list) else [str(ints)]
            head.pid = bounded_int(int_list[0])
            head.process = f"{f['NCCL_HOST']}:{int_list[0]}"
            level = str(f.get("NCCL_LEVEL", "INFO"))
            head.level = {"INFO": "info", "WARN": "warning", "TRACE": "debug", "CALL": "debug",
                          "ERROR": "error"}.get(level)
            if "NCCL_DEV" in f:
                head.fields["device"] = bounded_int(str(f["NCCL_DEV"]))
            if "NCCL_SRC" in f:
                head.site = f"{f['NCCL_SRC']}:{f['NCCL_LINE']}"
            if "NCCL_FUNC" in f:
                head.fields["func"] = str(f["NCCL_FUNC"])
            if "NCCL_PRETTY" in f:  # "int nccl_net_ofi_create_plugin(...)": the name is the site
                name = str(f["NCCL_PRETTY"]).split("(", 1)[0].rsplit(" ", 1)[-1].lstrip("*")
                head.site = f"{name}:{f['NCCL_LINE']}"
                head.fields["func"] = name
            head.fields["host"] = str(f["NCCL_HOST"])
        elif rule == "c10":
            head.system = "torch"
            head.level = SEVERITY_LETTERS.get(str(f["C10_SEV"]))
            head.site = str(f["SRCSITE"])
            when = f.get("C10_WHEN")
            if when:
                parts = str(when).split()
                md = bounded_int(parts[0])
                month, day = md // 100, md % 100
                if 1 <= month <= 12:
                    head.timestamp = iso(self.years.month(month), month, day, parts[1][:8])
                if len(parts) > 2:
                    head.pid = bounded_int(parts[2])
        elif rule == "glog":
            head.system = "torch"
            sev = str(f["GLOG_SEV"])
            head.level = SEVERITY_LETTERS.get(sev[0])
            month, day = int(sev[1:3]), int(sev[3:5])
            if 1 <= month <= 12:
                head.timestamp = iso(self.years.month(month), month, day, str(f["TIME"]),
                                     f.get("FRAC"))
            head.pid = bounded_int(str(f["INT"]))
            head.process = f"pid={f['INT']}"
            head.site = str(f["SRCSITE"])
        elif rule == "oneccl":
            head.level = CCL_LEVELS.get(str(f["CCL_LEVEL"]))
            head.timestamp = _iso_from_date(self, str(f["CCL_DATE"]).replace(":", "-"),
                                            str(f["CCL_TIME"]), None)
            head.pid = bounded_int(str(f["INT"]))
            head.process = f"pid={f['INT']}"
        elif rule == "neuron_rt":
            head.system = "neuron"
            head.level = level_word(str(f["LEVEL"]))
            nrt_year, nrt_mon, nrt_day = str(f["NRT_DATE"]).split("-")
            nrt_month = MONTHS.get(nrt_mon)
            if nrt_month:
                head.timestamp = _iso_from_date(self, f"{nrt_year}-{nrt_month:02d}-{nrt_day}",
                                                str(f["TIME"]), f.get("FRAC"))
            ints = f.get("INT")
            int_list = ints if isinstance(ints, list) else [str(ints)]
            head.pid = bounded_int(int_list[0])
            head.process = f"pid={int_list[0]}"
            head.site = str(f["NRT_SITE"])
        elif rule == "ray_cpp":
            head.system = "ray"
            head.timestamp = _iso_from_date(self, str(f["DATE"]), str(f["TIME"]), f.get("FRAC"))
            head.level = SEVERITY_LETTERS.get(str(f["RAY_SEV"]), "critical")
            ids = f.get("RAY_ID")
            int_list = ids if isinstance(ids, list) else [str(ids)]
            head.pid = bounded_int(int_list[0])
            component = str(f.get("RAY_COMPONENT") or "").strip(" ()")
            head.process = f"{component or 'ray'} pid={int_list[0]}"
            head.site = str(f["SRCSITE"])
        elif rule == "kernel":
            head.system = "kernel"
            ktime = str(f["KTIME"]).strip()
            if not ktime[0].isdigit():
                parts = ktime.split()
                kmonth = MONTHS.get(parts[1])
                if kmonth:
                    head.timestamp = iso(int(parts[4]), kmonth, int(parts[2]), parts[3])
        elif rule == "uvicorn":
            head.system = self.system_hint if self.system_hint != "other" else "other"
            head.level = LEVEL_WORDS.get(str(f["LEVEL"]))
            head.fields["uvicorn"] = True
        elif rule in ("pylog_basic", "pylog_level_logger"):
            logger = str(f.get("LOGGER") or f.get("DOTTED_LOGGER"))
            head.system = "torch" if logger.startswith("torch") else "python"
            head.level = LEVEL_WORDS.get(str(f["LEVEL"]))
            head.site = logger
        elif rule in ("pylog_dash", "hf_log"):
            head.system = "python"
            head.timestamp = _iso_from_date(self, str(f["DATE"]), str(f["TIME"]), f.get("FRAC"))
            head.level = LEVEL_WORDS.get(str(f["LEVEL"]))
            head.site = str(f["SRCSITE"])
        elif rule == "nemo":
            head.system = "nemo"
            head.timestamp = _iso_from_date(self, str(f["DATE"]), str(f["TIME"]), f.get("FRAC"))
            head.level = SEVERITY_LETTERS.get(str(f["NEMO_SEV"]), "critical")
            head.site = str(f["SRCSITE"])
        elif rule == "rich":
            head.level = LEVEL_WORDS.get(str(f["RICH_LEVEL"]).strip())
        elif rule == "level_tag":
            word = str(f["LT_LEVEL"]).strip("|[]").rsplit("_", 1)[-1]
            head.level = LEVEL_WORDS.get(word)
        elif rule == "tag":
            tag = str(f["TAG"])
            head.system = TAG_SYSTEMS.get(tag.lower(), "other")
            head.fields["tag"] = tag
        return head


def _pdsh_prefix(text: str, pos: int, end: int, rest: str) -> bool:
    """Whether "host:" is pdsh's label: "host: <a record>", or "host:" alone (an empty
    output line of that host, outermost only), not a word and a colon."""
    if not rest.strip():
        return pos == 0
    if text[pos] == " " and text[pos:pos + end].strip()[:-1].isdigit():
        return True  # srun --label pads the task id (" 3: " beside "12: "): no word does that
    return text[pos + end - 1].isspace() and bool(LOOKS_LIKE_RECORD.match(rest))


def _iso_from_date(framer: Framer, date: str, time: str, frac: Any) -> str | None:
    year, month, day = (int(x) for x in date.split("-"))
    framer.years.dated(year, month)
    return iso(year, month, day, time, str(frac) if frac else None)


def _clean_fields(fields: dict[str, Any]) -> dict[str, str]:
    return {k: (",".join(v) if isinstance(v, list) else str(v)) for k, v in fields.items()
            if not k.startswith("_") and k not in ("SPACE", "PAD")}
