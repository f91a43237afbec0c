"""NVML is reached through ``bench.instruments.nvml`` alone, and a GPU through its ``Gpu`` class alone: one test per
module of the package, generated from its files, reading each module's syntax tree (so docstrings and comments that
name an NVML function do not count)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import bench

PACKAGE = Path(bench.__file__).parent
NVML_MODULE = PACKAGE / "instruments" / "nvml.py"
MODULES = sorted(PACKAGE.rglob("*.py"))
#: What only ``Gpu`` may call: NVML's functions of one device and of the host.
GPU_ONLY = ("nvmlDevice", "nvmlSystem")


def _is_nvml(name: str) -> bool:
    return name.startswith("NVML_") or (name.startswith("nvml") and name[4:5].isupper())


def _getattr_name(node: ast.Call) -> str | None:
    """The attribute a ``getattr``/``hasattr``/``setattr`` call names, or its f-string's leading text."""
    if not (isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr", "setattr")
            and len(node.args) >= 2):
        return None
    arg = node.args[1]
    if isinstance(arg, ast.JoinedStr) and arg.values:
        arg = arg.values[0]
    return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None


def nvml_uses(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, name) of each NVML function or constant the code reaches (``nv.nvmlDeviceGetName``, ``nv.NVML_...``,
    a bare name, a ``getattr`` string) and each import of ``pynvml``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        name = None
        if isinstance(node, ast.Attribute):
            name = node.attr
        elif isinstance(node, ast.Name):
            name = node.id
        elif isinstance(node, ast.Call):
            name = _getattr_name(node)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            found += [(node.lineno, f"import {m}") for m in mods if m.split(".")[0] == "pynvml"]
        if name and _is_nvml(name):
            found.append((node.lineno, name))
    return found


def outside_gpu(tree: ast.Module) -> ast.Module:
    """``tree`` without the ``Gpu`` class."""
    body = [n for n in tree.body if not (isinstance(n, ast.ClassDef) and n.name == "Gpu")]
    return ast.Module(body=body, type_ignores=[])


@pytest.mark.parametrize("path", [p for p in MODULES if p != NVML_MODULE],
                         ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_no_module_but_nvml_reaches_nvml(path):
    uses = nvml_uses(ast.parse(path.read_text(), str(path)))
    assert not uses, f"{path}: NVML reached outside bench.instruments.nvml.Gpu: {uses}"


def test_in_the_nvml_module_only_gpu_calls_the_device_and_system_functions():
    tree = ast.parse(NVML_MODULE.read_text())
    outside = [(line, n) for line, n in nvml_uses(outside_gpu(tree)) if n.startswith(GPU_ONLY)]
    assert not outside, outside
    assert any(n.startswith(GPU_ONLY) for _, n in nvml_uses(tree))  # the class is where they are


def test_the_scan_sees_calls_constants_getattr_strings_and_imports_but_not_docstrings():
    code = '''
"""nvmlDeviceGetName in a docstring"""
import pynvml
from pynvml import nvmlInit
def f(nv, h, r):
    """``nv.nvmlDeviceGetPowerUsage``"""
    # nv.nvmlDeviceGetUUID(h) in a comment
    nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)
    return getattr(nv, f"nvmlClocksEventReason{r}", 0), nvml_index(), nvmlInit
'''
    assert sorted(n for _, n in nvml_uses(ast.parse(code))) == [
        "NVML_TEMPERATURE_GPU", "import pynvml", "import pynvml", "nvmlClocksEventReason",
        "nvmlDeviceGetTemperature", "nvmlInit"]


def test_the_modules_are_the_packages_files():
    names = {str(p.relative_to(PACKAGE)) for p in MODULES}
    assert {"instruments/environment.py", "instruments/gpu_state.py", "instruments/telemetry/sampler.py",
            "instruments/nvml.py"} <= names


class _Err(Exception):
    def __init__(self, value: int):
        super().__init__(f"NVML error {value}")
        self.value = value


class _Nv:
    """A pynvml stand-in for ``Gpu``'s newer-call fallbacks; ``missing`` names the calls the driver lacks."""

    NVML_TEMPERATURE_GPU, NVML_ERROR_FUNCTION_NOT_FOUND, NVML_ERROR_NOT_SUPPORTED = 0, 13, 3

    def __init__(self, missing=(), error=None):
        self.missing, self.error, self.calls = set(missing), error, []

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def _call(self, name, value):
        self.calls.append(name)
        if name in self.missing:
            raise _Err(self.NVML_ERROR_FUNCTION_NOT_FOUND)
        if self.error is not None:
            raise _Err(self.error)
        return value

    def nvmlDeviceGetTemperatureV(self, h, sensor):
        return self._call("V", 61)

    def nvmlDeviceGetTemperature(self, h, sensor):
        return self._call("old", 60)


def test_gpu_reads_the_temperature_through_the_newer_call_and_falls_back_once_where_the_driver_lacks_it():
    from bench.instruments.nvml import Gpu

    assert Gpu(_Nv(), 0).temperature_c() == 61.0
    nv = _Nv(missing={"V"})
    gpu = Gpu(nv, 0)
    assert [gpu.temperature_c(), gpu.temperature_c()] == [60.0, 60.0]
    assert nv.calls == ["V", "old", "old"]  # the newer call is tried once, then the older name for good
    with pytest.raises(_Err):  # NotSupported is the caller's to handle, never a switch to the other call
        Gpu(_Nv(error=_Nv.NVML_ERROR_NOT_SUPPORTED), 0).temperature_c()
