"""``bench site``: a static, offline, interactive results site from the collected runs and the results history.

Modules: ``sources`` (the runs and histories found under the sources), ``cells`` (a run's cells table and records),
``markdown`` (the report's sections split into tables and text), ``charts`` (plotly figures), ``pages`` (the HTML),
``runpage`` (a run's page), ``build`` (the index, the history page, the whole site). The numbers come from the
report's own readers and sections (``bench.results.report``), so the site and ``report.md`` cannot disagree.
"""
