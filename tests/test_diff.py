"""`loglens diff A B`: real pairs from the corpus with golden outputs, each comparison
function alone, the JSON schema, and the CLI's exit codes and one-line errors.

`pytest tests/test_diff.py --update-golden` rewrites tests/diff/ from the current build
(review the diff).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from analyzer.compare import build, config, headline, inputs, metrics, outcome, phases, rawscan
from analyzer.compare import signatures as sigs
from analyzer.report.diff_text import render_diff_markdown, render_diff_text

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "diff"
SCHEMA = ROOT / "analyzer" / "report" / "schemas" / "diff.schema.json"
SEED = "corpus/seed"
B35 = "corpus/b35-forks-ci-forums-slurm-serving"
PAIRS = {
    # the same 8-GPU Kimi-K2.5 server: started fine at 0.85, died in KV-cache allocation at 0.55
    "kimi-mem-fraction": (f"{SEED}/seed-sglang-tp8-healthy-deepgemm-warning-long-capture.log",
                          f"{SEED}/seed-sglang-tp8-oom-sigquit-logging-error.log"),
    # the same DGX Spark Qwen2.5-1.5B server: bf16 KV cache fine, fp4 KV cache's JIT kernel
    # fails to build during CUDA-graph capture
    "spark-fp4-kv": (f"{B35}/sglang-dgx-spark-qwen25-bf16-mem040-readonly-hf-cache-healthy.log",
                     f"{B35}/sglang-dgx-spark-qwen25-fp4-kv-flashinfer-jit-nvcc-dtype-conversion"
                     "-crash.log"),
    # two healthy vLLM 0.11.0 Llama-3.1-8B starts; B loads weights 12x slower (an L4 box)
    "vllm-two-healthy": ("corpus/b15-serving-platforms/vllm-v1-0110-llama31-8b-energy-profiling"
                         "-batch-clean-shutdown-healthy.log",
                         "corpus/b12-serving/vllm-0110-l4-llama31-8b-tensorflow-xla-e0000"
                         "-register-factory-healthy.log"),
}
TIMEOUT = 240


def _load(path: str) -> dict[str, Any]:
    return inputs.load(path)


@pytest.fixture(scope="module")
def runs() -> dict[str, dict[str, Any]]:
    """Each corpus log of the pairs, loaded once."""
    names = {p for pair in PAIRS.values() for p in pair}
    import os

    cwd = os.getcwd()
    os.chdir(ROOT)  # relative names, as a user types them: the goldens hold them
    try:
        return {name: _load(name) for name in sorted(names)}
    finally:
        os.chdir(cwd)


@pytest.fixture(scope="module")
def diffs(runs: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {key: build.diff(runs[a], runs[b]) for key, (a, b) in PAIRS.items()}


def _stable(diff: Mapping[str, Any]) -> dict[str, Any]:
    """The diff without what changes with every release (the generator's version)."""
    return {**diff, "generator": "loglens"}


def _golden(path: Path, text: str, update: bool) -> None:
    if update:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"{path} missing: run pytest {__file__} --update-golden"
    assert text == path.read_text(encoding="utf-8"), f"{path.name} differs from the golden"


# -- golden outputs on real pairs --------------------------------------------------------------

@pytest.mark.parametrize("key", list(PAIRS))
def test_json_golden(diffs: dict[str, dict[str, Any]], key: str, update_golden: bool) -> None:
    text = json.dumps(_stable(diffs[key]), indent=2, ensure_ascii=False) + "\n"
    _golden(GOLDEN / f"{key}.json", text, update_golden)


@pytest.mark.parametrize("key", list(PAIRS))
def test_text_golden(diffs: dict[str, dict[str, Any]], key: str, update_golden: bool) -> None:
    _golden(GOLDEN / f"{key}.txt", render_diff_text(diffs[key], width=100), update_golden)


# -- what the pairs must say -------------------------------------------------------------------

def test_kimi_headline_names_the_flag_and_both_outcomes(diffs: dict[str, dict[str, Any]]) -> None:
    d = diffs["kimi-mem-fraction"]
    assert d["headline"] == ("B: --mem-fraction-static 0.55 (A: 0.85); B died in kv_cache_alloc "
                             "(kv cache insufficient), A reached ready in 10m45s")
    changed = {c["key"]: (c["a"], c["b"]) for c in d["config"]["args"]
               if c["change"] == "changed"}
    assert changed == {"mem_fraction_static": ("0.85", "0.55"),
                       "cuda_graph_max_bs": ("512", "128")}
    assert d["leads"][0]["key"] == "mem_fraction_static"
    # printed only by B's longer ServerArgs dump: listed, never leading
    added = {c["key"] for c in d["config"]["args"] if c["change"] == "added"}
    assert {"chunked_prefill_size", "dp_size"} <= added
    noise = {c["key"] for c in d["config"]["args"] if c["noise"]}
    assert {"random_seed", "host"} <= noise


def test_kimi_phases_show_where_b_stopped(diffs: dict[str, dict[str, Any]]) -> None:
    rows = {r["phase"]: r for r in diffs["kimi-mem-fraction"]["phases"]["rows"]}
    assert rows["kv_cache_alloc"]["mark"] == "failed"
    assert rows["cuda_graph_capture"]["mark"] == "not_reached"
    assert rows["cuda_graph_capture"]["a"]["seconds"] == 316.0
    assert rows["weight_load"]["mark"] is None  # 5m17s vs 5m12s: the same
    assert rows["weight_load"]["b"]["progress"] == "Loading safetensors checkpoint shards: 64/64"
    assert diffs["kimi-mem-fraction"]["phases"]["never_reached"][:3] == [
        "cuda_graph_capture", "warmup", "ready"]


def test_kimi_outcome_and_signatures(diffs: dict[str, dict[str, Any]]) -> None:
    d = diffs["kimi-mem-fraction"]
    assert d["a"]["verdict"] == "healthy" and d["a"]["ready_after"] == 645.0
    assert d["b"]["root_cause"]["signature"] == "sglang.not_enough_memory"
    assert d["outcome"]["verdict_changed"] is True
    assert d["outcome"]["b_failure_seen_in_a"] is None
    new = {s["key"]: s for s in d["signatures"]["new"]}
    assert new["sglang.not_enough_memory"]["kind"] == "cause"
    assert new["sglang.not_enough_memory"]["line_b"] == 68
    assert "sglang.sigquit_from_child" in new
    # the benign DeepGemm warning both printed is not a difference
    assert all(s["key"] != "sglang.deepgemm_scale_fmt" for k in ("new", "gone", "changed")
               for s in d["signatures"][k])
    memory = {m["name"]: m for m in d["metrics"]}
    assert memory["memory used by Load weight end"]["a"] == 68.51


def test_spark_headline_blames_the_kv_cache_dtype(diffs: dict[str, dict[str, Any]]) -> None:
    d = diffs["spark-fp4-kv"]
    assert d["headline"].startswith("B: --kv-cache-dtype fp4_e2m1 (A: auto); B died in "
                                    "cuda_graph_capture (kernel compile), A reached ready in ")
    keys = {c["key"]: c for c in d["config"]["args"]}
    assert keys["kv_cache_dtype"]["a"] == "auto" and keys["kv_cache_dtype"]["b"] == "fp4_e2m1"
    assert keys["random_seed"]["noise"] and keys["port"]["noise"]
    rows = {r["phase"]: r for r in d["phases"]["rows"]}
    assert rows["cuda_graph_capture"]["mark"] == "failed"
    assert rows["cuda_graph_capture"]["b"]["progress"].endswith("0/36")
    kv = next(m for m in d["metrics"] if m["name"] == "KV cache tokens")
    assert (kv["a"], kv["b"]) == (1557709.0, 5539718.0)  # fp4 holds 3.6x the tokens
    assert "compiler.error" in {s["key"] for s in d["signatures"]["new"]}


def test_two_healthy_starts_name_the_slow_phase(diffs: dict[str, dict[str, Any]]) -> None:
    d = diffs["vllm-two-healthy"]
    assert d["headline"] == ("B: --max-model-len 32000 (A: 4096); B's weight_load took 2m13s "
                             "(A: 11s); both reached ready (A in 38s, B in 3m59s)")
    rows = {r["phase"]: r for r in d["phases"]["rows"]}
    assert rows["weight_load"]["mark"] == "slower" and rows["weight_load"]["delta"] == 122.0
    assert rows["serving"]["mark"] is None  # how long a log goes on serving is no slowness
    # the same checkpoint in two directories is not a model change
    assert all(c["noise"] for c in d["config"]["model"])
    assert not d["config"]["versions"]
    gen = next(m for m in d["metrics"] if m["name"] == "Generation throughput: generation")
    assert gen["stat"] == "median" and gen["a"] > 0 and gen["b"] > 0


def test_markdown_tells_the_same_story(diffs: dict[str, dict[str, Any]]) -> None:
    md = render_diff_markdown(diffs["kimi-mem-fraction"])
    assert md.startswith("### loglens diff: B: --mem-fraction-static 0.55 (A: 0.85)")
    assert "| `--mem-fraction-static` | 0.85 | 0.55 |" in md
    assert "| kv_cache_alloc |" in md and "✗ failed here" in md
    assert "sglang.not_enough_memory" in md



# -- HTML ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("key", list(PAIRS))
def test_html_is_one_inert_page_with_both_runs_on_one_axis(diffs: dict[str, dict[str, Any]],
                                                           key: str) -> None:
    from analyzer.report.diff_html import render_diff_html

    diff = diffs[key]
    page = render_diff_html(diff)
    assert page.startswith("<!DOCTYPE html>") and "Content-Security-Policy" in page
    assert "<script" not in page.lower() and "src=" not in page and "href=" not in page
    rows = diff["phases"]["rows"]
    drawn_a = [r for r in rows if r.get("a") and isinstance(r["a"].get("offset"), int | float)]
    drawn_b = [r for r in rows if r.get("b") and isinstance(r["b"].get("offset"), int | float)]
    # one bar per phase each run reached, both lanes in the one SVG, its axis from +0s
    svg = page[page.index("<svg class=\"gantt\""):page.index("</svg>")]
    assert svg.count("<title>A ") == len(drawn_a) and svg.count("<title>B ") == len(drawn_b)
    assert ">+0s</text>" in svg
    for r in rows:
        assert f"<td>{r['phase']}</td>" in page


def test_html_marks_where_b_failed_and_escapes_log_text(diffs: dict[str, dict[str, Any]]) -> None:
    from analyzer.report.diff_html import render_diff_html

    page = render_diff_html(diffs["kimi-mem-fraction"])
    assert "<span class=\"mark-failed\">✗ failed here</span>" in page
    assert "✗ kv_cache_alloc</text>" in page  # on B's lane, where it stopped
    assert "<code>--mem-fraction-static</code>" in page
    hostile = json.loads(json.dumps(diffs["kimi-mem-fraction"]))
    hostile["headline"] = "<script>alert(1)</script>"
    hostile["b"]["root_cause"]["text"] = "RuntimeError: <img src=x onerror=alert(1)>"
    hostile["phases"]["rows"][0]["phase"] = "</svg><script>x</script>"
    page = render_diff_html(hostile)
    assert "<script" not in page and "<img" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


@pytest.mark.browser
def test_html_renders_in_a_browser(diffs: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    from analyzer.report.diff_html import render_diff_html
    from tests.test_html import _keep, _open_page

    tools, url = _open_page(tmp_path, render_diff_html(diffs["kimi-mem-fraction"]), "diff-kimi")
    try:
        bars = tools.evaluate("document.querySelectorAll('svg.gantt rect[rx]').length")
        width = tools.evaluate("document.querySelector('svg.gantt').getBoundingClientRect()"
                               ".width")
        shot = _keep(tmp_path, "diff-kimi")
        tools.screenshot(shot)
        problems = tools.problems(url)
    finally:
        tools.close()
    assert problems == []
    assert bars >= 10 and width > 600
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# -- the JSON schema ---------------------------------------------------------------------------

def _check(value: Any, schema: Mapping[str, Any], root: Mapping[str, Any], where: str) -> None:
    """The part of JSON Schema the diff schema uses: $ref, oneOf, const, enum, type,
    required, properties, items (jsonschema is not a dependency)."""
    if "$ref" in schema:
        target: Any = root
        for part in str(schema["$ref"]).lstrip("#/").split("/"):
            target = target[part]
        _check(value, target, root, where)
        return
    if "oneOf" in schema:
        fits = 0
        for option in schema["oneOf"]:
            try:
                _check(value, option, root, where)
                fits += 1
            except AssertionError:
                pass
        assert fits == 1, f"{where}: {value!r} fits {fits} of oneOf"
        return
    if "const" in schema:
        assert value == schema["const"], where
    if "enum" in schema:
        assert value in schema["enum"], f"{where}: {value!r} not in {schema['enum']}"
    if "type" in schema:
        kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        py = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None),
              "integer": int, "number": (int, float)}
        ok = any(isinstance(value, py[k]) and not (k in ("integer", "number")
                                                    and isinstance(value, bool)) for k in kinds)
        assert ok, f"{where}: {value!r} is not {kinds}"
    if isinstance(value, dict):
        for key in schema.get("required", []):
            assert key in value, f"{where}: missing {key}"
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                _check(value[key], sub, root, f"{where}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            _check(item, schema["items"], root, f"{where}[{i}]")


def validate(doc: Any) -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    _check(doc, schema, schema, "$")


@pytest.mark.parametrize("key", list(PAIRS))
def test_outputs_match_the_schema(diffs: dict[str, dict[str, Any]], key: str) -> None:
    validate(json.loads(json.dumps(diffs[key])))


def test_the_schema_check_catches_a_broken_document(diffs: dict[str, dict[str, Any]]) -> None:
    broken = json.loads(json.dumps(diffs["kimi-mem-fraction"]))
    broken["phases"]["rows"][0]["mark"] = "sideways"
    with pytest.raises(AssertionError):
        validate(broken)
    del broken["headline"]
    with pytest.raises(AssertionError):
        validate(broken)


# -- each comparison function alone ------------------------------------------------------------

def _run(args: dict[str, Any] | None = None, *, env: dict[str, Any] | None = None,
         versions: dict[str, str] | None = None, model: str | None = "m",
         report: dict[str, Any] | None = None, command: dict[str, Any] | None = None
         ) -> dict[str, Any]:
    return {"environment": {"model": model, "args": args or {}, "gpus": [],
                            "versions": [{"name": k, "value": v, "line": 1}
                                         for k, v in (versions or {}).items()]},
            "scan": {"env": {k: {"values": [v], "line": 1} for k, v in (env or {}).items()},
                     "command": {k: {"value": v, "line": 1} for k, v in (command or {}).items()}},
            "report": report or {"verdict": "healthy", "phases": [], "signatures": [],
                                 "warnings": [], "symptoms": [], "root_cause": None,
                                 "last_phase": None},
            "timeline": {}, "metrics": [], "memory": {"steps": [], "facts": []}}


def test_config_only_what_differs() -> None:
    a = _run({"tp_size": 8, "mem_fraction_static": 0.85, "dtype": "auto", "random_seed": 1},
             env={"NCCL_P2P_DISABLE": "0", "NCCL_IB_HCA": "mlx5"}, versions={"sglang": "0.5.4"})
    b = _run({"tp_size": 8.0, "mem_fraction_static": 0.55, "random_seed": 2, "page_size": 16},
             env={"NCCL_P2P_DISABLE": "1", "NCCL_IB_HCA": "mlx5", "CUDA_LAUNCH_BLOCKING": "1"},
             versions={"sglang": "0.5.5"})
    got = config.diff_config(a, b)
    args = {c["key"]: (c["a"], c["b"], c["change"], c["noise"]) for c in got["args"]}
    assert args == {"mem_fraction_static": ("0.85", "0.55", "changed", False),
                    "dtype": ("auto", None, "removed", False),
                    "random_seed": ("1", "2", "changed", True),
                    "page_size": (None, "16", "added", False)}  # tp 8 == 8.0: no difference
    env = {c["key"]: (c["a"], c["b"]) for c in got["env"]}
    assert env == {"NCCL_P2P_DISABLE": ("0", "1"), "CUDA_LAUNCH_BLOCKING": (None, "1")}
    assert got["versions"][0]["a"] == "0.5.4" and got["versions"][0]["b"] == "0.5.5"
    assert got["model"] == []


def test_config_uuids_and_moved_checkpoints_are_no_difference() -> None:
    a = _run({"kv_transfer_config": "Cfg(engine_id='4a03f263-52d6-40da-b3a2-4109d9e7db0c')"},
             model="/data/models/Llama-3.1-8B")
    b = _run({"kv_transfer_config": "Cfg(engine_id='b9583e16-3a59-4858-acaf-9e85f351ef83')"},
             model="meta-llama/Llama-3.1-8B")
    got = config.diff_config(a, b)
    assert got["args"] == []
    assert got["model"][0]["noise"] is True


def test_config_launch_command_completes_the_arguments() -> None:
    a = _run({}, command={"tp": "8", "mem_fraction_static": "0.85"})
    b = _run({}, command={"tp": "8", "mem_fraction_static": "0.7"})
    got = config.diff_config(a, b)
    assert [(c["key"], c["a"], c["b"]) for c in got["args"]] == [
        ("mem_fraction_static", "0.85", "0.7")]


@pytest.mark.parametrize(("line", "want"), [
    ("host-1:123:456 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0",
     [("NCCL_SOCKET_IFNAME", "eth0")]),
    ("host-1:123:456 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.",
     [("NCCL_IB_DISABLE", "1")]),
    ("+ export VLLM_WORKER_MULTIPROC_METHOD=spawn", [("VLLM_WORKER_MULTIPROC_METHOD", "spawn")]),
    ("NCCL_DEBUG=INFO NCCL_P2P_DISABLE=1", [("NCCL_DEBUG", "INFO"), ("NCCL_P2P_DISABLE", "1")]),
    ("[2025-12-12 14:02:37,357] [INFO] [launch.py:184:main] Setting CUDA_VISIBLE_DEVICES=2",
     [("CUDA_VISIBLE_DEVICES", "2")]),
    ("env SGLANG_USE_AITER=1 SGLANG_INT4_WEIGHT=1 python3 -m sglang.launch_server --tp 8",
     [("SGLANG_USE_AITER", "1"), ("SGLANG_INT4_WEIGHT", "1")]),
    # advice, not settings
    ("RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)", []),
    ("NCCL INFO Dmabuf feature disabled without NCCL_DMABUF_ENABLE=1", []),
    ('For even more developer context, set TORCH_LOGS="+dynamo"', []),
])
def test_rawscan_env_settings(line: str, want: list[tuple[str, str]]) -> None:
    assert rawscan.env_settings(line) == want


def test_rawscan_launch_flags() -> None:
    got = rawscan.launch_flags("run.sh: line 19: 34410 Killed  python -m sglang.launch_server "
                               "--model-path /m/Qwen3 --tp 8 --trust-remote-code "
                               "--mem-fraction-static=0.8 2>&1 | tee x.log")
    assert got == {"model_path": "/m/Qwen3", "tp": "8", "trust_remote_code": "true",
                   "mem_fraction_static": "0.8"}
    assert rawscan.launch_flags("vllm serve Qwen/Qwen2.5-1.5B-Instruct "
                                "--gpu-memory-utilization 0.3") == {
        "model": "Qwen/Qwen2.5-1.5B-Instruct", "gpu_memory_utilization": "0.3"}
    assert rawscan.launch_flags("UserWarning: 'python -m sglang.launch_server' is still "
                                "supported") == {}
    scanned = rawscan.scan(["x", "+ export NCCL_DEBUG=INFO", "vllm serve m --max-model-len 8192"])
    assert scanned["env"] == {"NCCL_DEBUG": {"values": ["INFO"], "line": 2}}
    assert scanned["command"]["max_model_len"] == {"value": "8192", "line": 3}


def _side(seconds: float | None, state: str | None = None) -> dict[str, Any]:
    return {"start": None, "offset": None, "seconds": seconds, "open": False, "progress": None,
            "state": state}


def test_phase_marks() -> None:
    assert phases.mark(_side(100), _side(200), phase="weight_load") == "slower"
    assert phases.mark(_side(100), _side(140), phase="weight_load") is None  # < 1.5x
    assert phases.mark(_side(10), _side(30), phase="weight_load") is None  # < 30 s more
    assert phases.mark(_side(200), _side(60), phase="weight_load") == "faster"
    assert phases.mark(_side(10), None, phase="warmup") == "not_reached"
    assert phases.mark(_side(10), _side(None, "failed"), phase="x") == "failed"
    assert phases.mark(None, _side(5), phase="compile") == "new"
    assert phases.mark(_side(10), _side(900), phase="serving") is None


def _phase(name: str, start: str, end: str | None, rank: int = 0) -> dict[str, Any]:
    from analyzer.report.timeline import epoch

    t0, t1 = epoch(start), epoch(end) if end else None
    return {"rank": rank, "process": f"TP{rank}", "phase": name, "start": start, "end": end,
            "seconds": (t1 - t0) if t1 is not None and t0 is not None else None,
            "progress": None}


def test_diff_phases_side_by_side() -> None:
    a = _run(report={"verdict": "healthy", "last_phase": {"phase": "serving"}, "phases": [
        _phase("weight_load", "2026-01-01T00:00:10", "2026-01-01T00:01:10"),
        _phase("cuda_graph_capture", "2026-01-01T00:01:10", "2026-01-01T00:02:00"),
        _phase("serving", "2026-01-01T00:02:00", None)]})
    b = _run(report={"verdict": "in_progress", "last_phase": {"phase": "cuda_graph_capture"},
                     "phases": [
        _phase("weight_load", "2026-01-02T00:00:00", "2026-01-02T00:05:00"),
        _phase("cuda_graph_capture", "2026-01-02T00:05:00", None)]})
    rows = {r["phase"]: r for r in phases.diff_phases(a, b)}
    assert rows["weight_load"]["mark"] == "slower" and rows["weight_load"]["delta"] == 240.0
    assert rows["weight_load"]["b"]["offset"] == 0.0 and rows["weight_load"]["a"]["offset"] == 0.0
    assert rows["serving"]["mark"] == "not_reached"
    assert phases.ready_after(a) == 110.0 and phases.ready_after(b) is None


def _warn(line: int, text: str, sig: str | None = None, n: int = 1,
          benign: bool = False) -> dict[str, Any]:
    return {"line": line, "text": text, "id": sig, "benign": benign, "count": n}


def test_signature_template_masks_numbers() -> None:
    assert sigs.template("[2026-02-22 23:19:14 TP3] CUDA error at 0x7f3a: rank 3 of 8") == \
        "CUDA error at 0x#: rank # of #"


def test_diff_signatures_new_gone_changed() -> None:
    ra = {"signatures": [{"id": "nccl.timeout", "line": 9, "kind": "failure", "role": "failure"}],
          "warnings": [_warn(3, "[x] WARNING slow rank 1", n=2),
                       _warn(4, "W deprecated", "torch.deprecated", n=1, benign=True)],
          "symptoms": [], "root_cause": None}
    rb = {"signatures": [],
          "warnings": [_warn(5, "[y] WARNING slow rank 7", n=40),
                       _warn(6, "[y] WARNING NCCL_P2P off", n=1)],
          "symptoms": [], "root_cause": {"line": 20, "text": "RuntimeError: boom 42",
                                         "signature": None}}
    got = sigs.diff_signatures(ra, rb)
    assert [s["key"] for s in got["new"]] == ["RuntimeError: boom #", "WARNING NCCL_P#P off"]
    assert [s["kind"] for s in got["new"]] == ["cause", "warning"]
    assert {s["key"] for s in got["gone"]} == {"nccl.timeout", "torch.deprecated"}
    assert [(s["key"], s["a"], s["b"]) for s in got["changed"]] == [
        ("WARNING slow rank #", 2, 40)]


def test_outcome_a_printed_b_s_error_and_survived() -> None:
    a = _run(report={"verdict": "healthy", "phases": [], "signatures": [], "symptoms": [],
                     "root_cause": None, "last_phase": {"phase": "serving"},
                     "warnings": [_warn(7, "Watchdog caught collective", "nccl.watchdog")]})
    root = {"category": "nccl_timeout", "signature": "nccl.watchdog", "line": 30,
            "text": "Watchdog caught collective", "phase": "serving"}
    b = _run(report={"verdict": "crash", "phases": [], "signatures": [], "symptoms": [],
                     "root_cause": root, "last_phase": {"phase": "serving"},
                     "warnings": [_warn(12, "[t] WARNING new flag is experimental")]})
    s = sigs.diff_signatures(a["report"], b["report"])
    got = outcome.diff_outcome(a, b, s)
    assert got["b_failure_seen_in_a"] == {"line": 7, "count": 1, "kind": "warning",
                                          "text": "Watchdog caught collective",
                                          "survived": True}
    assert got["lead"]["key"] == "WARNING new flag is experimental"
    assert got["same_root_cause"] is False and got["verdict_changed"] is True


def test_metrics_only_where_both_print_them() -> None:
    a = _run()
    b = _run()
    a["metrics"] = [{"metric": "gen", "title": "Generation throughput", "series": [
        {"label": "generation", "who": "", "unit": "tok/s",
         "points": [[0, 100.0], [1, 120.0], [2, 110.0]]}]}]
    b["metrics"] = [{"metric": "gen", "title": "Generation throughput", "series": [
        {"label": "generation", "who": "", "unit": "tok/s", "points": [[0, 50.0], [1, 60.0]]}]},
        {"metric": "usage", "title": "KV", "series": [
            {"label": "kv", "who": "", "unit": "%", "points": [[0, 90.0]]}]}]
    a["memory"] = {"steps": [], "facts": [{"label": "KV cache size", "value": "10.63 GB"}]}
    b["memory"] = {"steps": [], "facts": [{"label": "KV cache size", "value": "5.5 GB"}]}
    rows = metrics.diff_metrics(a, b)
    assert [(r["name"], r["a"], r["b"], r["stat"]) for r in rows] == [
        ("Generation throughput: generation", 110.0, 55.0, "median"),
        ("KV cache size", 10.63, 5.5, "value")]
    assert len(metrics.notable(rows)) == 2


def test_headline_ranking_prefers_what_the_error_names() -> None:
    root = {"category": "kv_cache_insufficient", "phase": "kv_cache_alloc",
            "text": "Not enough memory. Please increase --mem-fraction-static."}
    changes = {"model": [], "versions": [], "gpus": [], "env": [], "args": [
        {"section": "args", "key": "random_seed", "a": "1", "b": "2", "change": "changed",
         "noise": True},
        {"section": "args", "key": "chunked_prefill_size", "a": "8192", "b": "4096",
         "change": "changed", "noise": False},
        {"section": "args", "key": "mem_fraction_static", "a": "0.85", "b": "0.55",
         "change": "changed", "noise": False}]}
    ranked = headline.ranked(changes, root, "kv_cache_alloc")
    assert [c["key"] for c in ranked] == ["mem_fraction_static", "chunked_prefill_size",
                                          "random_seed"]
    assert headline.describe(ranked[0]) == "B: --mem-fraction-static 0.55 (A: 0.85)"
    env = {"section": "env", "key": "NCCL_P2P_DISABLE", "a": None, "b": "1", "change": "added",
           "noise": False}
    assert headline.describe(env) == "B: NCCL_P2P_DISABLE=1 (A: not set)"


# -- the command -------------------------------------------------------------------------------

def loglens(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "analyzer", *args], capture_output=True,
                          timeout=TIMEOUT, cwd=ROOT, check=False, input=stdin,
                          env={"PATH": "/usr/bin:/bin", "COLUMNS": "100",
                               "LOGLENS_CACHE_DIR": ""})


def _one_line_error(proc: subprocess.CompletedProcess[bytes], *words: str) -> None:
    err = proc.stderr.decode()
    assert proc.returncode == 2, (proc.returncode, err)
    assert "Traceback" not in err
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("loglens: ")
    for w in words:
        assert w in lines[0].lower(), lines[0]
    assert proc.stdout == b""


def test_cli_text_matches_the_golden() -> None:
    a, b = PAIRS["kimi-mem-fraction"]
    proc = loglens("diff", a, b)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode() == (GOLDEN / "kimi-mem-fraction.txt").read_text(encoding="utf-8")


def test_cli_json_and_output_by_extension(tmp_path: Path) -> None:
    a, b = PAIRS["spark-fp4-kv"]
    proc = loglens("diff", a, b, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    validate(doc)
    assert doc["schema"] == "loglens.diff/1"
    assert doc["headline"].startswith("B: --kv-cache-dtype fp4_e2m1 (A: auto)")
    md = tmp_path / "diff.md"
    proc = loglens("diff", a, b, "-o", str(md))
    assert proc.returncode == 0 and proc.stdout == b""
    assert md.read_text(encoding="utf-8").startswith("### loglens diff: B: --kv-cache-dtype")
    page = tmp_path / "diff.html"
    proc = loglens("diff", a, b, "-o", str(page))
    assert proc.returncode == 0 and proc.stdout == b""
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_cli_directories_gz_and_stdin(tmp_path: Path) -> None:
    import gzip

    a, b = PAIRS["kimi-mem-fraction"]
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.mkdir()
    bad.mkdir()
    shutil.copy(ROOT / a, good / "server.log")
    (bad / "server.log.gz").write_bytes(gzip.compress((ROOT / b).read_bytes()))
    proc = loglens("diff", str(good), str(bad), "-f", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["headline"].startswith("B: --mem-fraction-static 0.55 (A: 0.85); B died in")
    assert doc["a"]["file"] == str(good)
    proc = loglens("diff", a, "-", "-f", "json", stdin=(ROOT / b).read_bytes())
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["b"]["file"] == "-" and doc["b"]["verdict"] == "crash"


def test_cli_bad_input_is_one_line(tmp_path: Path) -> None:
    a = PAIRS["kimi-mem-fraction"][0]
    _one_line_error(loglens("diff", a, "no/such.log"), "no such file")
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    _one_line_error(loglens("diff", str(empty), a), "empty")
    garbage = tmp_path / "garbage.log"
    garbage.write_bytes(bytes(range(256)) * 64)
    _one_line_error(loglens("diff", a, str(garbage)), "does not look like a text log")
    _one_line_error(loglens("diff", "-", "-"), "stdin")
    _one_line_error(loglens("diff", a, a, "-o", a), "refusing to overwrite")
    _one_line_error(loglens("diff", a, a, "--format", "xml"), "xml")  # (html is a format now)
    _one_line_error(loglens("diff", a), "missing argument")
    _one_line_error(loglens("diff", a, str(tmp_path)), "no readable log files")


def test_cli_help_lists_diff() -> None:
    proc = loglens("diff", "--help")
    assert proc.returncode == 0
    out = proc.stdout.decode()
    assert "loglens diff yesterday.log today.log" in out and "Exit codes" in out
    assert b"diff" in loglens("--help").stdout
