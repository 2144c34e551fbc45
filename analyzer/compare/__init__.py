"""`loglens diff`: what changed between the run that worked and the run that did not.

Pure functions over two post-mortem dicts (`api.postmortem(paths, redact=False)`, plus what
`rawscan` read from the raw lines: environment variables and launch commands), one module
per concern:

    config      versions, GPUs, server / launch arguments, environment variables
    phases      each lifecycle phase side by side, slower or never reached in B
    outcome     verdicts, root causes, whether A printed B's failure earlier and survived
    signatures  failure / symptom / warning ids and error templates new, gone, or changed
    metrics     throughput, KV-cache usage, memory, where both runs print them
    headline    the most likely relevant difference, first

`inputs.load` is the only module that reads files (through `analyzer.api`); `build.diff`
assembles the `loglens.diff/1` dict the renderers (`analyzer.report.diff_text`) lay out.
"""

from __future__ import annotations

SCHEMA = "loglens.diff/1"

__all__ = ["SCHEMA"]
