"""Importing trtutils chooses how idle OpenMP threads wait, as the CLI does: a brief spin
(GOMP_SPINCOUNT=10000) on an idle machine, sleeping at once (OMP_WAIT_POLICY=PASSIVE) when other
threads are running, since spinning makes runs on a shared machine many times slower (issue 33);
a policy the user chose is kept."""

from __future__ import annotations

import os
import subprocess
import sys


def _openmp_after_import(env: dict[str, str]) -> dict[str, str]:
    """The settings libgomp started with (OMP_DISPLAY_ENV=verbose: it prints them)."""
    r = subprocess.run([sys.executable, "-c", "import trtutils"], env=dict(env, OMP_DISPLAY_ENV="VERBOSE"),
                       capture_output=True, text=True, check=True)  # fmt: skip
    settings = {}
    for line in r.stderr.splitlines():
        if "=" in line:
            key, value = line.split("=", 1)
            settings[key.strip()] = value.strip().strip("'")
    return settings


def test_import_spins_briefly_or_sleeps() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    spincount = _openmp_after_import(env).get("GOMP_SPINCOUNT")
    assert spincount in ("0", "10000"), spincount  # which one: the machine's load at the import


def test_a_user_policy_is_kept() -> None:
    env = dict(os.environ, OMP_WAIT_POLICY="ACTIVE")
    assert _openmp_after_import(env).get("OMP_WAIT_POLICY") == "ACTIVE"
