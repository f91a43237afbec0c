"""Code the test modules share: fakes, record builders, file writers and expected values, one module per concern.

A test module (``test_*.py``) imports shared names from here (or from tests/conftest.py, tests/contract/grid.py),
never from another test module: tests/project/test_test_layout.py holds that."""
