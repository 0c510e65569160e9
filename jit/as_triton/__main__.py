"""`python -m jit.as_triton SCRIPT [args]` or `python -m jit.as_triton -m MODULE [args]` (e.g. `-m pytest`)."""

from __future__ import annotations

import os
import runpy
import sys

from jit.as_triton import install

USAGE = "usage: python -m jit.as_triton SCRIPT [args] | python -m jit.as_triton -m MODULE [args]"


def main(argv: list[str]) -> None:
    if not argv or argv[0] in ("-h", "--help") or (argv[0] == "-m" and len(argv) < 2):
        print(USAGE, file=sys.stderr)
        raise SystemExit(2)
    install()
    if argv[0] == "-m":
        module, rest = argv[1], argv[2:]
        if module == "pytest":
            rest = ["-p", "jit.as_triton.pytest_plugin", *rest]
        sys.argv = [module, *rest]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    else:
        sys.argv = list(argv)
        sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
        runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
