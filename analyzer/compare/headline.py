"""The headline: the most likely relevant difference first, then how the outcomes differ.

    B: --mem-fraction-static 0.55 (A: 0.85); B died in kv_cache_alloc (kv cache
    insufficient), A reached ready in 10m47s

A configuration difference leads when one is plausibly related: named by B's error or its
fix, one of the arguments that decide memory, parallelism or kernels for the phase B failed
in, a version, the GPUs, an environment variable. Seeds, ports and paths never lead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from analyzer.compare import config as cfg
from analyzer.compare import phases as ph
from analyzer.report.common import human_duration

# the arguments that decide what each phase does (substrings of argument names)
RELATED: dict[str, tuple[str, ...]] = {
    "memory": ("mem_fraction", "gpu_memory_utilization", "max_model_len", "context_length",
               "max_total_tokens", "kv_cache", "max_running_requests", "max_num_seqs",
               "max_num_batched_tokens", "chunked_prefill", "cuda_graph_max_bs",
               "cpu_offload", "swap_space", "block_size", "page_size", "quantization", "dtype"),
    "graphs": ("cuda_graph", "enforce_eager", "torch_compile", "compilation", "attention",
               "kv_cache_dtype", "quantization", "dtype", "disable_", "enable_", "backend"),
    "parallel": ("tp_size", "tensor_parallel", "pp_size", "pipeline_parallel", "dp_size",
                 "data_parallel", "ep_size", "nnodes", "node_rank", "dist_", "nccl",
                 "enable_dp_attention", "distributed_executor"),
    "load": ("load_format", "quantization", "dtype", "trust_remote_code", "revision",
             "tokenizer", "model_impl"),
}
PHASE_GROUP = {"kv_cache_alloc": "memory", "memory_profile": "memory",
               "cuda_graph_capture": "graphs", "compile": "graphs", "warmup": "graphs",
               "dist_init": "parallel", "weight_load": "load"}
CATEGORY_GROUP = (("oom", "memory"), ("memory", "memory"), ("kv_cache", "memory"),
                  ("nccl", "parallel"), ("collective", "parallel"), ("timeout", "parallel"),
                  ("graph", "graphs"), ("compile", "graphs"), ("kernel", "graphs"),
                  ("cuda", "graphs"), ("weight", "load"), ("import", "load"))
IMPORTANT = frozenset({"dtype", "quantization", "kv_cache_dtype", "tp_size",
                       "tensor_parallel_size", "pp_size", "pipeline_parallel_size", "dp_size",
                       "data_parallel_size", "ep_size", "nnodes", "mem_fraction_static",
                       "gpu_memory_utilization", "max_model_len", "context_length",
                       "max_num_seqs", "max_running_requests", "max_num_batched_tokens",
                       "chunked_prefill_size", "attention_backend", "enforce_eager",
                       "disable_cuda_graph", "cuda_graph_max_bs", "enable_torch_compile",
                       "speculative_algorithm", "enable_dp_attention", "load_format"})


def _groups(root: Mapping[str, Any] | None, phase: str | None) -> set[str]:
    out = set()
    if phase and phase in PHASE_GROUP:
        out.add(PHASE_GROUP[phase])
    category = str((root or {}).get("category") or "")
    for word, group in CATEGORY_GROUP:
        if word in category:
            out.add(group)
    return out


def _mentioned(key: str, root: Mapping[str, Any] | None) -> bool:
    if not root:
        return False
    text = " ".join(str(root.get(k) or "") for k in ("text", "summary", "remediation"))
    return key in text or cfg.flag(key) in text


def _value_in(value: str | None, root: Mapping[str, Any] | None) -> bool:
    """B's new value appears in B's error (`fp8` in an fp8 kernel's failure)."""
    if not root or not value or len(value) < 3 or value in ("True", "False", "None"):
        return False
    text = str(root.get("text") or "").lower()
    parts = [p for p in re.split(r"[_\W]+", value.lower()) if len(p) >= 3 and not p.isdigit()]
    return value.lower() in text or any(p in text for p in parts)


def score(change: Mapping[str, Any], root: Mapping[str, Any] | None, phase: str | None) -> int:
    """How likely this difference explains B's outcome (higher first; < 0 never leads)."""
    if change.get("noise"):
        return -100
    section, key = str(change.get("section")), str(change.get("key"))
    base = {"model": 60, "versions": 45, "gpus": 45, "env": 25, "args": 10}.get(section, 0)
    s = base
    if change.get("change") != "changed":
        s -= 30  # printed by one run only: often a shorter dump, not a change
    if section == "args":
        if _mentioned(key, root):
            s += 100
        if key in IMPORTANT:
            s += 20
        groups = _groups(root, phase)
        if any(any(w in key for w in RELATED[g]) for g in groups):
            s += 30
    elif section == "env" and _mentioned(key, root):
        s += 100
    if _value_in(change.get("b"), root):
        s += 40
    return s


def ranked(config: Mapping[str, list[dict[str, Any]]], root: Mapping[str, Any] | None,
           phase: str | None) -> list[dict[str, Any]]:
    """Every difference, most relevant first (stable within equal scores)."""
    changes = cfg.all_changes(config)
    scored = sorted(((score(c, root, phase), i, c) for i, c in enumerate(changes)),
                    key=lambda t: (-t[0], t[1]))
    return [{**c, "score": s} for s, _, c in scored]


def describe(change: Mapping[str, Any]) -> str:
    """`B: --mem-fraction-static 0.55 (A: 0.85)`, `B: NCCL_P2P_DISABLE=1 (A: not set)`."""
    section, key = change["section"], change["key"]
    a = change["a"] if change["a"] is not None else "not printed"
    b = change["b"] if change["b"] is not None else "not printed"
    if section == "args":
        return f"B: {cfg.flag(key)} {b} (A: {a})"
    if section == "env":
        a = change["a"] if change["a"] is not None else "not set"
        b = change["b"] if change["b"] is not None else "not set"
        return f"B: {key}={b} (A: {a})"
    if section == "model":
        return f"B: model {b} (A: {a})"
    if section == "gpus":
        return f"B: {key} {b} (A: {a})"
    return f"B: {key} {b} (A: {a})"


def duration(seconds: float | None) -> str:
    """`6m12s`, `41s`, `1h05m`: the explain report's way of saying it."""
    return "?" if seconds is None else human_duration(seconds)


def _end(run: Mapping[str, Any]) -> str:
    """How one run ended, in a few words."""
    verdict = run["verdict"]
    root = run.get("root_cause") or {}
    phase = root.get("phase") or run.get("last_phase")
    what = str(root.get("category") or "").replace("_", " ")
    if verdict == "crash":
        return f"died in {phase or 'start-up'}" + (f" ({what})" if what else "")
    if verdict == "hang":
        return f"hung in {phase or 'start-up'}" + (f" ({what})" if what else "")
    if run.get("ready"):
        after = run.get("ready_after")
        return "reached ready" + (f" in {duration(after)}" if after is not None else "")
    if verdict == "in_progress":
        progress = f" ({run['progress']})" if run.get("progress") else ""
        return f"stopped in {phase or 'start-up'}{progress} without an error"
    if verdict == "healthy":
        return "finished without a failure"
    return "ended with no recognised lines"


def outcome_phrase(outcome: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> str:
    """B's end against A's: `B died in kv_cache_alloc (…), A reached ready in 10m47s`."""
    a, b = outcome["a"], outcome["b"]
    if a["verdict"] == b["verdict"] and a["verdict"] in ("healthy", "in_progress") and \
            a.get("ready") == b.get("ready"):
        slow = ph.slowest(list(rows))
        both = f"both {_end(b)}"
        if a.get("ready") and a.get("ready_after") is not None and \
                b.get("ready_after") is not None:
            both = (f"both reached ready (A in {duration(a['ready_after'])}, "
                    f"B in {duration(b['ready_after'])})")
        if slow is not None:
            sa, sb = slow["a"]["seconds"], slow["b"]["seconds"]
            return f"B's {slow['phase']} took {duration(sb)} (A: {duration(sa)}); {both}"
        return both
    if outcome.get("same_root_cause"):
        return f"both {_end(b)}: the same failure"
    return f"B {_end(b)}, A {_end(a)}"


def headline(config: Mapping[str, list[dict[str, Any]]], rows: Sequence[Mapping[str, Any]],
             outcome: Mapping[str, Any], sigs: Mapping[str, list[dict[str, Any]]]) -> str:
    """The one sentence that leads the diff (see the module docstring)."""
    b = outcome["b"]
    root = b.get("root_cause")
    phase = focus_phase(outcome, rows)
    parts = []
    top = ranked(config, root, phase)
    if top and top[0]["score"] > 0:
        parts.append(describe(top[0]))
    parts.append(outcome_phrase(outcome, rows))
    seen = outcome.get("b_failure_seen_in_a")
    if seen and seen.get("survived"):
        parts.append(f"A printed the same error (L{seen.get('line')}) and survived")
    if not (top and top[0]["score"] > 0):
        lead = outcome.get("lead")
        if lead:
            what = lead.get("id") or lead.get("key")
            parts.append(f"new in B: {str(what)[:80]}")
        elif not config_has_any(config):
            parts.append("no configuration difference printed")
    return "; ".join(parts)


def focus_phase(outcome: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> str | None:
    """The phase B's outcome is about: where it failed or stopped, else its slowest one."""
    b = outcome["b"]
    root = b.get("root_cause") or {}
    if root.get("phase"):
        return str(root["phase"])
    slow = ph.slowest(list(rows))
    if slow is not None:
        return str(slow["phase"])
    last = b.get("last_phase")
    return None if b.get("ready") or not last else str(last)


def config_has_any(config: Mapping[str, list[dict[str, Any]]]) -> bool:
    return any(c for c in cfg.all_changes(config) if not c.get("noise"))
