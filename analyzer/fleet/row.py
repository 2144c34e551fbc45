"""One row of the fleet table: what `loglens explain` says about one job, flattened.

The row is built from `api.survey` (explain's report plus the start-up facts), so its verdict
and root cause are exactly what `loglens explain` prints for the same input. Any failure to
read the input is the row's `error`, never an exception: a scan of ten thousand logs must
not stop at one truncated .gz.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from analyzer.errors import LoglensError
from analyzer.fleet.inputs import Job

# name -> polars dtype name (the JSON Schema in schemas/scan-row.schema.json says the same)
COLUMNS: dict[str, str] = {
    "path": "str", "files": "int", "size": "int", "mtime": "float", "lines": "int",
    "system": "str", "verdict": "str", "category": "str", "signature": "str",
    "headline": "str", "root_line": "int", "root_text": "str", "root_rank": "int",
    "root_phase": "str", "root_file": "str", "confidence": "str", "last_phase": "str",
    "first_ts": "str", "last_ts": "str", "duration_s": "float",
    "sglang": "str", "vllm": "str", "torch": "str", "nccl": "str", "cuda": "str",
    "model": "str", "tp": "int", "dp": "int", "pp": "int", "ep": "int", "gpus": "int",
    "hostnames": "str", "error_signatures": "int", "warning_signatures": "int",
    "signatures": "str", "analysis_s": "float", "error": "str",
}
VERSION_COLUMNS = {"sglang": ("sglang",), "vllm": ("vllm",), "torch": ("pytorch", "torch"),
                   "nccl": ("nccl",), "cuda": ("cuda",)}
PARALLEL_ARGS = {
    "tp": ("tp_size", "tensor_parallel_size", "tensor_model_parallel_size", "tp"),
    "dp": ("dp_size", "data_parallel_size", "dp"),
    "pp": ("pp_size", "pipeline_parallel_size", "pipeline_model_parallel_size", "pp"),
    "ep": ("ep_size", "expert_parallel_size", "expert_model_parallel_size", "ep"),
}


def empty_row(job: Job) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(COLUMNS)
    row.update(path=job.path, files=len(job.files), size=job.size if job.size >= 0 else None,
               mtime=job.mtime or None)
    return row


def _iso(t: float | None) -> str | None:
    if t is None:
        return None
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]


def _version(versions: Sequence[dict[str, Any]], names: tuple[str, ...]) -> str | None:
    for v in versions:
        name = str(v.get("name", "")).lower()
        if any(name == n or name.startswith(n + " ") for n in names):
            return str(v.get("value"))
    return None


def _int_arg(args: dict[str, Any], keys: tuple[str, ...]) -> int | None:
    for k in keys:
        value = args.get(k)
        if isinstance(value, bool):
            continue
        if isinstance(value, int):
            return value
        if isinstance(value, str) and value.isdigit():
            return int(value)
    return None


def fill(row: dict[str, Any], survey: dict[str, Any], *, redact: bool) -> dict[str, Any]:
    """The row's analysis columns from a survey (texts redacted unless `redact` is off)."""
    report = survey["report"]
    env = survey["environment"]
    root = report.get("root_cause") or {}
    redactor = survey["redactor"]

    def shown(key: str, value: Any) -> Any:
        return redactor.value(key, value) if redact else value

    sigs = report.get("signatures", [])
    ids = Counter(s["id"] for s in sigs if s.get("kind") == "failure")
    warn_ids = Counter(w.get("id") or "" for w in report.get("warnings", []))
    hosts = survey["hosts"]
    first, last = survey["first_t"], survey["last_t"]
    row.update(
        lines=report.get("lines"), verdict=report.get("verdict"),
        system=root.get("system"), category=root.get("category"),
        signature=root.get("signature"), headline=shown("headline", report.get("headline")),
        root_line=root.get("line"), root_text=shown("text", root.get("text")),
        root_rank=root.get("rank"), root_phase=root.get("phase"),
        root_file=root.get("file") if row["files"] > 1 else None,
        confidence=(report.get("confidence") or {}).get("level"),
        last_phase=(report.get("last_phase") or {}).get("phase"),
        first_ts=_iso(first), last_ts=_iso(last),
        duration_s=round(last - first, 3) if first is not None and last is not None else None,
        model=shown("model", env.get("model")),
        gpus=len(env.get("gpus") or []) or None,
        hostnames=",".join(sorted(hosts.values() if redact else hosts)) or None,
        error_signatures=sum(ids.values()),
        warning_signatures=sum(warn_ids.values()),
        signatures=",".join(sorted(ids)) or None,
    )
    versions = env.get("versions") or []
    for col, names in VERSION_COLUMNS.items():
        row[col] = _version(versions, names)
    args = env.get("args") or {}
    for col, keys in PARALLEL_ARGS.items():
        row[col] = _int_arg(args, keys)
    return row


def analyse(job: Job, *, rules: Sequence[str] = (), redact: bool = True,
            year: int | None = None) -> dict[str, Any]:
    """The row of one job; an unreadable input gives a row with only `error` set."""
    from analyzer import api

    row = empty_row(job)
    start = time.perf_counter()
    try:
        row = fill(row, api.survey(list(job.files), rules=rules, year=year), redact=redact)
    except LoglensError as exc:
        row["error"] = str(exc)
    except (OSError, EOFError) as exc:
        row["error"] = f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # a bug must cost one row, not the scan of a whole fleet
        row["error"] = f"internal error: {type(exc).__name__}: {exc}"
    row["analysis_s"] = round(time.perf_counter() - start, 4)
    return row


DESCRIPTIONS: dict[str, str] = {
    "path": "the log (or, with --group-by-dir, the directory) as named",
    "files": "how many files the job has (one per rank with --group-by-dir)",
    "size": "bytes on disk (compressed size for .gz)",
    "mtime": "newest modification time of the job's files (Unix seconds)",
    "lines": "lines read", "system": "who states the root cause (sglang, vllm, torch, ...)",
    "verdict": "crash, hang, healthy, in_progress or unknown (as loglens explain)",
    "category": "root-cause category", "signature": "the root cause's signature id",
    "headline": "explain's one-line answer", "root_line": "the root cause's line number",
    "root_text": "the root cause's line", "root_rank": "its rank, where the log says",
    "root_phase": "the lifecycle phase it happened in",
    "root_file": "which file of a multi-file job holds it",
    "confidence": "high, medium or low", "last_phase": "the last phase reached",
    "first_ts": "first timestamp (ISO 8601, UTC for zoned times)",
    "last_ts": "last timestamp", "duration_s": "last_ts - first_ts in seconds",
    "sglang": "version", "vllm": "version", "torch": "version", "nccl": "version",
    "cuda": "version", "model": "model path or name",
    "tp": "tensor parallel size", "dp": "data parallel size", "pp": "pipeline parallel size",
    "ep": "expert parallel size", "gpus": "GPUs named in the log",
    "hostnames": "comma-separated host names (pseudonyms unless --no-redact)",
    "error_signatures": "failure signature matches", "warning_signatures": "warnings seen",
    "signatures": "comma-separated failure signature ids",
    "analysis_s": "seconds the analysis took",
    "error": "why the input could not be read (the other columns are then empty)",
}
JSON_TYPES = {"str": "string", "int": "integer", "float": "number"}


def json_schema() -> dict[str, Any]:
    """The JSON Schema of one row (jsonl output; the Parquet/CSV columns are the same)."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://loglens.dev/schemas/scan-row.schema.json",
        "title": "loglens scan row",
        "type": "object",
        "required": list(COLUMNS),
        "additionalProperties": False,
        "properties": {name: {"type": [JSON_TYPES[kind], "null"],
                              "description": DESCRIPTIONS[name]}
                       for name, kind in COLUMNS.items()},
    }
