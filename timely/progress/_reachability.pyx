"""Reachability tracking: pointstamp counts, and the frontiers they imply.

The graph is compiled at ``build`` into flat arrays: for each input port the
(output port, summary) pairs it connects to inside its operator, for each
output port the input ports its edges reach, and for each location the
summaries to the scope's outputs. At run time every location keeps two counted
antichains (tly_ma): its pointstamps, and the implications pushed to it. Changes
travel through a binary heap in (time, location) order; no Python object is
touched between ``propagate_all``'s entry and exit.
"""

from collections import namedtuple

from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memcpy, memset

from timely.progress._change_batch cimport ChangeBatch
from timely.progress._frontier cimport Antichain, MutableAntichain, antichain_of
from timely.progress._operate cimport SharedProgress
from timely.progress._rows cimport (
    TLY_MAX_ARITY,
    tly_ma,
    tly_ma_compact_changes,
    tly_ma_count,
    tly_ma_dump,
    tly_ma_less_than,
    tly_ma_free,
    tly_ma_init,
    tly_ma_update,
    tly_row_add,
    tly_row_cmp,
    tly_row_is_zero,
)
from timely.progress._timestamp cimport fill_row, fill_summary, make_time, settle_arity

from timely.errors import CycleError, GraphError, SummaryError, TimestampError

class Source(namedtuple("Source", ["node", "port"])):
    """An operator output port: (operator index, output port).

    Equal only to another Source: ``Source(1, 0) != Target(1, 0)``.
    """

    __slots__ = ()

    def __eq__(self, other):
        return type(other) is Source and tuple.__eq__(self, other)

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(("Source", self[0], self[1]))


class Target(namedtuple("Target", ["node", "port"])):
    """An operator input port: (operator index, input port).

    Equal only to another Target: ``Target(1, 0) != Source(1, 0)``.
    """

    __slots__ = ()

    def __eq__(self, other):
        return type(other) is Target and tuple.__eq__(self, other)

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(("Target", self[0], self[1]))


cdef tuple _port(object location, str what):
    try:
        node, port = location
    except (TypeError, ValueError):
        raise GraphError(f"{what} {location!r} is not a (node, port) pair") from None
    return int(node), int(port)


class Builder:
    """Describes a scope's graph for progress tracking, then compiles it.

    Node 0 stands for the scope itself, seen from inside: its outputs (sources)
    are the scope's inputs and its inputs (targets) are the scope's outputs.
    ``summary[i][o]`` lists the path summaries from input ``i`` to output ``o``
    of a node; an empty list means the input cannot reach that output.

    >>> b = Builder(arity=2)
    >>> b.add_node(0, 1, 1, [[[]]])
    >>> b.add_node(1, 2, 1, [[[(0, 0)]], [[(0, 1)]]])   # input 1 is a feedback input
    >>> b.add_edge((0, 0), (1, 0)); b.add_edge((1, 0), (1, 1)); b.add_edge((1, 0), (0, 0))
    >>> tracker, summary = b.build()
    >>> summary
    [[Antichain([(0, 0)])]]
    """

    def __init__(self, arity=1):
        if not 1 <= arity <= TLY_MAX_ARITY:
            raise TimestampError(f"arity {arity} is outside [1, {TLY_MAX_ARITY}]")
        self._arity = int(arity)
        self._shape = {}      # node -> (inputs, outputs)
        self._summary = {}    # node -> [input][output] -> list of increment tuples
        self._edges = []      # (source node, port, target node, port)
        self._mirrors = {}    # mirror node -> (node it mirrors, its split inputs)

    @property
    def arity(self):
        return self._arity

    def add_node(self, index, inputs, outputs, summary):
        """Declares operator ``index`` with its ports and input-to-output summaries."""
        index, inputs, outputs = int(index), int(inputs), int(outputs)
        if index < 0 or inputs < 0 or outputs < 0:
            raise GraphError(f"node {index}: index and port counts must be non-negative")
        if index in self._shape:
            raise GraphError(f"node {index} was added twice")
        if len(summary) != inputs:
            raise GraphError(f"node {index}: summary has {len(summary)} rows for {inputs} inputs")
        rows = []
        for i, per_output in enumerate(summary):
            if len(per_output) != outputs:
                raise GraphError(
                    f"node {index}: summary row {i} has {len(per_output)} entries for {outputs} outputs")
            row = []
            for o, antichain in enumerate(per_output):
                minimal = _minimal_summaries(antichain, self._arity)
                row.append(minimal)
            rows.append(row)
        self._shape[index] = (inputs, outputs)
        self._summary[index] = rows

    def add_mirror(self, node, index, split=()):
        """Declares node ``index`` as the mirror of node ``node``: the same
        ports and summaries, standing for the other workers' copies of the
        operator, while ``node`` stands for this worker's. Its edges are
        added as any other's. ``split`` lists the inputs of ``node`` whose
        records are counted by the copy that holds them (those of other
        workers at the mirror's input), so that the input's frontier is
        this worker's copy's alone; an input not listed counts every
        worker's records, and its frontier is every copy's. A mirror comes
        after every other node."""
        node, index = int(node), int(index)
        if node not in self._shape or node == 0:
            raise GraphError(f"a mirror of unknown node {node}")
        if node in self._mirrors:
            raise GraphError(f"node {node} is a mirror itself")
        if index in self._shape:
            raise GraphError(f"node {index} was added twice")
        inputs, outputs = self._shape[node]
        split = sorted({int(p) for p in split})
        if any(not 0 <= p < inputs for p in split):
            raise GraphError(f"node {node} has {inputs} inputs, not {split}")
        self._shape[index] = (inputs, outputs)
        self._summary[index] = [list(row) for row in self._summary[node]]
        self._mirrors[index] = (node, split)

    def add_edge(self, source, target):
        """Connects output ``source = (node, port)`` to input ``target = (node, port)``."""
        sn, sp = _port(source, "source")
        tn, tp = _port(target, "target")
        self._edges.append((sn, sp, tn, tp))

    def _check(self):
        for sn, sp, tn, tp in self._edges:
            if sn not in self._shape or not 0 <= sp < self._shape[sn][1]:
                raise GraphError(f"edge from unknown source {Source(sn, sp)}")
            if tn not in self._shape or not 0 <= tp < self._shape[tn][0]:
                raise GraphError(f"edge to unknown target {Target(tn, tp)}")
        plain = [n for n in self._shape if n not in self._mirrors]
        if self._mirrors and (plain and min(self._mirrors) < max(plain) or
                              max(self._mirrors) - min(self._mirrors) + 1 != len(self._mirrors)):
            raise GraphError("mirror nodes must come together after every other node")
        if self._shape and 0 not in self._shape:
            raise GraphError("node 0, the scope boundary, was never added")

    def is_acyclic(self):
        """No cycle is made of edges and zero summaries alone (every cycle strictly advances)."""
        self._check()
        return not self._zero_cycle()

    def _zero_cycle(self):
        """Locations left on or behind a non-advancing cycle (empty when there is none)."""
        succ = {}
        indeg = {}
        for node, (inputs, outputs) in self._shape.items():
            for i in range(inputs):
                indeg.setdefault(Target(node, i), 0)
                for o in range(outputs):
                    if any(not any(s) for s in self._summary[node][i][o]):
                        succ.setdefault(Target(node, i), []).append(Source(node, o))
            for o in range(outputs):
                indeg.setdefault(Source(node, o), 0)
        for sn, sp, tn, tp in self._edges:
            succ.setdefault(Source(sn, sp), []).append(Target(tn, tp))
        for targets in succ.values():
            for t in targets:
                indeg[t] += 1
        work = [loc for loc, d in indeg.items() if d == 0]
        while work:
            loc = work.pop()
            del indeg[loc]
            for nxt in succ.get(loc, ()):
                indeg[nxt] -= 1
                if indeg[nxt] == 0:
                    work.append(nxt)
        return sorted(indeg)

    def build(self):
        """Compiles the graph into a :class:`Tracker`.

        Returns ``(tracker, summary)`` where ``summary[i][o]`` is the Antichain of
        path summaries from scope input ``i`` to scope output ``o``. Raises
        ``CycleError`` when some cycle does not strictly advance timestamps.
        """
        self._check()
        stuck = self._zero_cycle()
        if stuck:
            shown = ", ".join(map(str, stuck[:6])) + (" ..." if len(stuck) > 6 else "")
            raise CycleError(
                "the dataflow graph has a cycle whose path summary does not advance "
                f"timestamps, through {shown}")
        cdef Tracker tracker = Tracker.__new__(Tracker)
        tracker._allocate(self)
        k = self._arity
        inputs, outputs = self._shape.get(0, (0, 0))
        summary = []
        for i in range(outputs):
            per = []
            for o in range(inputs):
                per.append(Antichain(tracker._summaries_to_output(1, 0, i, o), arity=k))
            summary.append(per)
        return tracker, summary


def _minimal_summaries(antichain, arity):
    """Validated increments (tuples) of an iterable of summaries, keeping the minimal ones."""
    cdef uint64_t row[TLY_MAX_ARITY]
    cdef Py_ssize_t i
    found = []
    for s in antichain:
        fill_summary(s, arity, row)
        found.append(tuple([row[i] for i in range(arity)]))
    minimal = []
    for s in found:
        if any(all(a <= b for a, b in zip(o, s)) and o != s for o in found):
            continue
        if s not in minimal:
            minimal.append(s)
    return minimal


cdef object make_time_of(tuple row, Py_ssize_t k):
    """The time of the coordinates ``row``."""
    cdef uint64_t values[TLY_MAX_ARITY]
    cdef Py_ssize_t c
    for c in range(k):
        values[c] = row[c]
    return make_time(values, k)


cdef inline int pour_changes(tly_ma *m) noexcept nogil:
    """Compacts m's frontier change log; -1 when memory runs out."""
    if m.clen == 0:
        return 0
    if tly_ma_compact_changes(m) == <size_t>-1:
        return -1
    return 0


cdef class Tracker:
    """Pointstamp counts per location, and the frontier each location implies.

    ``update_source``/``update_target`` record changes in capability counts at
    operator outputs and inputs. ``propagate_all`` applies them: each change in
    a location's pointstamp frontier travels along edges and operator summaries
    to every location it can reach, in time order so that loops terminate. The
    frontier of a location is then the set of minimal ``p(t)`` over positive
    pointstamps ``(l2, t)`` and path summaries ``p`` from ``l2`` to it.

    Its layout is declared in ``_reachability.pxd``.
    """

    def __cinit__(self):
        self.k = 0
        self.nnodes = 0
        self.T = 0
        self.S = 0
        self.pointstamps = NULL
        self.implications = NULL
        self.interest = NULL
        self.touched = NULL
        self.notifies = NULL
        self.mirror_of = NULL
        self.shadow_tgt = NULL
        self.shadow_loc = NULL
        self.shadow_code = NULL
        self.n_shadows = 0
        self.shadow_node0 = 0

    def __init__(self):
        raise TypeError("a Tracker is made by Builder.build()")

    def __dealloc__(self):
        cdef size_t i
        if self.pointstamps != NULL:
            for i in range(self.T + self.S):
                tly_ma_free(&self.pointstamps[i])
        if self.implications != NULL:
            for i in range(self.T + self.S):
                tly_ma_free(&self.implications[i])
        free(self.pointstamps)
        free(self.implications)
        free(self.tbase)
        free(self.sbase)
        free(self.loc_node)
        free(self.loc_port)
        free(self.conn_start)
        free(self.conn_src)
        free(self.conn_sum)
        free(self.edge_start)
        free(self.edge_tgt)
        free(self.osum_start)
        free(self.osum_port)
        free(self.osum_row)
        free(self.hrows)
        free(self.hdiff)
        free(self.mirror_of)
        free(self.shadow_tgt)
        free(self.shadow_loc)
        free(self.shadow_code)
        free(self.interest)
        free(self.touched)
        free(self.notifies)

    cdef void* _alloc(self, size_t n, size_t size) except NULL:
        cdef void *p = calloc(n if n else 1, size)
        if p == NULL:
            raise MemoryError("Tracker: out of memory")
        return p

    def _allocate(self, builder):
        cdef Py_ssize_t k = builder._arity
        cdef size_t i, j, a, loc, nconn, nedge, nos
        cdef Py_ssize_t c
        self.k = k
        shape = builder._shape
        self.nnodes = (max(shape) + 1) if shape else 0
        self.shapes = [shape.get(n, (0, 0)) for n in range(self.nnodes)]
        self.tbase = <int32_t *>self._alloc(self.nnodes + 1, sizeof(int32_t))
        self.sbase = <int32_t *>self._alloc(self.nnodes + 1, sizeof(int32_t))
        T = 0
        S = 0
        for n in range(self.nnodes):
            self.tbase[n] = T
            self.sbase[n] = S
            T += self.shapes[n][0]
            S += self.shapes[n][1]
        self.tbase[self.nnodes] = T
        self.sbase[self.nnodes] = S
        self.T = T
        self.S = S
        L = T + S
        self.loc_node = <int32_t *>self._alloc(L, sizeof(int32_t))
        self.loc_port = <int32_t *>self._alloc(L, sizeof(int32_t))
        self.locations = (
            [Target(n, p) for n in range(self.nnodes) for p in range(self.shapes[n][0])]
            + [Source(n, p) for n in range(self.nnodes) for p in range(self.shapes[n][1])])
        for n in range(self.nnodes):
            for p in range(self.shapes[n][0]):
                self.loc_node[self.tbase[n] + p] = n
                self.loc_port[self.tbase[n] + p] = p
            for p in range(self.shapes[n][1]):
                self.loc_node[T + self.sbase[n] + p] = n
                self.loc_port[T + self.sbase[n] + p] = p

        # Operator connections, target id -> (source id, summary).
        conns = [[] for _ in range(T)]
        for n in range(self.nnodes):
            if n not in builder._summary:
                continue
            for i_, per_output in enumerate(builder._summary[n]):
                for o_, sums in enumerate(per_output):
                    for s in sums:
                        conns[self.tbase[n] + i_].append((self.sbase[n] + o_, s))
        # Mirrors: per location, its mirror's (-1: none; a target not split
        # has none: its records count there from every worker); per split
        # target, its code (its place among them) for records routed to it.
        self.mirror_of = <int32_t *>self._alloc(L, sizeof(int32_t))
        self.shadow_code = <int32_t *>self._alloc(T, sizeof(int32_t))
        for l_ in range(L):
            self.mirror_of[l_] = -1
        for t_ in range(T):
            self.shadow_code[t_] = -1
        split_targets = []
        for m_, (n_, split) in sorted(builder._mirrors.items()):
            for p in range(self.shapes[n_][1]):
                self.mirror_of[T + self.sbase[n_] + p] = T + self.sbase[m_] + p
            for p in split:
                self.mirror_of[self.tbase[n_] + p] = self.tbase[m_] + p
                split_targets.append((self.tbase[n_] + p, self.tbase[m_] + p))
        self.n_shadows = len(split_targets)
        self.shadow_tgt = <int32_t *>self._alloc(self.n_shadows, sizeof(int32_t))
        self.shadow_loc = <int32_t *>self._alloc(self.n_shadows, sizeof(int32_t))
        for i_, (t_, m_) in enumerate(split_targets):
            self.shadow_tgt[i_] = t_
            self.shadow_loc[i_] = m_
            self.shadow_code[t_] = i_
        self.peers = 1
        self.me = 0
        self.routed = [None] * len(builder._edges)
        self.shadow_node0 = min(builder._mirrors) if builder._mirrors else self.nnodes
        self.mirrored = [builder._mirrors[m_][0] for m_ in range(self.shadow_node0, self.nnodes)]
        self.mirror_t0 = self.tbase[self.shadow_node0]
        nconn = sum(len(c_) for c_ in conns)
        self.conn_start = <int32_t *>self._alloc(T + 1, sizeof(int32_t))
        self.conn_src = <int32_t *>self._alloc(nconn, sizeof(int32_t))
        self.conn_sum = <uint64_t *>self._alloc(nconn * k, sizeof(uint64_t))
        j = 0
        for t_ in range(T):
            self.conn_start[t_] = j
            for src, s in conns[t_]:
                self.conn_src[j] = src
                for c in range(k):
                    self.conn_sum[j * k + c] = s[c]
                j += 1
        self.conn_start[T] = j

        # Edges, source id -> target ids.
        edges = [[] for _ in range(S)]
        for sn, sp, tn, tp in builder._edges:
            edges[self.sbase[sn] + sp].append(self.tbase[tn] + tp)
        nedge = len(builder._edges)
        self.edge_start = <int32_t *>self._alloc(S + 1, sizeof(int32_t))
        self.edge_tgt = <int32_t *>self._alloc(nedge, sizeof(int32_t))
        j = 0
        for s_ in range(S):
            self.edge_start[s_] = j
            for t_ in edges[s_]:
                self.edge_tgt[j] = t_
                j += 1
        self.edge_start[S] = j

        # Summaries from every location to every scope output, walking backwards
        # from node 0's targets; a summary enters a location's antichain only if
        # no summary there is <= it, so loops (which strictly advance) end.
        self.n_outputs = self.shapes[0][0] if self.nnodes else 0
        osum = [dict() for _ in range(L)]   # location -> output -> minimal summaries
        preds_of_source = [[] for _ in range(S)]   # source id -> [(target id, summary)]
        for t_ in range(T):
            for jj in range(self.conn_start[t_], self.conn_start[t_ + 1]):
                preds_of_source[self.conn_src[jj]].append(
                    (t_, tuple([self.conn_sum[jj * k + c] for c in range(k)])))
        preds_of_target = [[] for _ in range(T)]
        for s_ in range(S):
            for t_ in edges[s_]:
                preds_of_target[t_].append(s_)
        zero = (0,) * k
        work = [(self.tbase[0] + o_, o_, zero) for o_ in range(self.n_outputs)] if self.nnodes else []
        limit = (1 << 64) - 1
        while work:
            loc_, out, s = work.pop()
            have = osum[loc_].setdefault(out, [])
            if any(all(a <= b for a, b in zip(h, s)) for h in have):
                continue
            have[:] = [h for h in have if not all(a <= b for a, b in zip(s, h))]
            have.append(s)
            if loc_ < T:
                for s_ in preds_of_target[loc_]:
                    work.append((T + s_, out, s))
            else:
                for t_, inner in preds_of_source[loc_ - T]:
                    composed = tuple([a + b for a, b in zip(inner, s)])
                    if all(v <= limit for v in composed):
                        work.append((t_, out, composed))
        self.osum_py = osum
        nos = sum(len(v) for loc_, d in enumerate(osum) if self.loc_node[loc_] != 0 for v in d.values())
        self.osum_start = <int32_t *>self._alloc(L + 1, sizeof(int32_t))
        self.osum_port = <int32_t *>self._alloc(nos, sizeof(int32_t))
        self.osum_row = <uint64_t *>self._alloc(nos * k, sizeof(uint64_t))
        j = 0
        for loc in range(L):
            self.osum_start[loc] = j
            if self.loc_node[loc] == 0:
                # Node 0's own ports are the scope's boundary: what reaches its
                # outputs from its inputs is the scope's summary, not internal work.
                continue
            for out in sorted(osum[loc]):
                for s in sorted(osum[loc][out]):
                    self.osum_port[j] = out
                    for c in range(k):
                        self.osum_row[j * k + c] = s[c]
                    j += 1
        self.osum_start[L] = j

        self.pointstamps = <tly_ma *>self._alloc(L, sizeof(tly_ma))
        self.implications = <tly_ma *>self._alloc(L, sizeof(tly_ma))
        for loc in range(L):
            tly_ma_init(&self.pointstamps[loc], k)
            tly_ma_init(&self.implications[loc], k)
        self.changes = ChangeBatch(arity=k + 1)
        self.pushed = ChangeBatch(arity=k + 1)
        self.outputs = ChangeBatch(arity=k + 1)
        self.total_counts = 0
        self.hlen = 0
        self.hcap = 0
        self.hrows = NULL
        self.hdiff = NULL
        self.interest = <unsigned char *>self._alloc(self.T, 1)
        memset(self.interest, 1, self.T)
        self.notifies = <unsigned char *>self._alloc(self.T, 1)
        self.sinks = [None] * self.T
        self.touched = <unsigned char *>self._alloc(self.nnodes, 1)

    def _summaries_to_output(self, bint source, node, port, output):
        cdef size_t loc = (self.T + self.sbase[node] + port) if source else (self.tbase[node] + port)
        return list(self.osum_py[loc].get(output, ()))

    # -- worklist ---------------------------------------------------------

    cdef int heap_push(self, const uint64_t *time, size_t loc, int64_t diff) noexcept nogil:
        cdef size_t w = self.k + 1
        cdef size_t i, parent, ncap
        cdef void *p
        if self.hlen == self.hcap:
            ncap = self.hcap * 2 if self.hcap else 64
            p = realloc(self.hrows, ncap * w * sizeof(uint64_t))
            if p == NULL:
                return -1
            self.hrows = <uint64_t *>p
            p = realloc(self.hdiff, ncap * sizeof(int64_t))
            if p == NULL:
                return -1
            self.hdiff = <int64_t *>p
            self.hcap = ncap
        i = self.hlen
        self.hlen += 1
        memcpy(&self.hrows[i * w], time, self.k * sizeof(uint64_t))
        self.hrows[i * w + self.k] = loc
        self.hdiff[i] = diff
        self.sift_up(i)
        return 0

    cdef void swap(self, size_t a, size_t b) noexcept nogil:
        cdef size_t w = self.k + 1
        cdef size_t c
        cdef uint64_t tmp
        cdef int64_t d
        for c in range(w):
            tmp = self.hrows[a * w + c]
            self.hrows[a * w + c] = self.hrows[b * w + c]
            self.hrows[b * w + c] = tmp
        d = self.hdiff[a]
        self.hdiff[a] = self.hdiff[b]
        self.hdiff[b] = d

    cdef void sift_up(self, size_t i) noexcept nogil:
        cdef size_t w = self.k + 1
        cdef size_t parent
        while i > 0:
            parent = (i - 1) // 2
            if tly_row_cmp(&self.hrows[i * w], &self.hrows[parent * w], w) >= 0:
                break
            self.swap(i, parent)
            i = parent

    cdef void heap_pop(self) noexcept nogil:
        """Removes the least entry (the caller has read it)."""
        cdef size_t w = self.k + 1
        cdef size_t i = 0, l, r, m
        self.hlen -= 1
        if self.hlen == 0:
            return
        memcpy(&self.hrows[0], &self.hrows[self.hlen * w], w * sizeof(uint64_t))
        self.hdiff[0] = self.hdiff[self.hlen]
        while True:
            l = 2 * i + 1
            r = l + 1
            m = i
            if l < self.hlen and tly_row_cmp(&self.hrows[l * w], &self.hrows[m * w], w) < 0:
                m = l
            if r < self.hlen and tly_row_cmp(&self.hrows[r * w], &self.hrows[m * w], w) < 0:
                m = r
            if m == i:
                break
            self.swap(i, m)
            i = m

    # -- updates ----------------------------------------------------------

    cdef size_t source_id(self, object source) except? 0:
        node, port = _port(source, "source")
        if not 0 <= node < self.nnodes or not 0 <= port < self.shapes[node][1]:
            raise GraphError(f"unknown source {Source(node, port)}")
        return self.T + self.sbase[node] + port

    cdef size_t target_id(self, object target) except? 0:
        node, port = _port(target, "target")
        if not 0 <= node < self.nnodes or not 0 <= port < self.shapes[node][0]:
            raise GraphError(f"unknown target {Target(node, port)}")
        return self.tbase[node] + port

    cdef int push_change(self, size_t loc, object time, int64_t diff) except -1:
        cdef uint64_t row[TLY_MAX_ARITY + 1]
        settle_arity(self.k, time)
        row[0] = loc
        fill_row(time, self.k, &row[1])
        self.changes.push_row(row, diff)
        return 0

    @property
    def arity(self):
        return self.k

    @property
    def nodes(self):
        return self.nnodes

    def shape(self, node):
        """``(inputs, outputs)`` of a node."""
        return tuple(self.shapes[node])

    def update_source(self, source, time, diff):
        """Adds ``diff`` to the pointstamp count of ``time`` at an output port."""
        self.push_change(self.source_id(source), time, diff)

    def update_target(self, target, time, diff):
        """Adds ``diff`` to the pointstamp count of ``time`` at an input port."""
        self.push_change(self.target_id(target), time, diff)

    def propagate_all(self):
        """Applies the recorded changes and propagates their consequences."""
        cdef int rc
        self.changes.compact_now()
        with nogil:
            rc = self._propagate()
        if rc != 0:
            raise MemoryError("Tracker: out of memory during propagation")

    cdef int _propagate(self) noexcept nogil:
        cdef size_t k = self.k
        cdef size_t w = k + 1
        cdef size_t i, j, c, n = self.changes.len, loc, start
        cdef uint64_t *rows = self.changes.rows
        cdef int64_t *diffs = self.changes.diffs
        cdef tly_ma *m
        cdef uint64_t time[TLY_MAX_ARITY]
        cdef uint64_t out[TLY_MAX_ARITY + 1]
        cdef int64_t diff
        cdef const uint64_t *ct
        cdef int64_t cd

        # Step 1: pointstamp changes, grouped by location; only changes to a
        # location's pointstamp frontier travel further.
        i = 0
        while i < n:
            loc = rows[i * w]
            m = &self.pointstamps[loc]
            start = i
            while i < n and rows[i * w] == loc:
                if tly_ma_update(m, &rows[i * w + 1], diffs[i]) != 0:
                    return -1
                i += 1
            if pour_changes(m) != 0:
                return -1
            for j in range(m.clen):
                ct = &m.chg[j * k]
                cd = m.chgd[j]
                self.total_counts += cd
                for c in range(<size_t>self.osum_start[loc], <size_t>self.osum_start[loc + 1]):
                    if tly_row_add(ct, &self.osum_row[c * k], &out[1], k):
                        out[0] = self.osum_port[c]
                        if self.outputs.push_raw(out, cd) != 0:
                            return -1
                if self.heap_push(ct, loc, cd) != 0:
                    return -1
            m.clen = 0
        self.changes.len = 0
        self.changes.clean = 0

        # Step 2: the worklist, in (time, location) order.
        while self.hlen > 0:
            memcpy(time, self.hrows, k * sizeof(uint64_t))
            loc = self.hrows[k]
            diff = self.hdiff[0]
            self.heap_pop()
            while self.hlen > 0 and self.hrows[k] == loc and tly_row_cmp(self.hrows, time, k) == 0:
                diff += self.hdiff[0]
                self.heap_pop()
            if diff == 0:
                continue
            m = &self.implications[loc]
            if tly_ma_update(m, time, diff) != 0 or pour_changes(m) != 0:
                return -1
            for j in range(m.clen):
                ct = &m.chg[j * k]
                cd = m.chgd[j]
                if loc < self.T:
                    for c in range(<size_t>self.conn_start[loc], <size_t>self.conn_start[loc + 1]):
                        if tly_row_add(ct, &self.conn_sum[c * k], &out[1], k):
                            if self.heap_push(&out[1], self.T + self.conn_src[c], cd) != 0:
                                return -1
                else:
                    for c in range(<size_t>self.edge_start[loc - self.T],
                                   <size_t>self.edge_start[loc - self.T + 1]):
                        if self.heap_push(ct, self.edge_tgt[c], cd) != 0:
                            return -1
                out[0] = loc
                memcpy(&out[1], ct, k * sizeof(uint64_t))
                if self.pushed.push_raw(out, cd) != 0:
                    return -1
            m.clen = 0
        return 0

    cdef object location(self, size_t loc):
        return self.locations[loc]

    def absorb(self, dict updates):
        """Records every ``(is_source, node, port, time) -> diff`` of ``updates``
        except those at node 0, which are returned as a list of ``(key, diff)``.

        One call per batch of pointstamp changes; the caller clears ``updates``.
        """
        cdef list boundary = []
        cdef tuple key
        cdef Py_ssize_t node, port
        cdef size_t loc
        cdef int64_t d
        for k, diff in updates.items():
            d = diff
            if d == 0:
                continue
            key = <tuple>k
            node = key[1]
            if node == 0:
                boundary.append((key, d))
                continue
            port = key[2]
            if not 0 < node < self.nnodes:
                raise GraphError(f"pointstamp at unknown node {node}")
            if key[0]:
                if not 0 <= port < self.shapes[node][1]:
                    raise GraphError(f"unknown source {Source(node, port)}")
                loc = self.T + self.sbase[node] + port
            else:
                if not 0 <= port < self.shapes[node][0]:
                    raise GraphError(f"unknown target {Target(node, port)}")
                loc = self.tbase[node] + port
            self.push_change(loc, key[3], d)
        return boundary

    # -- located progress ---------------------------------------------------
    #
    # A scope's progress travels as a ChangeBatch of rows ``(location, time
    # coordinates...)``: the location is this tracker's id of an input port
    # (``tbase[node] + port``, below ``targets``) or an output port
    # (``targets + sbase[node] + port``). Every worker that built the same
    # graph numbers locations alike (the scope's fingerprint checks that), so
    # the rows cross workers as they are: no Python object per update.

    @property
    def targets(self):
        """How many input ports the graph has: locations below this are
        inputs, the rest outputs."""
        return self.T

    @property
    def locations_count(self):
        """How many locations (input and output ports) the graph has."""
        return self.T + self.S

    def target_location(self, Py_ssize_t node, Py_ssize_t port):
        """The location id of input ``port`` of ``node``."""
        return self.target_id((node, port))

    def source_location(self, Py_ssize_t node, Py_ssize_t port):
        """The location id of output ``port`` of ``node``."""
        return self.source_id((node, port))

    cdef int check_located(self, ChangeBatch batch) except -1:
        if batch.k != self.k + 1:
            raise TimestampError(f"located changes of width {batch.k} for a tracker of "
                                 f"arity {self.k} (width {self.k + 1})")
        return 0

    cpdef drain_shared(self, SharedProgress shared, Py_ssize_t node, ChangeBatch into,
                       bint produced=True):
        """Moves operator ``node``'s shared progress into ``into`` as located
        changes: records consumed as ``-n`` at its inputs, capability changes
        at its outputs, records produced as ``+n`` at every input its outputs'
        edges reach (node 0's included: the scope's boundary). Without
        ``produced``, records produced are dropped (sent before the scope
        knew where its outputs lead). Leaves every port of ``shared`` empty.
        O(changes x edges), no Python object per change."""
        cdef ChangeBatch batch
        cdef Py_ssize_t port, nin, nout
        cdef size_t src, e
        cdef object routed
        self.check_located(into)
        if not 0 < node < self.nnodes:
            raise GraphError(f"pointstamp at unknown node {node}")
        nin = self.tbase[node + 1] - self.tbase[node]
        nout = self.sbase[node + 1] - self.sbase[node]
        port = 0
        for batch in shared.consumeds:
            if batch.len:
                if port >= nin:
                    raise GraphError(f"unknown target {Target(node, port)}")
                self.push_located(batch, self.tbase[node] + port, -1, into)
                batch.len = 0
                batch.clean = 0
            port += 1
        port = 0
        for batch in shared.internals:
            if batch.len:
                if port >= nout:
                    raise GraphError(f"unknown source {Source(node, port)}")
                self.push_located(batch, self.T + self.sbase[node] + port, 1, into)
                batch.len = 0
                batch.clean = 0
            port += 1
        port = 0
        for batch in shared.produceds:
            if batch.len:
                if port >= nout:
                    raise GraphError(f"unknown source {Source(node, port)}")
                if produced:
                    src = self.sbase[node] + port
                    for e in range(<size_t>self.edge_start[src], <size_t>self.edge_start[src + 1]):
                        if <Py_ssize_t>self.edge_tgt[e] >= self.mirror_t0:
                            continue           # a mirror's: its records are counted by others
                        routed = self.routed[e]
                        if routed is None:
                            self.push_located(batch, self.edge_tgt[e], 1, into)
                        else:
                            self.push_routed(<ChangeBatch>routed, self.edge_tgt[e], into)
                batch.len = 0
                batch.clean = 0
            if nout and self.n_shadows:
                # What was routed on an edge whose records were dropped (or
                # that produced nothing this time) goes with them.
                src = self.sbase[node] + port
                for e in range(<size_t>self.edge_start[src], <size_t>self.edge_start[src + 1]):
                    routed = self.routed[e]
                    if routed is not None and (<ChangeBatch>routed).len:
                        if produced:
                            self.push_routed(<ChangeBatch>routed, self.edge_tgt[e], into)
                        (<ChangeBatch>routed).len = 0
                        (<ChangeBatch>routed).clean = 0
            port += 1

    cdef int push_routed(self, ChangeBatch routed, size_t target, ChangeBatch into) except -1:
        """Appends the records routed to ``target`` (rows ``(worker, time...)``
        of ``routed``) to ``into`` under their codes: location ``T + S +
        shadow * peers + worker``, which each receiver reads as ``target``
        when the records are bound for it and as the target's shadow
        otherwise (:meth:`localize`). Empties ``routed``."""
        cdef uint64_t row[TLY_MAX_ARITY + 1]
        cdef size_t i, k = self.k, L = self.T + self.S
        cdef int32_t code = self.shadow_code[target]
        cdef uint64_t dest
        if routed.k != self.k + 1:
            raise TimestampError(f"routed counts of width {routed.k} for a tracker of "
                                 f"arity {self.k}")
        if code < 0:
            raise GraphError(f"records routed to {self.locations[target]}, which has no shadow")
        routed.compact_now()
        into.reserve(routed.len)
        for i in range(routed.len):
            dest = routed.rows[i * (k + 1)]
            if dest >= <uint64_t>self.peers:
                raise GraphError(f"records routed to worker {dest} of {self.peers}")
            row[0] = L + <size_t>code * <size_t>self.peers + dest
            memcpy(&row[1], &routed.rows[i * (k + 1) + 1], k * sizeof(uint64_t))
            into.push_row(row, routed.diffs[i])
        routed.len = 0
        routed.clean = 0
        return 0

    cpdef int localize(self, ChangeBatch batch, size_t start, size_t sender) except -1:
        """Reads rows ``start..`` of ``batch``, as worker ``sender`` located
        them, from this worker's side: another worker's changes count at
        the mirrors of its operators' locations (its capabilities, and the
        records its copy of an operator holds at a split input), and
        records routed to a split input under its code count at the input
        when bound for this worker and at its mirror when not. A code
        outside the scope is a GraphError."""
        cdef size_t i, loc, c, w = self.k + 1, L = self.T + self.S
        cdef size_t peers = <size_t>self.peers, n = batch.len
        cdef uint64_t *rows = batch.rows
        cdef bint other = sender != <size_t>self.me
        if self.shadow_node0 == self.nnodes:
            return 0
        if batch.k != self.k + 1:
            raise TimestampError(f"located changes of width {batch.k} for a tracker of "
                                 f"arity {self.k}")
        if sender >= peers:
            raise GraphError(f"progress from worker {sender} of {peers}")
        for i in range(start, n):
            loc = rows[i * w]
            if loc >= L:
                c = loc - L
                if c >= <size_t>self.n_shadows * peers:
                    raise GraphError(f"progress at location {loc}, outside this scope's "
                                     f"{L} locations and {self.n_shadows * peers} routed codes")
                if c % peers == <size_t>self.me:
                    rows[i * w] = <uint64_t>self.shadow_tgt[c // peers]
                else:
                    rows[i * w] = <uint64_t>self.shadow_loc[c // peers]
            elif other and self.mirror_of[loc] >= 0:
                rows[i * w] = <uint64_t>self.mirror_of[loc]
        if batch.clean > start:
            batch.clean = start
        return 0

    cdef size_t real_location(self, size_t loc) noexcept:
        """The location ``loc`` mirrors (``loc`` itself when it is no mirror)."""
        cdef Py_ssize_t node = self.loc_node[loc], p = self.loc_port[loc]
        cdef Py_ssize_t real
        if node < self.shadow_node0:
            return loc
        real = self.mirrored[node - self.shadow_node0]
        if loc < self.T:
            return self.tbase[real] + p
        return self.T + self.sbase[real] + p

    def set_worker(self, Py_ssize_t index, Py_ssize_t peers):
        """This worker's index among ``peers``: how :meth:`localize` reads
        the records routed to a shadowed target."""
        if not 0 <= index < peers:
            raise GraphError(f"worker {index} of {peers}")
        self.me = index
        self.peers = peers

    def route_counts(self, source, target, ChangeBatch routed not None):
        """Counts the records on the edge ``source -> target`` by the worker
        they are bound for, from ``routed`` (rows ``(worker, time...)``,
        filled by the edge's pusher) instead of by the records its source
        produced. ``target`` must have a shadow."""
        cdef size_t src = self.source_id(source) - self.T, tgt = self.target_id(target), e
        if self.shadow_code[tgt] < 0:
            raise GraphError(f"{Target(*target)} has no shadow: its records count as produced")
        if routed.k != self.k + 1:
            raise TimestampError(f"routed counts of width {routed.k} for a tracker of "
                                 f"arity {self.k}")
        for e in range(<size_t>self.edge_start[src], <size_t>self.edge_start[src + 1]):
            if <size_t>self.edge_tgt[e] == tgt:
                self.routed[e] = routed
                return
        raise GraphError(f"no edge from {Source(*source)} to {Target(*target)}")

    def split_inputs(self):
        """The inputs whose frontier is this worker's copy's alone, as ``Target`` s."""
        return [self.locations[self.shadow_tgt[i]] for i in range(self.n_shadows)]

    def mirror(self, size_t loc):
        """The location that mirrors location ``loc`` (another worker's copy
        of its operator), or -1."""
        if loc >= self.T + self.S:
            raise GraphError(f"location {loc} outside this scope's {self.T + self.S}")
        return self.mirror_of[loc]

    cdef int push_located(self, ChangeBatch batch, size_t loc, int64_t sign,
                          ChangeBatch into) except -1:
        """Appends ``sign`` times each change of ``batch`` at ``loc`` to ``into``."""
        cdef uint64_t row[TLY_MAX_ARITY + 1]
        cdef size_t i, k = self.k
        if batch.k != self.k:
            raise TimestampError(f"changes of arity {batch.k} for a tracker of arity {self.k}")
        batch.compact_now()
        into.reserve(batch.len)
        row[0] = loc
        for i in range(batch.len):
            memcpy(&row[1], &batch.rows[i * k], k * sizeof(uint64_t))
            into.push_row(row, sign * batch.diffs[i])
        return 0

    cpdef harvest(self, list batches, ChangeBatch into):
        """Records that entered through the scope's inputs (``batches[p]``
        holds input ``p``'s ``(time, n)``): ``+n`` at every input its edges
        reach, ``-n`` at node 0's output ``p``; empties the batches."""
        cdef ChangeBatch batch
        cdef Py_ssize_t port = 0
        cdef size_t src, e
        self.check_located(into)
        for batch in batches:
            if batch.len:
                if port >= self.sbase[1] - self.sbase[0]:
                    raise GraphError(f"unknown source {Source(0, port)}")
                src = self.sbase[0] + port
                for e in range(<size_t>self.edge_start[src], <size_t>self.edge_start[src + 1]):
                    self.push_located(batch, self.edge_tgt[e], 1, into)
                self.push_located(batch, self.T + src, -1, into)
                batch.len = 0
                batch.clean = 0
            port += 1

    cpdef absorb_located(self, ChangeBatch batch, ChangeBatch boundary):
        """Records every located change of ``batch`` (this worker's or another
        worker's, as received) except those at node 0, which go to
        ``boundary`` (None: there may be none); empties ``batch``. A location
        outside the graph is a GraphError, and nothing of the batch is then
        recorded."""
        cdef size_t i, loc, w = self.k + 1, L = self.T + self.S, n
        cdef uint64_t *rows
        self.check_located(batch)
        if boundary is not None:
            self.check_located(boundary)
        batch.compact_now()
        n = batch.len
        rows = batch.rows
        for i in range(n):
            loc = rows[i * w]
            if loc >= L:
                raise GraphError(f"progress at location {loc}, outside this scope's "
                                 f"{L} locations")
            if self.loc_node[loc] == 0 and boundary is None:
                raise GraphError(f"progress at the boundary of a scope that has none "
                                 f"({self.locations[loc]})")
        if n == 0:
            return
        if self.sbase[1] == 0 and self.tbase[1] == 0:
            # No boundary: one copy.
            self.changes.reserve(n)
            memcpy(&self.changes.rows[self.changes.len * w], rows, n * w * sizeof(uint64_t))
            memcpy(&self.changes.diffs[self.changes.len], batch.diffs, n * sizeof(int64_t))
            self.changes.len += n
        else:
            for i in range(n):
                if self.loc_node[rows[i * w]] == 0:
                    boundary.push_row(&rows[i * w], batch.diffs[i])
                else:
                    self.changes.push_row(&rows[i * w], batch.diffs[i])
        batch.len = 0
        batch.clean = 0

    cpdef bint must_send(self, ChangeBatch batch) except -1:
        """Whether located changes hold one that other workers must see now
        (demand-driven progress, as in the Rust crate): a change at the
        scope's boundary, or a decrement that may move a frontier (no implied
        time at its location is strictly less, and it is implied at most
        once). The others may wait, travelling with the next batch that
        must go."""
        cdef size_t i, loc, w = self.k + 1
        cdef tly_ma *m
        self.check_located(batch)
        batch.compact_now()
        for i in range(batch.len):
            loc = batch.rows[i * w]
            if loc >= self.T + self.S or self.loc_node[loc] == 0:
                return True
            if batch.diffs[i] < 0:
                m = &self.implications[loc]
                if (not tly_ma_less_than(m, &batch.rows[i * w + 1])
                        and tly_ma_count(m, &batch.rows[i * w + 1]) <= 1):
                    return True
        return False

    cpdef report_boundary(self, ChangeBatch boundary, SharedProgress progress, bint nested):
        """Reports changes at node 0 to the parent, in ``progress``: records
        leaving node 0's outputs were consumed at the scope's inputs, records
        reaching node 0's inputs were produced at its outputs; ``nested``
        drops the innermost coordinate. Empties ``boundary``."""
        cdef size_t i, loc, w = self.k + 1
        cdef Py_ssize_t port, outer = self.k - 1 if nested else self.k
        cdef ChangeBatch into
        cdef list consumeds = progress.consumeds, produceds = progress.produceds
        self.check_located(boundary)
        boundary.compact_now()
        for i in range(boundary.len):
            loc = boundary.rows[i * w]
            port = self.loc_port[loc]
            if loc < self.T:
                into = produceds[port]
                if into.k != outer:
                    raise TimestampError(f"a parent's progress of arity {into.k}, not {outer}")
                into.push_row(&boundary.rows[i * w + 1], boundary.diffs[i])
            else:
                into = consumeds[port]
                if into.k != outer:
                    raise TimestampError(f"a parent's progress of arity {into.k}, not {outer}")
                into.push_row(&boundary.rows[i * w + 1], -boundary.diffs[i])
        boundary.len = 0
        boundary.clean = 0

    cpdef int report_outputs(self, list capabilities, list internals, bint nested) except -1:
        """Reports to the parent, in ``internals`` (a ChangeBatch per scope
        output), the changes in the times that may still reach each scope
        output, as the scope's capability changes: ``capabilities[port]``
        (a MutableAntichain) counts those times, and each change of its
        frontier is reported, the innermost coordinate dropped when
        ``nested``. Drains the output changes ``propagate_all`` gathered."""
        cdef size_t i, j, start, n, w = self.k + 1
        cdef Py_ssize_t port, outer = self.k - 1 if nested else self.k
        cdef MutableAntichain held
        cdef ChangeBatch into
        cdef ChangeBatch changes = self.outputs
        if changes.len == 0:
            return 0
        if len(capabilities) != <Py_ssize_t>self.n_outputs or \
                len(internals) != <Py_ssize_t>self.n_outputs:
            raise GraphError(f"{len(capabilities)} capabilities and {len(internals)} "
                             f"internal batches for {self.n_outputs} scope outputs")
        changes.compact_now()
        i = 0
        while i < changes.len:
            # Rows come sorted, so each output's changes are one run.
            port = <Py_ssize_t>changes.rows[i * w]
            held = <MutableAntichain?>capabilities[port]
            into = <ChangeBatch?>internals[port]
            if held.k != self.k or into.k != outer:
                raise TimestampError(f"scope output {port}: capabilities of arity {held.k} "
                                     f"and a parent's progress of arity {into.k}, for times "
                                     f"of arity {self.k}")
            start = i
            while i < changes.len and changes.rows[i * w] == <uint64_t>port:
                held.update_row(&changes.rows[i * w + 1], changes.diffs[i])
                i += 1
            if held.m.clen == 0:
                continue
            n = tly_ma_compact_changes(&held.m)
            if n == <size_t>-1:
                raise MemoryError("scope output capabilities: out of memory while compacting")
            for j in range(n):
                into.push_row(&held.m.chg[j * self.k], held.m.chgd[j])
            held.m.clen = 0
        changes.len = 0
        changes.clean = 0
        return 0

    def located_items(self, ChangeBatch batch):
        """``[((is_source, node, port, time), diff)]`` of located changes, for
        logs and diagnostics (it builds a Python object per change); leaves
        ``batch`` as it is."""
        cdef size_t i, loc, w = self.k + 1
        cdef bint mirrored = False
        self.check_located(batch)
        batch.compact_now()
        out = []
        for i in range(batch.len):
            loc = batch.rows[i * w]
            if loc >= self.T + self.S:
                raise GraphError(f"progress at location {loc}, outside this scope's "
                                 f"{self.T + self.S} locations")
            if self.loc_node[loc] >= self.shadow_node0:
                # A mirror is described as the location it mirrors.
                loc = self.real_location(loc)
                mirrored = True
            out.append((loc, tuple([batch.rows[i * w + 1 + c] for c in range(self.k)]),
                        batch.diffs[i]))
        if mirrored:
            # The same changes read from any worker's side: one entry a
            # location and time, in the order of both.
            merged = {}
            for loc_, row, diff in out:
                merged[(loc_, row)] = merged.get((loc_, row), 0) + diff
            out = [(key[0], key[1], diff) for key, diff in sorted(merged.items()) if diff]
        return [((loc_ >= self.T, self.loc_node[loc_], self.loc_port[loc_],
                  make_time_of(row, self.k)), diff) for loc_, row, diff in out]

    def pending(self):
        """Changes are recorded and not yet applied by :meth:`propagate_all`
        (they may cancel out)."""
        return self.changes.len != 0

    def set_interest(self, Py_ssize_t node, Py_ssize_t port, bint interesting):
        """Whether ``drain_pushed(interesting_only=True)`` reports the frontier
        changes of input ``port`` of ``node`` (all are reported at first)."""
        self.interest[self.target_id((node, port))] = interesting

    def set_sink(self, Py_ssize_t node, Py_ssize_t port, sink, bint notify):
        """Input ``port`` of ``node``: :meth:`drain_frontiers` keeps ``sink``
        (a :class:`MutableAntichain` counting that input's frontier, or None)
        up to date in compiled code, and names ``node`` among those to
        activate when the frontier changes and ``notify`` is set."""
        cdef size_t loc = self.target_id((node, port))
        cdef MutableAntichain chain
        if sink is not None:
            if not isinstance(sink, MutableAntichain):
                raise TypeError(f"a frontier sink is a MutableAntichain, not "
                                f"{type(sink).__name__}")
            chain = <MutableAntichain>sink
            if chain.k == 0:
                chain.set_arity(self.k)
            elif chain.k != self.k:
                raise TimestampError(f"a frontier sink of arity {chain.k} for a tracker of "
                                     f"arity {self.k}")
        self.sinks[loc] = sink
        self.notifies[loc] = notify

    cpdef tuple drain_frontiers(self, bint everything):
        """Drains the frontier changes: each input's go to its sink (see
        :meth:`set_sink`), in compiled code. Returns ``(activate, pushed,
        logged, quiet)``: the nodes (other than 0, in order, each once) one of
        whose notifying inputs changed; ``(node, port, [(time, diff), ...])``
        of each changed input without a sink that :meth:`set_interest` left
        in, for the scope to push; with ``everything``, the same of every
        changed input (for logs), else an empty list; and the nodes quiet
        now, as :meth:`drain_pushed` gives them. Python objects are made only
        for inputs without a sink and for logs."""
        cdef size_t i, loc, w = self.k + 1, last = <size_t>-1
        cdef list activate = [], pushed = [], logged = [], quiet = []
        cdef list current = None, logging = None
        cdef Py_ssize_t node, lowest = self.nnodes, highest = -1, noted = -1
        cdef MutableAntichain sink = None
        cdef object change
        self.pushed.compact_now()
        for i in range(self.pushed.len):
            loc = self.pushed.rows[i * w]
            node = self.loc_node[loc]
            if node >= self.shadow_node0:
                continue                   # a shadow: no operator reads it
            self.touched[node] = 1
            if node < lowest:
                lowest = node
            if node > highest:
                highest = node
            if loc >= self.T or node == 0:
                continue
            if loc != last:
                if sink is not None:
                    sink.m.clen = 0        # its owner reads the frontier, not the changes
                last = loc
                entry = self.sinks[loc]
                sink = <MutableAntichain>entry if entry is not None else None
                current = None
                if sink is None and self.interest[loc]:
                    current = []
                    pushed.append((node, self.loc_port[loc], current))
                logging = None
                if everything:
                    logging = []
                    logged.append((node, self.loc_port[loc], logging))
                if self.notifies[loc] and node != noted:
                    activate.append(node)
                    noted = node
            if sink is not None:
                sink.update_row(&self.pushed.rows[i * w + 1], self.pushed.diffs[i])
            if current is not None or logging is not None:
                change = (make_time(&self.pushed.rows[i * w + 1], self.k), self.pushed.diffs[i])
                if current is not None:
                    current.append(change)
                if logging is not None:
                    logging.append(change)
        if sink is not None:
            sink.m.clen = 0
        self.pushed.len = 0
        self.pushed.clean = 0
        for node in range(lowest, highest + 1):
            if self.touched[node]:
                self.touched[node] = 0
                if node != 0 and self.quiet(node):
                    quiet.append(node)
        return activate, pushed, logged, quiet

    def drain_pushed(self, bint interesting_only=False):
        """Drains the frontier changes, for a scope's own use.

        Returns ``(targets, quiet)``: ``targets`` lists ``(node, port, [(time, diff),
        ...])`` per input port of a node other than 0 whose frontier changed
        (with ``interesting_only``, only those :meth:`set_interest` left in and
        that have no sink, see :meth:`drain_frontiers`); ``quiet`` lists, in
        order, the nodes touched by any change that now have empty input
        frontiers and no positive count at their outputs.
        """
        _activate, pushed, logged, quiet = self.drain_frontiers(not interesting_only)
        return (pushed if interesting_only else logged), quiet

    def pushed_changes(self):
        """Drains the changes to each location's frontier since the last call.

        A list of ``(Target | Source, time, diff)`` ordered by location (targets
        before sources, then node and port) and time.
        """
        cdef size_t i, w = self.k + 1
        self.pushed.compact_now()
        out = [(self.location(self.pushed.rows[i * w]), make_time(&self.pushed.rows[i * w + 1], self.k),
                self.pushed.diffs[i]) for i in range(self.pushed.len)]
        self.pushed.len = 0
        self.pushed.clean = 0
        return out

    def output_changes(self):
        """Drains, per scope output, the changes to the times that may still reach it."""
        cdef size_t i, w = self.k + 1
        self.outputs.compact_now()
        result = [[] for _ in range(self.n_outputs)]
        for i in range(self.outputs.len):
            result[self.outputs.rows[i * w]].append(
                (make_time(&self.outputs.rows[i * w + 1], self.k), self.outputs.diffs[i]))
        self.outputs.len = 0
        self.outputs.clean = 0
        return result

    def tracking_anything(self):
        """Unapplied changes remain, or some location has a positive pointstamp count."""
        return not self.changes.is_empty() or self.total_counts > 0

    def source_frontier(self, source):
        """The frontier implied at an output port."""
        cdef size_t loc = self.source_id(source)
        return antichain_of(self.implications[loc].front, self.implications[loc].flen, self.k)

    def target_frontier(self, target):
        """The frontier implied at an input port."""
        cdef size_t loc = self.target_id(target)
        return antichain_of(self.implications[loc].front, self.implications[loc].flen, self.k)

    cdef list dump(self, tly_ma *m):
        cdef size_t i, n = m.size
        cdef uint64_t *rows
        cdef int64_t *counts
        if n == 0:
            return []
        rows = <uint64_t *>malloc(n * self.k * sizeof(uint64_t))
        counts = <int64_t *>malloc(n * sizeof(int64_t))
        if rows == NULL or counts == NULL:
            free(rows)
            free(counts)
            raise MemoryError("Tracker: out of memory")
        try:
            if tly_ma_dump(m, rows, counts) != 0:
                raise MemoryError("Tracker: out of memory")
            return [(make_time(&rows[i * self.k], self.k), counts[i]) for i in range(n)]
        finally:
            free(rows)
            free(counts)

    def is_global(self, bint is_source, Py_ssize_t node, Py_ssize_t port, time):
        """Whether a decrement of ``time`` at this location may move a frontier
        that other workers see: no implied time is strictly less than it, and
        it is implied at most once. Updates that are not may wait (demand-driven
        progress), as long as they travel with the next one that is."""
        cdef uint64_t row[TLY_MAX_ARITY]
        cdef size_t loc
        if is_source:
            loc = self.source_id((node, port))
        else:
            loc = self.target_id((node, port))
        settle_arity(self.k, time)
        fill_row(time, self.k, row)
        cdef tly_ma *m = &self.implications[loc]
        return not tly_ma_less_than(m, row) and tly_ma_count(m, row) <= 1

    def node_quiet(self, Py_ssize_t node):
        """No input of ``node`` can still receive data and none of its outputs holds a
        capability: the operator may shut down."""
        if not 0 <= node < self.nnodes:
            raise GraphError(f"unknown node {node}")
        return self.quiet(node)

    cdef bint quiet(self, Py_ssize_t node) noexcept:
        cdef size_t loc
        for loc in range(<size_t>self.tbase[node], <size_t>self.tbase[node + 1]):
            if self.implications[loc].flen:
                return False
        for loc in range(<size_t>self.sbase[node], <size_t>self.sbase[node + 1]):
            if self.pointstamps[self.T + loc].flen:
                return False
        return True

    def source_pointstamps(self, source):
        """Accumulated pointstamp counts at an output port (non-zero ones, in
        time order), every worker's copy's together."""
        return self.with_mirror(self.source_id(source))

    def target_pointstamps(self, target):
        """Accumulated pointstamp counts at an input port (non-zero ones, in
        time order), every worker's copy's together."""
        return self.with_mirror(self.target_id(target))

    cdef list with_mirror(self, size_t loc):
        cdef list mine = self.dump(&self.pointstamps[loc])
        if self.mirror_of[loc] < 0:
            return mine
        counts = dict(mine)
        for time, n in self.dump(&self.pointstamps[self.mirror_of[loc]]):
            counts[time] = counts.get(time, 0) + n
        return sorted((t, n) for t, n in counts.items() if n)

