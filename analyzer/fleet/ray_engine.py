"""The Ray engine: the same per-log function through Ray Data, for a fleet that outgrows one
machine (`pip install 'loglens[ray]'`).

The job list becomes a dataset (`ray.data.from_items`); `map_batches` runs the analyzer in
a pool of actors, each loading the knowledge once; the rows come back to the driver as they
finish (or `write_parquet` writes them where the cluster can, `s3://` included). It connects
to a running cluster when `RAY_ADDRESS` says where, else starts a local one of `--jobs` CPUs.
Paths on object storage (`s3://`, `gs://`) are read through pyarrow's filesystems into a
temporary file on the worker.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from analyzer.errors import UsageError
from analyzer.fleet.inputs import Job
from analyzer.fleet.row import COLUMNS, analyse, empty_row

BATCH = 4  # jobs per map_batches call: small, so one big log does not hold back others


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UsageError("--engine ray needs Ray: pip install 'loglens[ray]'") from None
    return ray


def remote(path: str) -> bool:
    """A path on object storage (s3://bucket/key, gs://...), not on this file system."""
    return "://" in path and not path.startswith("file://")


def _localised(files: Sequence[str], tmp: str) -> list[str]:
    """The job's files, object-storage ones copied into `tmp` first (names kept)."""
    out: list[str] = []
    for i, name in enumerate(files):
        if not remote(name):
            out.append(name)
            continue
        from pyarrow import fs

        filesystem, inner = fs.FileSystem.from_uri(name)
        target = Path(tmp, f"{i}-{Path(inner).name}")
        with filesystem.open_input_stream(inner) as src, target.open("wb") as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
        out.append(str(target))
    return out


class Analyser:
    """A Ray Data actor: knowledge loaded once, then one row per job of each batch."""

    def __init__(self, rules: Sequence[str], redact: bool, year: int | None) -> None:
        from analyzer.fleet.local import _warm

        _warm(tuple(rules))
        self.rules, self.redact, self.year = list(rules), redact, year

    def __call__(self, batch: dict[str, Any]) -> Any:
        """A batch of job specs (JSON) -> a pyarrow table of their rows (typed as COLUMNS:
        every block has the same schema, whatever is missing in it)."""
        import json

        import pyarrow as pa

        out: dict[str, list[Any]] = {name: [] for name in COLUMNS}
        for spec in batch["job"]:
            job = Job(**{**json.loads(spec), "files": tuple(json.loads(spec)["files"])})
            if any(remote(f) for f in job.files):
                with tempfile.TemporaryDirectory(prefix="loglens-") as tmp:
                    try:
                        local = Job(job.path, tuple(_localised(job.files, tmp)), job.size,
                                    job.mtime)
                        row = analyse(local, rules=self.rules, redact=self.redact,
                                      year=self.year)
                        row.update(path=job.path)
                    except OSError as exc:
                        row = empty_row(job)
                        row["error"] = f"cannot fetch: {exc}"
            else:
                row = analyse(job, rules=self.rules, redact=self.redact, year=self.year)
            for name in COLUMNS:
                out[name].append(row.get(name))
        return pa.Table.from_pydict(out, schema=_schema())


def _schema() -> Any:
    import pyarrow as pa

    types = {"str": pa.string(), "int": pa.int64(), "float": pa.float64()}
    return pa.schema([(name, types[kind]) for name, kind in COLUMNS.items()])


def _init(ray: Any, n_workers: int | None) -> None:
    if ray.is_initialized():
        return
    address = os.environ.get("RAY_ADDRESS")
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                              "configure_logging": False}
    if address:
        ray.init(address=address, **kwargs)
    else:
        ray.init(num_cpus=n_workers or None, **kwargs)


def dataset(jobs: Sequence[Job], *, n_workers: int | None = None, rules: Sequence[str] = (),
            redact: bool = True, year: int | None = None) -> Any:
    """The rows as a (lazy) Ray dataset: write it with `.write_parquet(uri)` on the cluster."""
    import json

    ray = _ray()
    _init(ray, n_workers)
    items = [{"job": json.dumps({"path": j.path, "files": list(j.files), "size": j.size,
                                 "mtime": j.mtime})} for j in jobs]
    cpus = int(ray.available_resources().get("CPU", 1)) or 1
    actors = max(1, min(n_workers or cpus, cpus, len(jobs)))
    return (ray.data.from_items(items, override_num_blocks=max(1, len(items) // BATCH or 1))
            .map_batches(Analyser, fn_constructor_kwargs={"rules": list(rules),
                                                          "redact": redact, "year": year},
                         batch_size=BATCH, concurrency=actors, num_cpus=1,
                         batch_format="numpy"))


def rows(jobs: Sequence[Job], *, n_workers: int | None = None, rules: Sequence[str] = (),
         redact: bool = True, year: int | None = None) -> Iterator[dict[str, Any]]:
    """One row per job, streamed back to the driver as Ray finishes them."""
    if not jobs:
        return
    ds = dataset(jobs, n_workers=n_workers, rules=rules, redact=redact, year=year)
    for row in ds.iter_rows():
        yield {name: _plain(row.get(name)) for name in COLUMNS}


def _plain(value: Any) -> Any:
    """numpy scalars and NaN from Ray's batches back to Python values and None."""
    if value is None:
        return None
    item = getattr(value, "item", None)
    if callable(item):
        value = item()
    if isinstance(value, float) and value != value:
        return None
    return value
