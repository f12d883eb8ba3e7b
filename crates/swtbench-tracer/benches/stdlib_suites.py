"""Runs CPython test suites with unittest, with the random module seeded first, so that every run
executes the same lines (some suites draw random data): stdlib_suites.py SUITE..."""
import random
import sys
import unittest

random.seed(20240601)
unittest.main(module=None, argv=["stdlib_suites", "-q"] + sys.argv[1:], exit=False)
