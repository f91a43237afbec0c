"""What turns records into results (the collector image): the record and its schema, the repeats' aggregation,
the derived metrics, the CSV, comparisons and the report.
"""
