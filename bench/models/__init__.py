"""Models: what is measured (each framework family's engines, the workloads and their datasets, their FLOPs). They
import the instruments (to time and profile) and nothing of ``bench.run`` above them.
"""
