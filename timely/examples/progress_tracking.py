"""Progress tracking for an iterative scope shared by several workers.

Each worker keeps its own :class:`~timely.progress.Tracker` of one loop scope
(timestamps ``(epoch, iteration)``) and applies every worker's progress
batches, in the order each sender produced them, but interleaved at random
between senders. Operators consume messages, send records around the loop and
drop capabilities; each action is reported as one batch of consumed, produced
and internal changes. The example prints, as it runs, the frontier each worker
sees at the loop's output, and checks that no worker ever releases a time
while a record at that time could still reach the output.

Run: ``python -m timely.examples.progress_tracking [-w N] [--epochs E] [--seed S]``
"""

from __future__ import annotations

import random
import time
from collections import deque

from timely.examples.cli import parser
from timely.progress import Builder, MutableAntichain, Source, Target

# Node 0 is the scope boundary: its target 0 is the scope output. Node 4 is
# the input operator; node 1 merges the input with the feedback; node 2 is the
# feedback operator, which advances the iteration; node 3 is the loop body,
# whose output 0 returns to the loop head and whose output 1 leaves the scope.
INPUT = Source(4, 0)
HEAD_IN, HEAD_FEEDBACK, HEAD_OUT = Target(1, 0), Target(1, 1), Source(1, 0)
BODY_IN, BODY_LOOP, BODY_EXIT = Target(3, 0), Source(3, 0), Source(3, 1)
FEEDBACK_IN, FEEDBACK_OUT = Target(2, 0), Source(2, 0)


def build_tracker():
    b = Builder(arity=2)
    b.add_node(0, 1, 0, [[]])
    b.add_node(1, 2, 1, [[[(0, 0)]], [[(0, 0)]]])
    b.add_node(2, 1, 1, [[[(0, 1)]]])
    b.add_node(3, 1, 2, [[[(0, 0)], [(0, 0)]]])
    b.add_node(4, 0, 1, [])
    b.add_edge(INPUT, HEAD_IN)
    b.add_edge(HEAD_OUT, BODY_IN)
    b.add_edge(BODY_LOOP, FEEDBACK_IN)
    b.add_edge(FEEDBACK_OUT, HEAD_FEEDBACK)
    b.add_edge(BODY_EXIT, Target(0, 0))
    return b.build()


class Worker:
    """One worker's view: its tracker, its queued messages, its capabilities."""

    def __init__(self, index: int, peers: int, rng: random.Random):
        self.index = index
        self.tracker, self.summary = build_tracker()
        # Invariant: every worker starts with `peers` copies of the initial
        # capability at each operator output; each retracts only its own.
        for source in (INPUT, HEAD_OUT, FEEDBACK_OUT, BODY_LOOP, BODY_EXIT):
            self.tracker.update_source(source, (0, 0), peers)
        self.initial = [(source, (0, 0)) for source in (HEAD_OUT, FEEDBACK_OUT, BODY_LOOP, BODY_EXIT)]
        self.queue: deque = deque()          # (target, time, remaining iterations)
        self.rng = rng
        # The times that may still leave the loop, counted as the tracker
        # reports them: this is what the scope would tell its parent.
        self.output_frontier = MutableAntichain(arity=2)
        self.released: list[int] = []
        self.apply([])

    def apply(self, batch):
        for kind, location, time_, diff in batch:
            if kind == "source":
                self.tracker.update_source(location, time_, diff)
            else:
                self.tracker.update_target(location, time_, diff)
        self.tracker.propagate_all()
        self.tracker.pushed_changes()
        changes = self.tracker.output_changes()[0]
        self.output_frontier.update_iter(changes)


def run(workers: int = 3, epochs: int = 5, seed: int = 7, records: int = 20, verbose: bool = True):
    rng = random.Random(seed)
    peers = [Worker(i, workers, random.Random(seed * 100 + i)) for i in range(workers)]
    channels: dict[tuple[int, int], deque] = {(s, r): deque() for s in range(workers) for r in range(workers)}
    input_epoch = [0] * workers
    outstanding: dict[tuple[int, int], int] = {}   # (epoch, iteration) -> records in flight anywhere, for the check
    emitted: dict[int, int] = {}              # epoch -> records that left the loop
    steps = 0
    start = time.perf_counter()

    def broadcast(sender, batch):
        if batch:
            for r in range(workers):
                channels[(sender, r)].append(batch)

    def note(time_, diff):
        outstanding[time_] = outstanding.get(time_, 0) + diff
        if outstanding[time_] == 0:
            del outstanding[time_]

    # Each worker drops its own initial capabilities on the operators it does
    # not drive; the input keeps one at the current epoch.
    for w in peers:
        broadcast(w.index, [("source", s, t, -1) for s, t in w.initial])

    while True:
        steps += 1
        w = rng.choice(peers)
        action = rng.random()
        batch: list[tuple] = []
        if action < 0.3 and input_epoch[w.index] < epochs:
            # The input introduces records at its epoch, then advances.
            e = input_epoch[w.index]
            for _ in range(rng.randrange(records)):
                rounds = rng.randrange(6)
                w.queue.append((HEAD_IN, (e, 0), rounds))
                batch.append(("target", HEAD_IN, (e, 0), 1))
                note((e, 0), 1)
            input_epoch[w.index] += 1
            batch.append(("source", INPUT, (e, 0), -1))
            if input_epoch[w.index] < epochs:
                batch.append(("source", INPUT, (e + 1, 0), 1))
        elif action < 0.8 and w.queue:
            # An operator consumes one message and sends its consequence on,
            # as one batch: consumed at the target, produced at the next one.
            target, t, rounds = w.queue.popleft()
            batch.append(("target", target, t, -1))
            note(t, -1)
            if target in (HEAD_IN, HEAD_FEEDBACK):
                nxt: tuple | None = (BODY_IN, t, rounds)
            elif target == BODY_IN:
                # Records that are done leave the scope: they are produced at
                # its output, which the parent scope accounts for.
                nxt = (FEEDBACK_IN, t, rounds - 1) if rounds > 0 else None
                if nxt is None:
                    emitted[t[0]] = emitted.get(t[0], 0) + 1
            elif target == FEEDBACK_IN:
                nxt = (HEAD_FEEDBACK, (t[0], t[1] + 1), rounds)
            else:
                nxt = None
            if nxt is not None:
                dest = peers[rng.randrange(workers)]     # data may move to any worker
                dest.queue.append(nxt)
                batch.append(("target", nxt[0], nxt[1], 1))
                note(nxt[1], 1)
        else:
            # Deliver one progress batch from some sender, FIFO per channel.
            ready = [k for k, q in channels.items() if k[1] == w.index and q]
            if ready:
                w.apply(channels[rng.choice(ready)].popleft())
        broadcast(w.index, batch)

        # Safety: a worker's output frontier never passes a time that still
        # has records in flight anywhere.
        for p in peers:
            for t in outstanding:
                assert p.output_frontier.less_equal(t), (
                    f"worker {p.index} released {t} with records in flight")
            done = [e for e in range(epochs)
                    if not p.output_frontier.less_equal((e, 2**63)) and e not in p.released]
            for e in done:
                p.released.append(e)
                if verbose:
                    print(f"  step {steps:6d}: worker {p.index} sees epoch {e} complete "
                          f"at the loop output")
        finished = all(p.output_frontier.is_empty() for p in peers)
        if finished and not any(channels.values()):
            break
    elapsed = time.perf_counter() - start
    assert not outstanding and all(not p.queue for p in peers)
    return steps, elapsed, peers


def main(argv=None):
    p = parser("progress_tracking", __doc__, workers=3)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args(argv)
    if args.processes != 1 or args.hostfile is not None:
        p.error("the workers of progress_tracking are simulated in this process: "
                "-w only, no -n or -h")
    tracker, _ = build_tracker()
    print(f"loop scope with {tracker.nodes - 1} operators; timestamps (epoch, iteration)")
    print(f"{args.workers} workers, {args.epochs} epochs")
    steps, elapsed, peers = run(args.workers, args.epochs, args.seed)
    for p in peers:
        assert p.released == sorted(p.released) and len(p.released) == args.epochs
        assert not p.tracker.tracking_anything()
    print(f"all workers saw every epoch complete, in order, after {steps} steps "
          f"({steps / elapsed:,.0f} steps/s); no time was released early")


if __name__ == "__main__":
    main()
