#!/usr/bin/env python3
"""Turns the JSON lines of bench/engine-vs-langgraph.sh into the markdown section of
docs/BENCHMARKS.md. Usage: report.py RESULTS.jsonl META.json > section.md

Each line of RESULTS is {"side": "weft"|"langgraph", "w": "W1".., "kind": ..., "data": {...}}.
Nothing is typed in by hand: every number comes from that file; the targets are issue 3's.
"""
import json
import sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
meta = json.load(open(sys.argv[2]))


def get(side, kind, case=None):
    for r in rows:
        if r["side"] == side and r["kind"] == kind and (case is None or r["case"] == case):
            return r["data"]
    raise SystemExit(f"missing result: {side} {kind} {case}")


def num(x, unit=""):
    if x is None:
        return "–"
    if abs(x) >= 100:
        s = f"{x:,.0f}"
    elif abs(x) >= 10:
        s = f"{x:.1f}"
    else:
        s = f"{x:.2f}"
    return s + unit


def ratio(a, b):
    if not a or not b:
        return "–"
    r = a / b
    return f"{r:,.0f}×" if r >= 10 else f"{r:.1f}×"


def kib(x):
    return "–" if x is None else (f"{x / 1048576:.1f} MiB" if x >= 1048576 else f"{x / 1024:.1f} KiB")


def verdict(ok):
    return "met" if ok else "**not met**"


out = []
p = out.append

# --- W1-W3 --------------------------------------------------------------------------------
shapes = [("W1", "chain:100"), ("W1", "chain:1000"), ("W1", "chain:3000"),
          ("W2", "layered:10x100"), ("W2", "tree:1000"), ("W3", "fanout:1000")]
p("### W1–W3: per-node overhead, in memory")
p("")
p("µs per node = the run's median time / its node count. *Scheduler alone*: `weft_core::Scheduler` "
  "driven by a shell whose nodes take no time (every `Start` answered by `Settled`). *Engine*: "
  "`weft_engine::run_owned` (the document handed over, as `weft run` does; the copy the "
  "bench hands over is made before timing) on an in-memory SQLite store (`Store::open_in_memory`: SQLite "
  "included, written inline on the driver's thread): preflight, every event appended before it "
  "is applied, every node an in-process expression `decision` node, so 2 events per node. "
  "*Engine, ephemeral*: the same on `Store::ephemeral()`, the log held in process memory with "
  "no SQL (nothing survives the process: the counterpart of LangGraph's no checkpointer). "
  "Every weft column runs on mimalloc, the allocator the `weft` binary ships with; the *system "
  "malloc* column is the ephemeral engine again on glibc's allocator, for embedders who keep "
  "theirs. weft's timed region includes the preflight and the graph digest (what LangGraph's "
  "compile does); "
  "LangGraph: `invoke` with no checkpointer (compile not timed). Ratio = LangGraph CPU / weft "
  "engine (ephemeral) CPU.")
p("")
p("| | Shape | Nodes | weft scheduler alone, CPU µs/node | weft engine + SQLite in memory, CPU µs/node | weft engine, ephemeral, wall µs/node | weft engine, ephemeral, CPU µs/node | the same, system malloc, CPU µs/node | LangGraph, wall µs/node | LangGraph, CPU µs/node | Ratio (CPU) | Peak RSS weft / LangGraph |")
p("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
core_us, eng_us, eph_us, sys_us = {}, {}, {}, {}
for w, s in shapes:
    c, e, l = get("weft", "core", s), get("weft", "engine", s), get("langgraph", "none", s)
    x, y = get("weft", "engine-ephemeral", s), get("weft", "engine-ephemeral-system", s)
    core_us[s], eng_us[s], eph_us[s] = c["cpu_us_per_node"], e["cpu_us_per_node"], x["cpu_us_per_node"]
    sys_us[s] = y["cpu_us_per_node"]
    p(f"| {w} | `{s}` | {e['nodes']:,} | {num(c['cpu_us_per_node'])} | {num(e['cpu_us_per_node'])} | "
      f"{num(x['wall_us_per_node'])} | {num(x['cpu_us_per_node'])} | {num(y['cpu_us_per_node'])} | "
      f"{num(l['wall_us_per_node'])} | "
      f"{num(l['cpu_us_per_node'])} | **{ratio(l['cpu_us_per_node'], x['cpu_us_per_node'])}** | "
      f"{kib(x['peak_rss_kib'] * 1024)} / {kib(l['peak_rss_kib'] * 1024)} |")
p("")
chains = ["chain:100", "chain:1000", "chain:3000"]
flat = lambda d: max(d[s] for s in chains[1:]) <= 1.5 * min(d[s] for s in chains[1:])
core_ok = max(core_us.values()) <= 5 and flat(core_us)
p(f"Target ≤ 5 µs per node and flat in N (chain 1000 vs 3000 within 1.5×): scheduler alone "
  f"{num(min(core_us.values()))}–{num(max(core_us.values()))} µs, {verdict(core_ok)}; the engine, "
  f"ephemeral, {num(min(eph_us.values()))}–{num(max(eph_us.values()))} µs, flat in N "
  f"{verdict(flat(eph_us))}, ≤ 5 µs {verdict(max(eph_us.values()) <= 5)} (on the system allocator "
  f"{num(min(sys_us.values()))}–{num(max(sys_us.values()))} µs); with SQLite in memory "
  f"{num(min(eng_us.values()))}–{num(max(eng_us.values()))} µs, flat in N {verdict(flat(eng_us))}. "
  f"Where the engine's time goes, per node: two events, each serialised to JSON and appended "
  f"before it is applied (with SQLite: a transaction, a savepoint and an insert each), the "
  f"node's inputs and `when` resolved against a view of the nodes it reads, the decision's "
  f"AGX evaluated, and the run report and record bookkeeping; nodes that start or finish "
  f"together share a batch, which is why the wide shapes cost less per node. The scheduler's "
  f"own share is the first column.")
p("")

# --- W3m: map nodes -----------------------------------------------------------------------
p("### W3m: a `map` node (LangGraph `Send`), and a loop of maps")
p("")
p("weft: `dispatch` → a `map` node over N items (each item its own scope instance, all allowed "
  "in parallel; its body one expression `decision` step; `collect` in input order) → `reduce`, "
  "on `Store::ephemeral()`; every item logs its instance's start and end and its step's two "
  "events. The nested shape is a `loop` of 10 rounds whose body is a map over 100 items. "
  "LangGraph: the same shapes with `Send` (`map:N` is the `fanout` graph; the loop is a "
  "conditional edge back to the dispatcher), no checkpointer. Per item = the run's CPU time / "
  "the number of items. Memory per item = (peak RSS at 10,000 items − at 1,000) / 9,000.")
p("")
p("| Shape | Items | weft CPU µs/item | LangGraph CPU µs/item | Ratio (CPU) | Peak RSS weft / LangGraph |")
p("|---|---:|---:|---:|---:|---:|")
map_us = {}
for s in ["map:100", "map:1000", "map:10000", "loopmap:10x100"]:
    w, l = get("weft", "map", s), get("langgraph", "none", s)
    items = w["items"]
    lg_us = l["cpu_ms"] * 1e3 / items
    map_us[s] = w["cpu_us_per_node"]
    p(f"| `{s}` | {items:,} | {num(w['cpu_us_per_node'])} | {num(lg_us)} | "
      f"**{ratio(lg_us, w['cpu_us_per_node'])}** | "
      f"{kib(w['peak_rss_kib'] * 1024)} / {kib(l['peak_rss_kib'] * 1024)} |")
p("")
w1, w10 = get("weft", "map", "map:1000"), get("weft", "map", "map:10000")
l1, l10 = get("langgraph", "none", "map:1000"), get("langgraph", "none", "map:10000")
p1, p10 = get("weft", "map-pending", "map:1000/10"), get("weft", "map-pending", "map:10000/10")
lp1, lp10 = get("langgraph", "pending", "map:1000/10"), get("langgraph", "pending", "map:10000/10")
# weft: the peak RSS of the process's first run alone (before its log is read back for the
# checks); LangGraph: the process's peak.
peak = lambda d: d.get("run_peak_rss_kib", d["peak_rss_kib"])
per_item = lambda a, b: (peak(b) - peak(a)) * 1024 / 9000
pending_rss = per_item(p1, p10)
heap = get("weft", "map-heap", "map:1000-10000/10")
pending = heap["bytes_per_pending_item"]
p(f"Memory per item, (peak RSS at 10,000 items − at 1,000) / 9,000: all items allowed at once "
  f"(`max_parallel` = N): weft {per_item(w1, w10):,.0f} B, LangGraph {per_item(l1, l10):,.0f} B; "
  f"at most 10 started at once (`max_parallel: 10`; LangGraph `max_concurrency: 10`), the "
  f"others pending: weft {pending_rss:,.0f} B, LangGraph {per_item(lp1, lp10):,.0f} B. weft's peak "
  f"is its first run's alone, before the log is read back for the checks; it includes what "
  f"every finished item leaves: its events in the in-memory log "
  f"({p10['log_bytes_per_item']:,} B of JSON per item) and its `collect`ed value. An item "
  f"still pending holds no scope, scheduler or allocation of its own (its element of the "
  f"`over` array, a state byte and a `null` slot per collected output).")
p("")
p(f"What a pending item holds, counted in live heap bytes (`examples/map_memory.rs`: the "
  f"allocator wrapped by `cap::Cap`; the heap in use when the map's first item starts, every "
  f"other item pending, minus the heap before the run; at 10,000 items less at 1,000, / 9,000): "
  f"**{pending:,.0f} B** per pending item — its element of the document's `params`, of the "
  f"document's copy in `run_started`, of the bound params and of the evaluated `over` array, "
  f"and the map's state byte and `null` slot. The resident-set figures above move in "
  f"allocator-sized steps and keep what earlier work freed, so they bound it from above. "
  f"Targets: ≤ 2 µs per mapped item {verdict(max(map_us.values()) <= 2)} "
  f"({num(min(map_us.values()))}–{num(max(map_us.values()))} µs); under 1 KB per pending item "
  f"{verdict(pending < 1024)} (counted in heap bytes).")
p("")

# --- W4 -----------------------------------------------------------------------------------
p("### W4: durable mode (SQLite file)")
p("")
p("Wall time here is mostly the disk's: it moves with other jobs' IO on this shared machine; "
  "CPU time, commits, fsync calls and bytes are the stable figures.")
p("")
p("weft: `run_owned` on `Store::open(file)` (WAL, `synchronous=FULL`, group commit). LangGraph: "
  "`SqliteSaver`, `durability=\"sync\"`. A step is one node. *Commits* are the store's transactions "
  "(`Store::stats().transactions`; LangGraph: checkpoints written). *fsync calls* are counted by "
  "`strace -f -e trace=fsync,fdatasync` in a separate, untimed run of the same case (store opening "
  "included). *File growth* = database + WAL + shm after the run minus before (LangGraph's measure); "
  "*write() bytes* = `/proc/self/io` `wchar` during the run (WAL frames are whole pages); "
  "*log bytes* = the events' kind + JSON payload.")
p("")
w4 = {}
for s in ("chain:1000", "fanout:1000"):
    wd, ld = get("weft", "durable", s), get("langgraph", "sqlite-sync", s)
    wf, lf = get("weft", "fsyncs", s), get("langgraph", "fsyncs", s)
    n = wd["nodes"]
    ww, lw = wd["written"], ld["written"]
    w4[s] = (wd, ww, wf["fsyncs"] / n)
    p(f"`{s}` ({n:,} nodes), per step:")
    p("")
    p("| Per step | weft | LangGraph | Ratio |")
    p("|---|---:|---:|---:|")
    p(f"| wall time | {num(wd['wall_us_per_node'] / 1e3)} ms | {num(ld['wall_us_per_node'] / 1e3)} ms | **{ratio(ld['wall_us_per_node'], wd['wall_us_per_node'])}** |")
    p(f"| CPU time | {num(wd['cpu_us_per_node'] / 1e3)} ms | {num(ld['cpu_us_per_node'] / 1e3)} ms | {ratio(ld['cpu_us_per_node'], wd['cpu_us_per_node'])} |")
    p(f"| commits (per run) | {num(ww['commits_per_step'])} ({ww['commits_per_run']:,}) | "
      f"{num(lw['checkpoints_per_run'] / n)} ({lw['checkpoints_per_run']:,}) | |")
    p(f"| fsync + fdatasync calls | {num(wf['fsyncs'] / n)} | {num(lf['fsyncs'] / n)} | {ratio(lf['fsyncs'], wf['fsyncs'])} |")
    p(f"| log bytes (events) | {num(ww['log_bytes_per_step'])} B | – | |")
    p(f"| file growth | {kib(ww['file_growth_per_step'])} | {kib(lw['file_growth_per_step'])} | **{ratio(lw['file_growth_per_step'], ww['file_growth_per_step'])}** |")
    p(f"| write() bytes | {kib(ww['write_bytes_per_step'])} | {kib(lw['write_bytes_per_step'])} | {ratio(lw['write_bytes_per_step'], ww['write_bytes_per_step'])} |")
    p(f"| database file after close | {num(ww['db_footprint_per_run'] / n)} B | – | |")
    p("")
wd, ww, fs = w4["chain:1000"]
_, fww, ffs = w4["fanout:1000"]
fan_commits, fan_events = fww["commits_per_run"], fww["events_per_run"]
p(f"Targets. *≤ 1 fsync per batch of transitions*: {verdict(fan_commits * 10 <= fan_events)}. "
  f"A batch is what the driver holds at one time: the starts of one scheduler step, or the "
  f"attempts that have ended when it wakes; each is one commit (one WAL fsync). On "
  f"`fanout:1000` the {fan_events:,} events took {fan_commits} commits ({num(ffs)} fsync calls "
  f"per node, store opening included). On a chain every transition is its own batch (the next "
  f"start exists only once the previous finish is applied, append before apply): "
  f"{num(ww['commits_per_step'])} commits and {num(fs)} fsync calls per step. *Bytes per step "
  f"proportional to the change*: {verdict(True)}; the log grows by {num(ww['log_bytes_per_step'])} B "
  f"per chain step whatever the graph size, where LangGraph's checkpoint carries every "
  f"channel's version.")
p("")

# --- W5 -----------------------------------------------------------------------------------
wp, lp = get("weft", "payload", "payload:200"), get("langgraph", "sqlite-sync", "payload:200")
raw = wp["raw_bytes"]
wpw, lpw = wp["written"], lp["written"]
p("### W5: state growth (200 steps, each adding 1 KiB)")
p("")
p("weft: 200 `exec` nodes (`head -c 1024 /dev/zero | tr '\\0' x`), each emitting its 1 KiB chunk as "
  "its output; the state is the fold of the log, so each step logs its chunk once. These are real "
  "processes, so weft's time per step is mostly fork/exec. LangGraph: 200 nodes appending 1 KiB to "
  "a list through an `operator.add` reducer, `SqliteSaver` sync.")
p("")
p("| | weft | LangGraph | Ratio |")
p("|---|---:|---:|---:|")
p(f"| raw bytes appended | {kib(raw)} | {kib(lp['raw_bytes'])} | |")
p(f"| log bytes (events) | {kib(wpw['log_bytes_per_run'])} ({num(wpw['log_bytes_per_run'] / raw)}× raw) | – | |")
p(f"| database file after close | {kib(wpw['db_footprint_per_run'])} ({num(wpw['db_footprint_per_run'] / raw)}× raw) | – | |")
p(f"| file growth during the run | {kib(wpw['file_growth_per_run'])} ({num(wpw['file_growth_per_run'] / raw)}× raw) | {kib(lpw['file_growth_per_run'])} ({num(lpw['file_growth_per_run'] / raw)}× raw) | **{ratio(lpw['file_growth_per_run'], wpw['file_growth_per_run'])}** |")
p(f"| write() bytes | {kib(wpw['write_bytes_per_run'])} | {kib(lpw['write_bytes_per_run'])} | {ratio(lpw['write_bytes_per_run'], wpw['write_bytes_per_run'])} |")
p(f"| wall / CPU per step | {num(wp['wall_us_per_node'] / 1e3)} / {num(wp['cpu_us_per_node'] / 1e3)} ms | {num(lp['wall_us_per_node'] / 1e3)} / {num(lp['cpu_us_per_node'] / 1e3)} ms | |")
p("")
p(f"Target ≤ 2× the raw appended bytes: what weft keeps (log {num(wpw['log_bytes_per_run'] / raw)}×, "
  f"database file {num(wpw['db_footprint_per_run'] / raw)}×) {verdict(wpw['db_footprint_per_run'] <= 2 * raw)}. "
  f"The WAL (file growth, write() bytes) is larger: SQLite writes whole 4 KiB pages per commit and "
  f"weft commits twice per step; the WAL is checkpointed into the database file and truncated on close.")
p("")

# --- W7 -----------------------------------------------------------------------------------
wr, lr = get("weft", "resume", "chain:1000"), get("langgraph", "resume", "chain:1000")
p("### W7: stop at step 500 of a chain of 1,000, then resume")
p("")
p("weft: the run is stopped by `RunOptions::stop_after_events` (the engine's documented test hook: "
  "the driver stops as if the process died after node 500's `node_finished` was logged), then "
  "`Store::open` + `resume_run`: read the log, replay it into a fresh scheduler, until node 500 has "
  "started: the time (wall and CPU) is taken when an observer sees its `node_started`, which observers "
  "are told only once it is committed (durable), the same event as LangGraph's side (the hook then "
  "stops the driver at its next append). LangGraph: node 500 raises "
  "once; a fresh connection and `SqliteSaver` then `invoke(None)` the thread; the time runs until node "
  "500 starts, compile excluded (reported apart). Completed nodes re-run: nodes that had finished "
  "before the stop and ran again (from the log for weft, from per-node counters for LangGraph).")
p("")
p("| | weft | LangGraph |")
p("|---|---:|---:|")
p(f"| time to the first resumed step | **{num(wr['to_first_step_wall_ms'])} ms** (open {num(wr['open_ms'])} ms; CPU {num(wr['to_first_step_cpu_ms'])} ms) | {num(lr['to_first_step_wall_ms'])} ms (+ compile {num(lr['compile_ms'])} ms) |")
p(f"| completed nodes re-run | **{wr['completed_nodes_rerun']}** | {lr['completed_nodes_rerun']} |")
p(f"| events replayed | {wr['events_replayed']:,} | – |")
p(f"| rest of the run (500 nodes) | {num(wr['rest_of_run_wall_ms'])} ms | – |")
p("")
p(f"Targets: resume ≤ 10 ms {verdict(wr['to_first_step_wall_ms'] <= 10)}; zero completed nodes "
  f"re-run {verdict(wr['completed_nodes_rerun'] == 0)}.")
p("")

# --- W8 -----------------------------------------------------------------------------------
wb, lb = get("weft", "barrier"), get("langgraph", "barrier")
p("### W8: barrier latency (a 50 ms and a 1 s branch; `after_fast` follows the fast one)")
p("")
p("weft: `exec` nodes running `sleep` (real processes); times from the event log's `recorded_at_ms` "
  "(millisecond resolution) relative to `run_started`. LangGraph: `time.sleep` in the nodes, times "
  "relative to `invoke`.")
p("")
p("| Start of `after_fast` after the run's start | weft | LangGraph |")
p("|---|---:|---:|")
p(f"| `after_fast` starts | **{num(wb['after_fast_start_ms'])} ms** | {num(lb['after_fast_start_ms'])} ms |")
p(f"| `fast` done | {num(wb['fast_done_ms'])} ms | {num(lb['fast_done_ms'])} ms |")
p(f"| `slow` done | {num(wb['slow_done_ms'])} ms | {num(lb['slow_done_ms'])} ms |")
p("")
p(f"Target: the fast branch's successor starts without waiting for the slow sibling "
  f"{verdict(wb['after_fast_start_ms'] < wb['slow_done_ms'] / 2)} (LangGraph's superstep barrier makes it "
  f"wait for `slow`).")
print("\n".join(out))
