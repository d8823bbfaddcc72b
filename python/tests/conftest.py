"""Shared fixtures: where the real data and the lpmkit binary are.

The data directory is ``$LPMKIT_DATA`` or ``../shared/data`` beside the repository; the
binary (for the library's own answers, through ``lpmkit annotate``) is ``$LPMKIT_BIN`` or
``target/release/lpmkit`` of the repository. Missing data skips with a reason, or fails
when ``LPMKIT_REQUIRE_DATA`` is set (as in CI).
"""

import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


def _absent(what):
    if os.environ.get("LPMKIT_REQUIRE_DATA"):
        pytest.fail(f"LPMKIT_REQUIRE_DATA is set but {what}")
    pytest.skip(what)


def data_dir():
    d = pathlib.Path(os.environ.get("LPMKIT_DATA", REPO.parent / "shared" / "data"))
    return d


def fib_tables():
    d = data_dir() / "fib"
    return sorted(d.glob("*.txt.xz")) if d.is_dir() else []


@pytest.fixture
def lpmkit_bin():
    p = pathlib.Path(os.environ.get("LPMKIT_BIN", REPO / "target" / "release" / "lpmkit"))
    if not p.is_file():
        _absent(f"no lpmkit binary at {p} (cargo build --release, or set LPMKIT_BIN)")
    return p


@pytest.fixture
def data():
    d = data_dir()
    if not (d / "fib").is_dir():
        _absent(f"no real data at {d} (set LPMKIT_DATA)")
    return d
