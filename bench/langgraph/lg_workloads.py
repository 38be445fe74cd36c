#!/usr/bin/env python3
"""The LangGraph side of the engine workloads W1-W8 (docs/BENCHMARKS.md), one case per call,
one JSON object on stdout. Called by bench/engine-vs-langgraph.sh with the weft side
(crates/weft-bench/examples/engine_workloads.rs) on the same shapes.

  lg_workloads.py run SHAPE MODE [REPS] [MAXC]
                                          SHAPE: chain:N layered:WxD tree:N fanout:K payload:N
                                          map:N (= fanout:N) loopmap:RxK
                                          MODE: none (no checkpointer) | sqlite-sync
                                          MAXC: the config's max_concurrency (at most MAXC
                                          tasks of a superstep run at once; weft's
                                          map.max_parallel)
  lg_workloads.py resume N STOP [REPS]    W7: chain:N, node STOP fails once; resume from the
                                          SQLite checkpoint
  lg_workloads.py barrier [REPS]          W8: 50 ms and 1 s branches; after_fast's start

Every node adds 1 to a counter (an operator.add reducer) that is checked against the node
count after each run. One warm-up run, then the median of REPS (default 5) runs; wall clock
(perf_counter) and CPU time (getrusage user + system, this process); peak RSS is ru_maxrss.
Graph construction and compile() are outside the timed region.
"""
import json
import operator
import os
import resource
import sqlite3
import statistics
import sys
import tempfile
import time
import atexit
import shutil
from typing import Annotated, TypedDict

from importlib.metadata import version
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send


class Count(TypedDict):
    n: Annotated[int, operator.add]


class Growing(TypedDict):
    n: Annotated[int, operator.add]
    log: Annotated[list, operator.add]


CHUNK = "x" * 1024


def step(_state):
    return {"n": 1}


def grow(_state):
    return {"n": 1, "log": [CHUNK]}


def sequence(g, names):
    g.add_edge(START, names[0])
    for a, b in zip(names, names[1:]):
        g.add_edge(a, b)
    g.add_edge(names[-1], END)


def chain(n, body=step, state=Count):
    g = StateGraph(state)
    names = [f"c{i}" for i in range(n)]
    for name in names:
        g.add_node(name, body)
    sequence(g, names)
    return g, n, n


def layered(width, depth):
    g = StateGraph(Count)
    name = lambda d, w: f"l{d}_{w}"
    for d in range(depth):
        for w in range(width):
            g.add_node(name(d, w), step)
    for w in range(width):
        g.add_edge(START, name(0, w))
        g.add_edge(name(depth - 1, w), END)
    for d in range(depth - 1):
        for a in range(width):
            for b in range(width):
                g.add_edge(name(d, a), name(d + 1, b))
    return g, width * depth, depth


def tree(total, fanout=10):
    g = StateGraph(Count)
    for i in range(total):
        g.add_node(f"t{i}", step)
    g.add_edge(START, "t0")
    parents = set()
    for i in range(1, total):
        parent = (i - 1) // fanout
        parents.add(parent)
        g.add_edge(f"t{parent}", f"t{i}")
    for i in range(total):
        if i not in parents:
            g.add_edge(f"t{i}", END)
    levels, size, seen = 0, 1, 0
    while seen < total:
        seen, size, levels = seen + size, size * fanout, levels + 1
    return g, total, levels


def fanout(k):
    # LangGraph's dynamic fan-out: one dispatcher sends k tasks to `work`, then `reduce`.
    g = StateGraph(Count)
    g.add_node("dispatch", step)
    g.add_node("work", step)
    g.add_node("reduce", step)
    g.add_edge(START, "dispatch")
    g.add_conditional_edges("dispatch", lambda _s: [Send("work", {"n": 0}) for _ in range(k)], ["work"])
    g.add_edge("work", "reduce")
    g.add_edge("reduce", END)
    return g, k + 2, 3


def loop_of_maps(rounds, k):
    # The nested shape: `rounds` times, one dispatcher sends k tasks to `work`, then
    # `reduce` loops back to the dispatcher until the rounds are done.
    class Rounds(TypedDict):
        n: Annotated[int, operator.add]
        r: Annotated[int, operator.add]

    g = StateGraph(Rounds)
    g.add_node("dispatch", step)
    g.add_node("work", step)
    g.add_node("reduce", lambda _s: {"r": 1})
    g.add_edge(START, "dispatch")
    g.add_conditional_edges("dispatch", lambda _s: [Send("work", {"n": 0}) for _ in range(k)], ["work"])
    g.add_edge("work", "reduce")
    g.add_conditional_edges("reduce", lambda s: "dispatch" if s["r"] < rounds else END, ["dispatch", END])
    return g, rounds * (k + 1), 3 * rounds


def build(shape):
    name, _, arg = shape.partition(":")
    if name == "chain":
        return chain(int(arg))
    if name == "layered":
        w, d = arg.split("x")
        return layered(int(w), int(d))
    if name == "tree":
        return tree(int(arg))
    if name in ("fanout", "map"):
        # weft's `map` node is LangGraph's `Send` fan-out.
        return fanout(int(arg))
    if name == "loopmap":
        r, k = arg.split("x")
        return loop_of_maps(int(r), int(k))
    if name == "payload":
        return chain(int(arg), grow, Growing)
    raise SystemExit(f"unknown shape {shape}")


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def peak_rss_kib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def written_bytes():
    """Bytes handed to write() so far (/proc/self/io wchar), as on the weft side."""
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("wchar:"):
                return int(line.split()[1])
    return 0


def db_bytes(path):
    return sum(os.path.getsize(path + s) for s in ("", "-wal", "-shm") if os.path.exists(path + s))


def med(xs):
    return statistics.median(xs) if xs else None


def saver_at(path):
    conn = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    return conn, saver


def run_case(shape, mode, reps, max_concurrency=None):
    g, nodes, steps = build(shape)
    tmp = tempfile.mkdtemp(prefix="lg-")
    atexit.register(shutil.rmtree, tmp, True)  # checkpoint databases reach hundreds of MB
    conn = saver = None
    if mode == "sqlite-sync":
        db = os.path.join(tmp, "ckpt.db")
        conn, saver = saver_at(db)
    elif mode != "none":
        raise SystemExit(f"unknown mode {mode}")
    app = g.compile(checkpointer=saver)
    walls, cpus, written = [], [], {}
    for rep in range(reps + 1):
        cfg = {"recursion_limit": steps + 10}
        if max_concurrency is not None:
            cfg["max_concurrency"] = max_concurrency
        if saver is not None:
            cfg["configurable"] = {"thread_id": f"t{rep}"}
        state = {"n": 0, "log": []} if shape.startswith("payload") else {"n": 0}
        before, w0 = (db_bytes(db), written_bytes()) if conn else (0, 0)
        c0, t0 = cpu_s(), time.perf_counter()
        kw = {"durability": "sync"} if saver is not None else {}
        out = app.invoke(state, cfg, **kw)
        wall, cpu = time.perf_counter() - t0, cpu_s() - c0
        if out["n"] != nodes:
            raise SystemExit(f"{shape}/{mode}: counter {out['n']} != {nodes}")
        if shape.startswith("payload") and len(out["log"]) != nodes:
            raise SystemExit(f"{shape}: {len(out['log'])} chunks")
        if conn is not None:
            conn.commit()
            growth = db_bytes(db) - before
            checkpoints = conn.execute(
                "select count(*) from checkpoints where thread_id = ?", (f"t{rep}",)).fetchone()[0]
            written = {
                "checkpoints_per_run": checkpoints,
                "file_growth_per_run": growth,
                "file_growth_per_step": round(growth / nodes, 1),
                "write_bytes_per_run": written_bytes() - w0,
                "write_bytes_per_step": round((written_bytes() - w0) / nodes, 1),
            }
        if rep > 0 or reps == 0:  # REPS=0: the warm-up only (the fsync-count run)
            walls.append(wall)
            cpus.append(cpu)
    wall, cpu = med(walls), med(cpus)
    out = {
        "case": f"{mode} {shape}", "nodes": nodes, "supersteps": steps, "runs": reps,
        "wall_ms": round(wall * 1e3, 3), "cpu_ms": round(cpu * 1e3, 3),
        "wall_us_per_node": round(wall * 1e6 / nodes, 3),
        "cpu_us_per_node": round(cpu * 1e6 / nodes, 3),
    }
    if written:
        out["written"] = written
    if shape.startswith("payload"):
        out["raw_bytes"] = nodes * len(CHUNK)
    return out


def resume_case(n, stop, reps):
    """Node `stop` fails on its first execution (the run stops there, its checkpoints
    durable); a fresh connection and saver then resume the thread with invoke(None)."""
    tmp = tempfile.mkdtemp(prefix="lg-resume-")
    atexit.register(shutil.rmtree, tmp, True)
    runs = {}
    first_new = {}
    failing = set()

    def body(name):
        def node(_s):
            runs[name] = runs.get(name, 0) + 1
            if name in failing:
                failing.discard(name)
                raise RuntimeError("simulated crash")
            if name == f"c{stop}":
                first_new.setdefault("t", time.perf_counter())
            return {"n": 1}
        return node

    def graph():
        g = StateGraph(Count)
        names = [f"c{i}" for i in range(n)]
        for name in names:
            g.add_node(name, body(name))
        sequence(g, names)
        return g

    g = graph()
    to_first, compile_ms, reruns = [], [], None
    for rep in range(reps + 1):
        db = os.path.join(tmp, f"r{rep}.db")
        conn, saver = saver_at(db)
        cfg = {"configurable": {"thread_id": "w7"}, "recursion_limit": n + 10}
        runs.clear()
        failing.add(f"c{stop}")
        try:
            g.compile(checkpointer=saver).invoke({"n": 0}, cfg, durability="sync")
            raise SystemExit("the simulated crash did not happen")
        except RuntimeError:
            pass
        conn.close()
        before = dict(runs)
        first_new.clear()
        t0 = time.perf_counter()
        conn, saver = saver_at(db)
        c0 = time.perf_counter()
        app = g.compile(checkpointer=saver)
        c1 = time.perf_counter()
        out = app.invoke(None, cfg, durability="sync")
        if out["n"] != n:
            raise SystemExit(f"resume: counter {out['n']} != {n}")
        conn.close()
        reruns = sum(1 for name, k in runs.items() if before.get(name) and k > before[name]
                     and name != f"c{stop}")
        if rep > 0:
            to_first.append(first_new["t"] - t0 - (c1 - c0))
            compile_ms.append((c1 - c0) * 1e3)
    return {
        "case": f"resume chain:{n} at {stop}", "nodes": n, "runs": reps,
        "to_first_step_wall_ms": round(med(to_first) * 1e3, 3),
        "compile_ms": round(med(compile_ms), 3),
        "completed_nodes_rerun": reruns,
    }


def barrier_case(reps):
    class Log(TypedDict):
        log: Annotated[list, operator.add]

    t0 = [0.0]
    stamp = lambda name: {"log": [(name, time.perf_counter() - t0[0])]}

    def fast(_s):
        time.sleep(0.05)
        return stamp("fast_done")

    def slow(_s):
        time.sleep(1.0)
        return stamp("slow_done")

    def after_fast(_s):
        return stamp("after_fast_start")

    g = StateGraph(Log)
    for name, f in (("fast", fast), ("slow", slow), ("after_fast", after_fast)):
        g.add_node(name, f)
    g.add_edge(START, "fast")
    g.add_edge(START, "slow")
    g.add_edge("fast", "after_fast")
    g.add_edge("after_fast", END)
    g.add_edge("slow", END)
    app = g.compile()
    rows = []
    for rep in range(reps + 1):
        t0[0] = time.perf_counter()
        log = dict(app.invoke({"log": []})["log"])
        wall = time.perf_counter() - t0[0]
        if rep > 0:
            rows.append((log["after_fast_start"], log["fast_done"], log["slow_done"], wall))
    col = lambda i: round(med([r[i] for r in rows]) * 1e3, 1)
    return {"case": "barrier", "runs": reps, "after_fast_start_ms": col(0),
            "fast_done_ms": col(1), "slow_done_ms": col(2), "wall_ms": col(3)}


def main(argv):
    reps = lambda i: int(argv[i]) if len(argv) > i else 5
    if argv[:1] == ["run"]:
        out = run_case(argv[1], argv[2], reps(3), int(argv[4]) if len(argv) > 4 else None)
        if len(argv) > 4:
            out["max_concurrency"] = int(argv[4])
    elif argv[:1] == ["resume"]:
        out = resume_case(int(argv[1]), int(argv[2]), reps(3))
    elif argv[:1] == ["barrier"]:
        out = barrier_case(reps(1))
    elif argv[:1] == ["versions"]:
        out = {p: version(p) for p in ("langgraph", "langgraph-checkpoint",
                                       "langgraph-checkpoint-sqlite", "langchain-core")}
        out["python"] = sys.version.split()[0]
        out["sqlite"] = sqlite3.sqlite_version
    else:
        raise SystemExit(__doc__)
    out["peak_rss_kib"] = peak_rss_kib()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
