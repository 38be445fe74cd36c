#!/usr/bin/env python3
"""The import edges between a crate's top-level modules, read from its source as text.

For every file under `src/` (test code left out: `#[cfg(test)]` items and their files), each
path that names a module of the crate — `use crate::{a, b::c}`, `crate::x::f` anywhere,
`super::`/`self::` resolved from the file's place, `pub use` alike, a name the crate root
re-exports (`crate::RunEvent` → `events`) — gives an edge from the file's top-level module to
the one it names. Items defined in the crate root itself (`lib.rs`/`main.rs`) are the node
`crate`. Comments and string literals are left out, so a doc link is not an import.

    module-edges.py CRATE_DIR            one line `from to file:line` per edge (first evidence)
    module-edges.py --cycles CRATE_DIR   every cycle (one per strongly connected component),
                                         each edge with its evidence; exit 1 when there is one

Used by scripts/check-module-cycles.sh (docs/ARCHITECTURE.md, "Layers inside a crate").
"""

import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip(text):
    """The text with comments and string/char literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif (m := re.compile(r'b?r(#*)"').match(text, i)) and (
            i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")
        ):
            close = '"' + m.group(1)
            j = text.find(close, m.end())
            j = n if j < 0 else j + len(close)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "'" and (m := re.compile(r"'(\\.[^']*|[^\\'\n])'").match(text, i)):
            out.append(" " * (m.end() - i))
            i = m.end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching_brace(code, open_at):
    depth = 0
    for j in range(open_at, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code) - 1


CFG_TEST = re.compile(r"#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]")


def drop_test_code(code):
    """Blanks `#[cfg(test)]` items; returns the code and the names of `#[cfg(test)] mod x;`."""
    test_files = []
    while m := CFG_TEST.search(code):
        j = m.end()
        # Further attributes, then the item: up to its `;` or its balanced `{ }`.
        semi = code.find(";", j)
        brace = code.find("{", j)
        if brace < 0 or (0 <= semi < brace):
            end = semi if semi >= 0 else len(code) - 1
            if mm := re.search(r"\bmod\s+(" + IDENT + r")\s*$", code[j:end]):
                test_files.append(mm.group(1))
        else:
            end = matching_brace(code, brace)
        code = code[: m.start()] + re.sub(r"[^\n]", " ", code[m.start() : end + 1]) + code[end + 1 :]
    return code, test_files


def expand_use(tree):
    """`a::{b, c::{d as x, e}}` → ['a::b', 'a::c::d@x', 'a::c::e'] (an alias after `@`)."""
    tree = re.sub(r"\s+", "", re.sub(r"\s+as\s+", "@", tree))
    out = []

    def walk(prefix, s):
        depth, start, parts = 0, 0, []
        for k, ch in enumerate(s):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                parts.append(s[start:k])
                start = k + 1
        parts.append(s[start:])
        for p in parts:
            if not p:
                continue
            if "{" in p:
                head = p[: p.index("{")]
                walk(prefix + head, p[p.index("{") + 1 : p.rindex("}")])
            else:
                out.append(prefix + p)

    walk("", tree)
    return [re.sub(r"(::\*|::self)$", "", p) for p in out]


USE = re.compile(r"\buse\s+([^;]+);")
PATH = re.compile(r"(?<![\w$:])((?:crate|self|super)(?:::" + IDENT + r")+)")
INLINE_MOD = re.compile(r"\bmod\s+(" + IDENT + r")\s*\{")
MOD_DECL = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*[;{]", re.M)


def crate_files(crate):
    src = os.path.join(crate, "src")
    root = next((os.path.join(src, f) for f in ("lib.rs", "main.rs") if os.path.exists(os.path.join(src, f))), None)
    if root is None:
        return None, []
    files = []
    for dirpath, dirnames, filenames in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        if rel == "bin" or rel.startswith("bin" + os.sep):
            continue  # separate binaries, each a crate of its own
        dirnames.sort()
        for f in sorted(filenames):
            if f.endswith(".rs"):
                files.append(os.path.join(dirpath, f))
    return root, files


def module_path(src, path):
    rel = os.path.relpath(path, src)[: -len(".rs")].split(os.sep)
    if rel[-1] == "mod" or rel in (["lib"], ["main"]):
        rel = rel[:-1]
    return rel


def edges_of(crate):
    src = os.path.join(crate, "src")
    root, files = crate_files(crate)
    if root is None:
        return {}, set()
    root_code, root_tests = drop_test_code(strip(open(root, encoding="utf-8").read()))
    modules = set(MOD_DECL.findall(root_code))
    # Names the root re-exports from a module: `pub use m::{A, b::C}` → A, C ↦ m.
    reexports = {}
    depth_at = [0] * (len(root_code) + 1)
    d = 0
    for k, ch in enumerate(root_code):
        depth_at[k] = d
        d += (ch == "{") - (ch == "}")
    for m in re.finditer(r"\bpub\s+use\s+([^;]+);", root_code):
        if depth_at[m.start()] != 0:
            continue
        for p in expand_use(m.group(1)):
            name, _, alias = p.partition("@")
            segs = [s for s in name.split("::") if s not in ("crate", "self")]
            if len(segs) >= 2 and segs[0] in modules:
                reexports[alias or segs[-1]] = segs[0]
    # Every file's code without its test items; the files of `#[cfg(test)] mod x;` go too.
    sources, test_mods = {}, [[name] for name in root_tests]
    for path in files:
        mpath = module_path(src, path)
        if path == root:
            sources[path] = root_code
        elif mpath and mpath[0] in modules:
            sources[path], tests = drop_test_code(strip(open(path, encoding="utf-8").read()))
            test_mods += [mpath + [name] for name in tests]
    edges = {}  # (from, to) -> "file:line"
    for path, code in sources.items():
        mpath = module_path(src, path)
        if any(mpath[: len(t)] == t for t in test_mods):
            continue
        inline = []
        for m in INLINE_MOD.finditer(code):
            inline.append((m.start(), matching_brace(code, m.end() - 1), m.group(1)))
        lines = [0] + [k for k, ch in enumerate(code) if ch == "\n"]

        def line_of(offset):
            lo, hi = 0, len(lines)
            while lo + 1 < hi:
                mid = (lo + hi) // 2
                if lines[mid] < offset:
                    lo = mid
                else:
                    hi = mid
            return lo + 1

        def here(offset):
            return mpath + [name for (a, b, name) in inline if a < offset <= b]

        def resolve(segs, at):
            """The top-level module a path names, `crate` for the root's own items, or None."""
            if segs[0] == "crate":
                rest = segs[1:]
            elif segs[0] == "self":
                rest = here(at) + segs[1:]
            elif segs[0] == "super":
                base = here(at)
                k = 0
                while k < len(segs) and segs[k] == "super":
                    k += 1
                if k > len(base):
                    return None
                rest = base[: len(base) - k] + segs[k:]
            else:
                return None
            if not rest:
                return None
            if rest[0] in modules:
                return rest[0]
            if rest[0] in reexports:
                return reexports[rest[0]]
            return "crate"

        found = []
        for m in USE.finditer(code):
            for p in expand_use(m.group(1)):
                segs = [s for s in p.partition("@")[0].split("::") if s]
                if segs and segs[0] in ("crate", "self", "super"):
                    found.append((segs, m.start()))
        for m in PATH.finditer(code):
            found.append((m.group(1).split("::"), m.start()))
        if path == root:
            # At the root a module is named without `crate::` (`run::run_owned`), and a name
            # it re-exports is used bare (`run_owned(...)`); the re-exports themselves are
            # its facade, not a use.
            body = re.sub(r"\bpub\s+use\s+[^;]+;", lambda m: re.sub(r"[^\n]", " ", m.group(0)), code)
            for m in re.finditer(r"(?<![\w$:])(" + IDENT + r")\b(::)?", body):
                name, is_path = m.group(1), m.group(2)
                if is_path and name in modules:
                    found.append((["crate", name], m.start()))
                elif name in reexports:
                    found.append((["crate", name], m.start()))
        for segs, at in found:
            frm = here(at)
            frm = frm[0] if frm else "crate"
            to = resolve(segs, at)
            if to is None or to == frm:
                continue
            if frm == "crate" and path == root and re.match(r"\s*pub\s+use\b", code[code.rfind("\n", 0, at) + 1 :]):
                continue  # the root's re-exports are its facade, not a use
            edges.setdefault((frm, to), f"{os.path.relpath(path)}:{line_of(at)}")
    return edges, modules


def cycles(edges):
    """One cycle for every strongly connected component of more than one module (Tarjan)."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, []).append(b)
        graph.setdefault(b, [])
    for v in graph:
        graph[v].sort()
    index, low, stack, on, comps = {}, {}, [], set(), []

    def connect(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            connect(v)
    found = []
    for comp in comps:
        members = set(comp)
        # The shortest cycle through the component's first module (breadth-first).
        start = comp[0]
        prev, queue = {start: None}, [start]
        cycle = None
        while queue and cycle is None:
            nxt = []
            for v in queue:
                for w in graph[v]:
                    if w not in members:
                        continue
                    if w == start:
                        path = [v]
                        while prev[path[-1]] is not None:
                            path.append(prev[path[-1]])
                        cycle = list(reversed(path)) + [start]
                        break
                    if w not in prev:
                        prev[w] = v
                        nxt.append(w)
                if cycle:
                    break
            queue = nxt
        found.append((comp, cycle))
    return found


def main(argv):
    want_cycles = "--cycles" in argv
    crates = [a for a in argv if not a.startswith("--")]
    if len(crates) != 1:
        sys.exit("usage: module-edges.py [--cycles] CRATE_DIR")
    edges, _ = edges_of(crates[0])
    if not want_cycles:
        for (a, b), at in sorted(edges.items()):
            print(a, b, at)
        return 0
    status = 0
    for comp, cycle in cycles(edges):
        status = 1
        print(f"{crates[0]}: modules {', '.join(comp)} import each other in a circle:")
        for a, b in zip(cycle, cycle[1:]):
            print(f"  {a} -> {b}  ({edges[(a, b)]})")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
