"""What keeps a small log's answer instant: the knowledge comes from a cache while its files
are unchanged, and a small input skips the prefilter (whose set-up costs more than it saves)."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest

from analyzer import api, knowledge
from analyzer.cache import pickled
from analyzer.sources.source import open_sources


def test_pickled_reuses_rebuilds_on_change_and_survives_damage(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    monkeypatch.setenv("LOGLENS_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "rules.toml"
    src.write_text("a = 1\n")
    builds: list[int] = []

    def build() -> list[str]:
        builds.append(1)
        return [src.read_text()]

    assert pickled("t", [src], build, list) == ["a = 1\n"]
    assert pickled("t", [src], build, list) == ["a = 1\n"] and len(builds) == 1  # from the cache
    src.write_text("a = 2\n")
    assert pickled("t", [src], build, list) == ["a = 2\n"] and len(builds) == 2  # edited: rebuilt
    for entry in (tmp_path / "cache").glob("t-*.pickle"):
        entry.write_bytes(b"\x80\x05not a pickle")
    assert pickled("t", [src], build, list) == ["a = 2\n"] and len(builds) == 3  # damaged: rebuilt
    monkeypatch.setenv("LOGLENS_CACHE_DIR", "")  # no cache at all: built every time
    assert pickled("t", [src], build, list) == ["a = 2\n"] and len(builds) == 4


def test_cached_knowledge_is_the_built_knowledge(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOGLENS_CACHE_DIR", str(tmp_path))
    built = knowledge._build(())
    cached = knowledge._load.__wrapped__(())  # type: ignore[attr-defined]  # writes the entry
    again = knowledge._load.__wrapped__(())  # type: ignore[attr-defined]  # reads it
    assert list(tmp_path.glob("knowledge-*.pickle"))
    for k in (cached, again):
        assert [s.id for s in k.signatures] == [s.id for s in built.signatures]
        assert [m.pattern.pattern for m in k.markers] == [m.pattern.pattern for m in built.markers]
        assert k.sig_index.scanner.literals == built.sig_index.scanner.literals
    line = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert [s.id for s, _ in again.match(line)] == [s.id for s, _ in built.match(line)]


def test_only_large_or_unsized_inputs_are_prefiltered(tmp_path: Path) -> None:
    small = tmp_path / "small.log"
    small.write_text("INFO hello\n" * 100)
    assert not api.worth_prefiltering(open_sources([str(small)]))
    big = tmp_path / "big.log"
    with big.open("wb") as f:
        f.truncate(api.PREFILTER_BYTES)  # sparse: the size is what counts
    assert api.worth_prefiltering(open_sources([str(big)]))
    assert api.worth_prefiltering(open_sources([str(small), str(big)]))
    hexed = os.urandom(api.PREFILTER_BYTES // 8).hex()  # a quarter of the threshold: hex
    text = "".join(f"INFO {hexed[i:i + 64]}\n" for i in range(0, len(hexed), 64))  # deflates
    packed, plain = tmp_path / "mid.log.gz", tmp_path / "mid.log"  # to about half only
    packed.write_bytes(gzip.compress(text.encode()))
    plain.write_text(text)
    assert not api.worth_prefiltering(open_sources([str(plain)]))
    assert api.worth_prefiltering(open_sources([str(packed)]))  # judged by what it inflates to


def test_a_small_explain_imports_no_producer_prefilter_or_polars() -> None:
    """A pasted log is answered without the big-file machinery: importing the producer's
    process and socket modules, the prefilter or polars would be start-up spent for nothing."""
    log = Path(__file__).resolve().parents[1] / "corpus" / "seed"
    sample = sorted(log.glob("*.log"))[0]
    probe = (f"import sys\nsys.argv = ['loglens', 'explain', '--format', 'json', {str(sample)!r}]\n"
             "from analyzer._entry import main\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             "heavy = [m for m in ('analyzer.scan.producer', 'analyzer.scan.prefilter', 'polars')"
             " if m in sys.modules]\n"
             "print('HEAVY', heavy, file=sys.stderr)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=120)
    assert '"verdict"' in out.stdout
    assert "HEAVY []" in out.stderr, out.stderr[-500:]
