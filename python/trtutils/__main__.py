"""``python -m trtutils ...``: the C++ CLI in this process (same subcommands, flags, messages
and exit codes as the ``trtutils`` executable; no second parser)."""

from __future__ import annotations

import sys

from . import _trtutils


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else [str(a) for a in argv]
    sys.stdout.flush()
    sys.stderr.flush()
    return _trtutils.run_cli(args)


if __name__ == "__main__":
    _trtutils.install_interrupt_cleanup()
    sys.exit(main())
