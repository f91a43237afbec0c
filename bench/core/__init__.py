"""Declarations every layer reads: the stack list, the knobs, the timing cadence, the checks' table and the
sources' published figures. Standard library only (the host's preflight imports it).
"""
