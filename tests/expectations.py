"""Write `<case>.expected.json` for corpus cases that have a label but no expectation yet.

    python -m tests.expectations corpus/b08-new      # one folder (default: all of corpus/)

The expectation is the label, copied: never a tool's output. An existing file is left alone
(it may carry a reviewed `known_gap`), so re-running is safe.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KEYS = ("id", "outcome", "root_cause", "symptoms", "phase", "remediation", "source")


def write_missing(folder: Path) -> list[Path]:
    written = []
    for labels in sorted(folder.rglob("labels.jsonl")):
        for text in labels.read_text(encoding="utf-8").splitlines():
            if not text.strip():
                continue
            case = json.loads(text)
            path = labels.parent / f"{case['id']}.expected.json"
            if path.exists():
                continue
            path.write_text(json.dumps({k: case.get(k) for k in KEYS}, indent=2,
                                       ensure_ascii=False) + "\n", encoding="utf-8")
            written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    for folder in [Path(a) for a in args] or [ROOT / "corpus"]:
        for path in write_missing(folder):
            print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
