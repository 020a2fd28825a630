"""Importing trtutils makes idle OpenMP threads sleep (OMP_WAIT_POLICY=PASSIVE), as the CLI does,
unless the user chose a policy: spinning threads make runs on a shared machine many times
slower (issue 33)."""

from __future__ import annotations

import os
import subprocess
import sys


def _policy_after_import(env: dict[str, str]) -> str:
    """The wait policy libgomp started with (OMP_DISPLAY_ENV: it prints its settings)."""
    r = subprocess.run([sys.executable, "-c", "import trtutils"], env=dict(env, OMP_DISPLAY_ENV="TRUE"),
                       capture_output=True, text=True, check=True)  # fmt: skip
    for line in r.stderr.splitlines():
        if line.strip().startswith("OMP_WAIT_POLICY"):
            return line.split("=")[1].strip().strip("'")
    return ""


def test_import_sets_a_passive_wait_policy() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    assert _policy_after_import(env) == "PASSIVE"


def test_a_user_policy_is_kept() -> None:
    env = dict(os.environ, OMP_WAIT_POLICY="ACTIVE")
    assert _policy_after_import(env) == "ACTIVE"
