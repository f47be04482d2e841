"""R1 and F1: randomness comes from os.urandom only; no float and no insecure PRNG on the path."""

from __future__ import annotations

import ast
import os
import random
import sys
from pathlib import Path

import numpy as np
import pytest

from dpportal.privacy import rng as rng_module
from dpportal.privacy.mechanisms import (
    release_argmax,
    release_counts,
    release_mean,
    release_sum,
)
from dpportal.privacy.rng import SeededTestRandom, SystemRandom, resolve_rng, uniform_keys
from dpportal.privacy.samplers import discrete_gaussian, discrete_laplace

PACKAGE = Path(rng_module.__file__).parent


class _Broken:
    """Stands in for a module: any attribute access raises."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str):
        raise AssertionError(f"{self._name}.{attr} was used")

    def __call__(self, *args, **kwargs):
        raise AssertionError(f"{self._name} was called")


def _run_every_mechanism():
    release_counts(5, mechanism="laplace", epsilon=1)
    release_counts([1, 2, 3], mechanism="gaussian", epsilon=1, delta="1e-6", contribution_bound=2)
    release_sum(100, lower=0, upper=10, granularity="1/1024", mechanism="laplace", epsilon="0.5")
    release_sum(
        100, lower=-5, upper=5, granularity=1, mechanism="gaussian", epsilon=2, delta="1e-7"
    )
    release_mean(
        1000,
        20,
        lower=0,
        upper=100,
        granularity=1,
        mechanism="laplace",
        epsilon=1,
        confidence="0.9",
    )
    release_mean(
        1000,
        20,
        lower=0,
        upper=100,
        granularity=1,
        mechanism="gaussian",
        epsilon=1,
        delta="1e-6",
        confidence="0.9",
    )
    release_argmax([3, 9, 4], epsilon=1)
    discrete_laplace("1e12", 3)
    discrete_gaussian("123456.7", 3)
    uniform_keys(4)


def test_breaking_os_urandom_breaks_sampling(monkeypatch):
    """R1: with os.urandom patched to raise, every sampler and mechanism raises."""

    def broken(n):
        raise OSError("urandom disabled by the test")

    monkeypatch.setattr(os, "urandom", broken)
    for call in (
        lambda: discrete_laplace(3, 10),
        lambda: discrete_gaussian(3, 10),
        lambda: uniform_keys(10),
        lambda: release_counts(5, mechanism="laplace", epsilon=1),
        lambda: release_argmax([1, 2], epsilon=1),
        lambda: release_sum(1, lower=0, upper=1, granularity=1, mechanism="laplace", epsilon=1),
    ):
        with pytest.raises(OSError, match="urandom disabled"):
            call()


def test_no_mechanism_touches_numpy_random_or_random(monkeypatch):
    """Patch numpy.random and random to raise on any use: every mechanism still runs."""
    monkeypatch.setattr(np, "random", _Broken("numpy.random"))
    monkeypatch.setitem(sys.modules, "numpy.random", _Broken("numpy.random"))
    for name in dir(random):
        if not name.startswith("_") and callable(getattr(random, name)):
            monkeypatch.setattr(random, name, _Broken(f"random.{name}"))
    _run_every_mechanism()


def test_seeding_numpy_and_random_changes_nothing():
    """Seeding numpy.random / random identically twice still gives different noise
    (equal outputs of 64 draws at scale 1000 would have probability < 1e-100)."""
    outputs = []
    for _ in range(2):
        np.random.seed(0)  # noqa: NPY002 - deliberately seeding the insecure global PRNG
        random.seed(0)
        outputs.append(discrete_laplace(1000, 64))
    assert not np.array_equal(outputs[0], outputs[1])


def test_default_is_the_os_csprng_and_seeded_is_explicit_only(monkeypatch):
    """No setting or environment variable reaches the seeded generator."""
    for var in ("DPPORTAL_SEED", "PYTHONHASHSEED", "SEED", "RANDOM_SEED"):
        monkeypatch.setenv(var, "1")
    assert isinstance(resolve_rng(None), SystemRandom)
    sources = {p.name: p.read_text() for p in PACKAGE.glob("*.py")}
    for name, text in sources.items():
        assert "os.environ" not in text and "getenv" not in text, name
        if name != "rng.py":
            assert "SeededTestRandom" not in text, f"{name} refers to the test generator"


def test_seeded_test_random_is_deterministic():
    a = discrete_laplace(10, 100, SeededTestRandom(3))
    b = discrete_laplace(10, 100, SeededTestRandom(3))
    c = discrete_laplace(10, 100, SeededTestRandom(4))
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    with pytest.raises(ValueError):
        SeededTestRandom(-1)


def test_uniform_keys_are_fresh_uint64_words():
    keys = uniform_keys(1000)
    assert keys.dtype == np.uint64 and keys.shape == (1000,) and keys.flags.writeable
    assert len(set(keys.tolist())) == 1000  # a collision has probability < 3e-14


def test_package_never_imports_random_or_numpy_random():
    """F1/R1 static check: no module of dpportal.privacy imports `random` or refers to
    numpy.random / np.random (randomness only through dpportal.privacy.rng)."""
    for path in PACKAGE.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Attribute) and node.attr == "random":
                names = ["np.random" if isinstance(node.value, ast.Name) else "x.random"]
            else:
                continue
            for name in names:
                assert name != "random" and not name.startswith("random."), (path.name, name)
                assert "numpy.random" not in name and name != "np.random", (path.name, name)
                assert name != "x.random", (path.name, name)
