"""Benchmarks for dezero_kr: ``python -m bench`` lists them, ``python -m bench <name>`` runs one.

Every benchmark reports its figures as ratios against a hand-written NumPy
implementation of the same math, measured in the same run with one BLAS thread.
"""
