"""``python -m timely.viz LOG [LOG ...] [-o PAGE] [--dot]``: draws captured logs.

LOG files are written by :func:`timely.logging.capture_to` (one per worker;
give them all to see every worker's measurements). The page goes to
``-o`` (by default the first log's name with ``.html``, or ``.dot`` with
``--dot``; ``-o -`` writes to standard output).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from timely.viz.model import Model
from timely.viz.render import render_dot, render_html


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m timely.viz",
        description="Draw the dataflows of captured timely logs as an HTML page or DOT text.")
    parser.add_argument("logs", nargs="+", help="log files written by timely.logging.capture_to")
    parser.add_argument("-o", "--output", help="where to write (default: LOG.html / LOG.dot; "
                                               "- for standard output)")
    parser.add_argument("--dot", action="store_true", help="write Graphviz DOT text instead")
    parser.add_argument("--stuck-after", type=float, default=10.0, metavar="SECONDS",
                        help="mark frontiers unchanged this long as stuck (default 10)")
    parser.add_argument("--title", help="the page's title")
    args = parser.parse_args(argv)

    model = Model.from_logs(*args.logs)
    if args.dot:
        text = render_dot(model, stuck_after=args.stuck_after)
    else:
        text = render_html(model, stuck_after=args.stuck_after,
                           title=args.title or f"timely dataflow: {Path(args.logs[0]).name}")
    output = args.output or str(Path(args.logs[0]).with_suffix(".dot" if args.dot else ".html"))
    if output == "-":
        sys.stdout.write(text)
    else:
        Path(output).write_text(text, encoding="utf-8")
        print(f"wrote {output}: {len(model.operators)} operators, {len(model.channels)} "
              f"channels, {model.events:,} events", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
