"""Shared fixtures and helpers; `--update-golden` regenerates the generated golden files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true",
                     help="rewrite corpus/**/*.events.json from the current parser (review the diff)")


def corpus_logs() -> list[Path]:
    return sorted(CORPUS.rglob("*.log"))


def expected_for(log: Path) -> dict:
    path = log.with_suffix("").with_suffix(".expected.json") if False else \
        log.parent / (log.stem + ".expected.json")
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(name="update_golden")
def _update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))
