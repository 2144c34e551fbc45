"""What the post-mortem does not keep: environment variables and launch commands printed in
the log, read from the raw lines (a cheap substring test first, a regex only on hits).

Only assignments that *state* a setting count: NCCL's `NCCL_X set by environment to V`,
`export NCCL_X=V` / `+ NCCL_X=V` (a shell trace), `env NCCL_X=V python …`, `-x NCCL_X=V`
(mpirun), `Setting CUDA_VISIBLE_DEVICES=2` (launchers), and lines that are nothing but
assignments. Advice (`run with NCCL_DEBUG=INFO for details`, `set TORCH_LOGS="+dynamo"`) is
not a setting and is skipped.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from typing import Any

PREFIXES = ("NCCL_", "CUDA_", "TORCH_", "VLLM_", "SGLANG_")
MAX_LINES = 2_000_000  # per input: the scan stays a few seconds on a 1 GB log
MAX_VARS = 200
MAX_VALUES = 8  # distinct values kept per variable (per-rank CUDA_VISIBLE_DEVICES)
MAX_VALUE_LEN = 200
MAX_FLAGS = 200

_NAME = r"(?:NCCL|CUDA|TORCH|VLLM|SGLANG)_[A-Z0-9_]{1,60}"
_VALUE = r"(\"[^\"]{0,200}\"|'[^']{0,200}'|[^\s,;)'\"]{1,200})"
NCCL_SET = re.compile(rf"\b({_NAME}) set by environment to ([^\s]{{1,200}}?)\.?$")
ASSIGN = re.compile(rf"(?<![\w./-])({_NAME})={_VALUE}")
# what may stand right before an assignment that states a setting
STATING = re.compile(r"(?:^|[\s|:\]>])(?:\+|export|env|-x|Setting|setting|set to|Using|"
                     r"environment:?|Environment:?|ENV:?)\s*$")
ONLY_ASSIGNMENTS = re.compile(rf"^\s*(?:\+\s*)?(?:export\s+)?(?:{_NAME}=\S*\s*)+$")
ADVICE = re.compile(r"\b(?:run with|[Ss]et |[Tt]ry |[Cc]onsider|[Pp]lease|recommend|without|"
                    r"remove|instead|to enable|to disable|for details|is not supported)\b")

LAUNCH = re.compile(r"(?:-m\s+sglang\.launch_server|\bsglang\s+serve|\bvllm\s+serve|"
                    r"-m\s+vllm\.entrypoints\.openai\.api_server)\s+(.{1,4000})")


def scan(lines: Iterable[str]) -> dict[str, Any]:
    """Environment variables (name -> distinct values, first line) and launch-command flags
    (flag -> value, first line) stated in `lines`."""
    env: dict[str, dict[str, Any]] = {}
    flags: dict[str, dict[str, Any]] = {}
    for lineno, text in enumerate(lines, 1):
        if lineno > MAX_LINES:
            break
        if "_" in text and any(p in text for p in PREFIXES):
            for name, value in env_settings(text):
                _keep(env, name, value, lineno)
        if ("launch_server" in text or "serve" in text or "api_server" in text) and \
                len(flags) < MAX_FLAGS:
            for flag, value in launch_flags(text).items():
                if flag not in flags and len(flags) < MAX_FLAGS:
                    flags[flag] = {"value": value, "line": lineno}
    return {"env": env, "command": flags}


def _keep(env: dict[str, dict[str, Any]], name: str, value: str, line: int) -> None:
    entry = env.get(name)
    if entry is None:
        if len(env) >= MAX_VARS:
            return
        entry = env[name] = {"values": [], "line": line}
    if value not in entry["values"] and len(entry["values"]) < MAX_VALUES:
        entry["values"].append(value)


def env_settings(text: str) -> list[tuple[str, str]]:
    """The (name, value) settings one line states (see the module docstring)."""
    hit = NCCL_SET.search(text.rstrip())
    if hit:
        return [(hit.group(1), hit.group(2))]
    found = list(ASSIGN.finditer(text))
    if not found:
        return []
    if ONLY_ASSIGNMENTS.match(_strip_head(text)):
        return [(m.group(1), _unquote(m.group(2))) for m in found]
    out: list[tuple[str, str]] = []
    before_end = 0
    for m in found:
        before = text[before_end:m.start()]
        chained = out and before.strip() == ""  # `A=1 B=2 python …`
        if chained or (STATING.search(text[:m.start()]) and not ADVICE.search(text[:m.start()])):
            out.append((m.group(1), _unquote(m.group(2))))
        before_end = m.end()
    return out


HEAD = re.compile(r"^(?:\[[^\]]{1,80}\]\s*|\([^)]{1,80}\)\s*|[\w.-]{1,60}\s+\|\s*|"
                  r"\d{4}-\d\d-\d\d[T ][\d:.,]{5,15}Z?\s*|(?:INFO|DEBUG|WARNING)\s+)+")


def _strip_head(text: str) -> str:
    """The line without a leading timestamp, logger or container prefix."""
    return HEAD.sub("", text, count=1)


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    return value.rstrip(".")[:MAX_VALUE_LEN]


def launch_flags(text: str) -> dict[str, str]:
    """`--flag value` pairs of an SGLang / vLLM launch command on this line ({} if none).

    `vllm serve MODEL` gives `model`; a flag without a value is `true`."""
    hit = LAUNCH.search(text)
    if hit is None or "UserWarning" in text:
        return {}
    rest = hit.group(1)
    try:
        words = shlex.split(rest, comments=False)
    except ValueError:
        words = rest.split()
    out: dict[str, str] = {}
    if hit.group(0).startswith("vllm") and words and not words[0].startswith("-"):
        out["model"] = words[0]
        words = words[1:]
    i = 0
    while i < len(words):
        word = words[i]
        if word in ("|", "&&", ";", "2>&1", ">", ">>", "&") or word.startswith((">", "2>")):
            break
        if word.startswith("--") and len(word) > 2:
            name, eq, value = word[2:].partition("=")
            key = name.replace("-", "_")
            if eq:
                out[key] = value
            elif i + 1 < len(words) and not words[i + 1].startswith("--"):
                out[key] = words[i + 1]
                i += 1
            else:
                out[key] = "true"
        i += 1
    return {k: v[:MAX_VALUE_LEN] for k, v in out.items() if k}
