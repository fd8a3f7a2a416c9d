"""The command line every example shares.

Every example takes the options of :func:`timely.execute_from_args`, spelled
as in the Rust crate, plus its own:

- ``-w``/``--workers W``: worker processes on this host (default 2 where the
  example needs several to show anything, else 1);
- ``-n``/``--processes N``: hosts taking part (default 1);
- ``-p``/``--process P``: this host's index among them (default 0);
- ``-h``/``--hostfile FILE``: one ``address:port`` per host;
- ``--help``: the options (``-h`` is the hostfile, as in the Rust crate).

>>> p = parser("hello", "Hello.", workers=2)
>>> args = p.parse_args(["-w", "3", "--hostfile", "hosts"])
>>> timely_args(args)
['-w', '3', '-n', '1', '-p', '0', '-h', 'hosts']
>>> timely_args(p.parse_args([]))
['-w', '2', '-n', '1', '-p', '0']
"""

from __future__ import annotations

import argparse

__all__ = ["parser", "timely_args"]


def parser(name: str, doc: str | None, workers: int = 2) -> argparse.ArgumentParser:
    """An argument parser for ``python -m timely.examples.NAME``.

    Its description is the first paragraph of ``doc`` (the example's module
    docstring). It holds the shared options (``-w -n -p -h --help``, ``-w``
    defaulting to ``workers``); the example adds its own. Costs nothing to
    speak of; raises nothing.
    """
    first = (doc or "").strip().split("\n\n")[0]
    p = argparse.ArgumentParser(
        prog=f"python -m timely.examples.{name}",
        description=" ".join(first.split()),
        add_help=False,
        epilog="-h is the hostfile, as in the Rust crate; --help prints this help.",
    )
    shared = p.add_argument_group("workers and hosts (as for every timely computation)")
    shared.add_argument("--help", action="help", help="show this help and exit")
    shared.add_argument("-w", "--workers", type=int, default=workers,
                        help=f"worker processes on this host (default {workers})")
    shared.add_argument("-n", "--processes", type=int, default=1,
                        help="hosts taking part (default 1)")
    shared.add_argument("-p", "--process", type=int, default=0,
                        help="this host's index among them (default 0)")
    shared.add_argument("-h", "--hostfile", default=None,
                        help="a file with one address:port per host")
    return p


def timely_args(args: argparse.Namespace) -> list[str]:
    """The shared options of parsed ``args`` as a command line for
    :func:`timely.execute_from_args`."""
    out = ["-w", str(args.workers), "-n", str(args.processes), "-p", str(args.process)]
    if args.hostfile is not None:
        out += ["-h", args.hostfile]
    return out
