"""Facts as data: the versions, memory figures and serving metrics a post-mortem shows.

`[[fact]]` tables in the knowledge files (`environment.toml`); each names its group, the
pattern with a `value` group, and real example lines with the value they must give (tested,
like the signatures' examples). The collector reads only these tables, so a new version
banner or stats line is a data change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from analyzer.errors import RulesError
from analyzer.knowledge.index import required_literals
from analyzer.knowledge.lazy import LazyPattern

GROUPS = ("version", "memory", "metric")
METRIC_SYSTEMS = ("sglang", "vllm")
FACT_FIELDS: dict[str, type] = {
    "id": str, "group": str, "name": str, "pattern": str, "unit": str, "system": str,
    "metric": str, "scale": float, "prefill": bool, "source": str, "examples": list}


@dataclass(frozen=True)
class Fact:
    """One value a line states: a component's version, a memory figure, a metric sample."""

    id: str
    group: str
    name: str  # the version's component, the memory label ({subject} filled in), the series
    pattern: LazyPattern
    literals: tuple[str, ...]  # one of them is in every line the pattern matches (or none)
    unit: str = ""
    system: str = ""  # metrics: whose stats line (sglang, vllm)
    metric: str = ""  # metrics: the chart it joins (gen, prompt, requests, usage)
    scale: float = 1.0
    prefill: bool = False  # SGLang: also read on a Prefill batch line
    source: str | None = None
    examples: tuple[tuple[str, str], ...] = ()  # (line, the value it must give)

    def value(self, text: str) -> tuple[str, str | None] | None:
        """(value, subject) when `text` states this fact."""
        if self.literals and not any(lit in text for lit in self.literals):
            return None
        hit = self.pattern.search(text)
        if hit is None:
            return None
        return hit.group("value"), hit.groupdict().get("subject")


def fact(entry: Any, where: str, compile_pattern: Any) -> Fact:
    """A `[[fact]]` table, validated (one line naming the file and entry on a mistake)."""
    if not isinstance(entry, dict):
        raise RulesError(f"{where}: each [[fact]] must be a table")
    name = entry.get("id", "fact")
    for key, value in entry.items():
        want = FACT_FIELDS.get(key)
        if want is None:
            raise RulesError(f"{where}: {name}: unknown key {key!r} in a fact")
        ok = (isinstance(value, int | float) and not isinstance(value, bool)) if want is float \
            else isinstance(value, want)
        if not ok:
            raise RulesError(f"{where}: {name}: {key} must be {want.__name__}")
    for key in ("id", "group", "name", "pattern"):
        if key not in entry:
            raise RulesError(f"{where}: fact without '{key}'")
    if entry["group"] not in GROUPS:
        raise RulesError(f"{where}: {name}: group must be one of {', '.join(GROUPS)}")
    if entry["group"] == "metric" and (entry.get("system") not in METRIC_SYSTEMS
                                       or not entry.get("metric")):
        raise RulesError(f"{where}: {name}: a metric needs system ({', '.join(METRIC_SYSTEMS)}) "
                         "and metric")
    pattern = compile_pattern(entry["pattern"], f"{where}: {name}")
    if "value" not in pattern.groupindex:
        raise RulesError(f"{where}: {name}: pattern needs a (?P<value>...) group")
    examples = []
    for ex in entry.get("examples", []):
        if not (isinstance(ex, dict) and isinstance(ex.get("line"), str)
                and isinstance(ex.get("value"), str) and set(ex) <= {"line", "value"}):
            raise RulesError(f"{where}: {name}: each example is "
                             '{line = "...", value = "..."}')
        examples.append((ex["line"], ex["value"]))
    return Fact(id=entry["id"], group=entry["group"], name=entry["name"], pattern=pattern,
                literals=tuple(required_literals(entry["pattern"]) or ()),
                unit=entry.get("unit", ""), system=entry.get("system", ""),
                metric=entry.get("metric", ""), scale=float(entry.get("scale", 1.0)),
                prefill=bool(entry.get("prefill")), source=entry.get("source"),
                examples=tuple(examples))
