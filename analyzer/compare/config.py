"""Configuration differences: model, versions, GPUs, server / launch arguments and the
environment variables the logs print. Only what differs, old (A) -> new (B).

Each difference is `{"section", "key", "a", "b", "change", "noise"}`: `change` is `changed`
(both printed it), `added` (only B printed it) or `removed` (only A did); `noise` marks keys
that differ between any two runs (random seeds, ports) so they never lead the headline.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

MAX_VALUE = 160
NOISE_ARGS = frozenset({
    "random_seed", "seed", "port", "host", "nccl_port", "dist_init_addr", "metrics_port",
    "dist_port", "bootstrap_port", "disaggregation_bootstrap_port", "api_key",
    "log_level", "log_level_http", "uvicorn_log_level", "served_model_name", "download_dir",
    "file_storage_path", "crash_dump_folder", "tokenizer_path", "model_tag",
    "enable_metrics", "show_time_cost", "decrypted_config_file", "decrypted_draft_config_file",
})
NOISE_SUFFIXES = ("_port", "_dir", "_folder", "_file")
NOISE_ENV = frozenset({"CUDA_VISIBLE_DEVICES", "NCCL_DEBUG", "NCCL_DEBUG_SUBSYS",
                       "NCCL_DEBUG_FILE", "TORCH_LOGS", "CUDA_HOME", "CUDA_PATH"})


def _text(value: Any) -> str:
    """One value as the diff shows it: Python-ish literals, long ones cut."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, str):
        s = value
    elif isinstance(value, int | float):
        s = repr(value)
    else:
        try:
            s = json.dumps(value, sort_keys=True, default=str)
        except (TypeError, ValueError):
            s = str(value)
    return s if len(s) <= MAX_VALUE else s[:MAX_VALUE - 1] + "…"


_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                   r"[0-9a-fA-F]{12}")


def _same(a: Any, b: Any) -> bool:
    """Equal values; numbers by value, and ids that differ in every run (UUIDs) masked."""
    if isinstance(a, int | float) and isinstance(b, int | float) and \
            not isinstance(a, bool) and not isinstance(b, bool):
        return float(a) == float(b)
    ta, tb = _text(a), _text(b)
    return ta == tb or _UUID.sub("#", ta) == _UUID.sub("#", tb)


def same_model(a: str, b: str) -> bool:
    """The same checkpoint under another directory (`/models/X` and `org/X`)."""
    def base(s: str) -> str:
        return s.rstrip("/").rsplit("/", 1)[-1].lower()
    return base(a) == base(b)


def _change(section: str, key: str, a: Any, b: Any, *, a_has: bool, b_has: bool,
            noise: bool = False) -> dict[str, Any]:
    kind = "changed" if a_has and b_has else ("added" if b_has else "removed")
    return {"section": section, "key": key, "a": _text(a) if a_has else None,
            "b": _text(b) if b_has else None, "change": kind, "noise": noise}


def diff_mapping(section: str, a: Mapping[str, Any], b: Mapping[str, Any], *,
                 noise: frozenset[str] = frozenset(), one_sided: bool = True
                 ) -> list[dict[str, Any]]:
    """The keys whose values differ; `one_sided` False leaves out keys only one side has."""
    out = []
    for key in [*a, *(k for k in b if k not in a)]:
        a_has, b_has = key in a, key in b
        if a_has and b_has and _same(a[key], b[key]):
            continue
        if not (a_has and b_has) and not one_sided:
            continue
        out.append(_change(section, key, a.get(key), b.get(key), a_has=a_has, b_has=b_has,
                           noise=key in noise))
    return out


def _is_noise_arg(key: str) -> bool:
    return key in NOISE_ARGS or key.endswith(NOISE_SUFFIXES)


def arguments(data: Mapping[str, Any]) -> dict[str, Any]:
    """Server arguments (parsed ServerArgs / Namespace / non-default args), completed by the
    flags of a launch command the log printed (`--tp 8` stays `tp`, as typed)."""
    env = data.get("environment") or {}
    args = dict(env.get("args") or {})
    command = ((data.get("scan") or {}).get("command") or {})
    for key, entry in command.items():
        if key not in args and isinstance(entry, Mapping):
            args[key] = _parse_scalar(str(entry.get("value")))
    return args


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e-?\d+)?$")


def _parse_scalar(value: str) -> Any:
    """`0.55` -> 0.55, `8` -> 8, `true` -> True: a typed command flag compares with a
    parsed argument."""
    if _NUMBER.match(value):
        try:
            return int(value) if value.lstrip("-").isdigit() else float(value)
        except ValueError:
            return value
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    return value


def versions(data: Mapping[str, Any]) -> dict[str, str]:
    env = data.get("environment") or {}
    return {str(v.get("name")): str(v.get("value")) for v in env.get("versions") or []
            if isinstance(v, Mapping) and v.get("name")}


def gpus(data: Mapping[str, Any]) -> dict[str, str]:
    env = data.get("environment") or {}
    out: dict[str, str] = {}
    for g in env.get("gpus") or []:
        if isinstance(g, Mapping) and g.get("name"):
            out[str(g["name"])] = f"×{g.get('count') or 1}"
    return out


def env_vars(data: Mapping[str, Any]) -> dict[str, str]:
    env = ((data.get("scan") or {}).get("env") or {})
    return {k: " / ".join(str(v) for v in e.get("values") or [])
            for k, e in env.items() if isinstance(e, Mapping)}


def diff_config(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Every configuration difference between the runs, by section."""
    model_a = (a.get("environment") or {}).get("model")
    model_b = (b.get("environment") or {}).get("model")
    model = []
    if (model_a or model_b) and model_a != model_b:
        model.append(_change("model", "model", model_a, model_b, a_has=model_a is not None,
                             b_has=model_b is not None,
                             noise=bool(model_a and model_b and
                                        same_model(str(model_a), str(model_b)))))
    args_a, args_b = arguments(a), arguments(b)
    noise = frozenset(k for k in {*args_a, *args_b} if _is_noise_arg(k))
    # the model shows once, in its own section
    skip = {"model_path", "model"} if model else set()
    args = [c for c in diff_mapping("args", args_a, args_b, noise=noise) if c["key"] not in skip]
    return {
        "model": model,
        "versions": diff_mapping("versions", versions(a), versions(b)),
        "gpus": diff_mapping("gpus", gpus(a), gpus(b)),
        "args": args,
        "env": diff_mapping("env", env_vars(a), env_vars(b), noise=NOISE_ENV),
    }


def flag(key: str) -> str:
    """`mem_fraction_static` -> `--mem-fraction-static`, as the user typed it."""
    return "--" + key.replace("_", "-")


def all_changes(config: Mapping[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    return [c for section in ("model", "versions", "gpus", "args", "env")
            for c in config.get(section) or []]
