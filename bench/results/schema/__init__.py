"""The result record's declared schema: pydantic v2 models, one per block, each field declared once with ``entry``.

A field's declaration gives its unit, its meaning and its rule across repeats (``RULES``). Everything that used to
restate the schema derives from here: ``bench fields`` (``describe``), the CSV's column order (``column_order``),
the metrics the aggregation of repeats takes as a median (``aggregated``) or recomputes (``derived_metrics``), the
report's column names (``col``: a declared field's dotted CSV column, or an error for an unknown one) and the
collector's validation (``problems``).

The record on disk keeps its JSON layout: nested blocks, dotted CSV columns (``metrics.ms_per_step_mean``).
Open-ended parts (``env.packages``, ``telemetry.unsupported``...) are declared as mappings. Code writes declared
fields only (``Block``: an undeclared keyword or attribute is an error, an assigned value is validated); a record
read back keeps the keys its blocks do not declare (``extra="allow"``: older records' fields, carried through, shown
in the CSV).

Modules: ``declare`` (``entry``, ``Block``, the rules), ``blocks`` (timed results, the process, repeats), ``env``
(environment and telemetry), ``effective`` (the settings in effect), ``record`` (``Record``, ``Status``),
``introspect`` (``walk``, ``col``, ``describe``...), ``columns`` (the CSV's order), ``validate`` (``problems``).
"""

from bench.results.schema.blocks import Data, Memory, Metrics, Model, Output, Process, Repeats, Spread, Stats
from bench.results.schema.columns import LEADING, SKIP_KEYS, column_order
from bench.results.schema.declare import OLDEST_SCHEMA, RULES, SCHEMA_VERSION, Block, Rule, entry
from bench.results.schema.effective import EffectiveSettings
from bench.results.schema.env import CudaCache, Env, Gpu, Telemetry
from bench.results.schema.introspect import (
                                             Declared,
                                             aggregated,
                                             col,
                                             declared_names,
                                             derived_metrics,
                                             describe,
                                             knob_docs,
                                             metrics_with,
                                             setting_col,
                                             spread_col,
                                             walk,
)
from bench.results.schema.profile import Profile
from bench.results.schema.record import HOST_PIDS, REQUIRED, STATUSES, Record, Status
from bench.results.schema.validate import problems

__all__ = ["HOST_PIDS", "LEADING", "OLDEST_SCHEMA", "REQUIRED", "RULES", "SCHEMA_VERSION", "SKIP_KEYS", "STATUSES",
           "Block", "CudaCache", "Data", "Declared", "EffectiveSettings", "Env", "Gpu", "Memory", "Metrics", "Model",
           "Output", "Process", "Profile", "Record", "Repeats", "Rule", "Spread", "Stats", "Status", "Telemetry",
           "aggregated", "col", "column_order", "declared_names", "derived_metrics", "describe", "entry", "knob_docs",
           "metrics_with", "problems", "setting_col", "spread_col", "walk"]
