#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check_layout.py SOURCE_DIR

Does the code keep the layout docs/architecture.md draws? Two checks over the C sources, read as
text (nothing is built):

1. Folders: each file includes only from the folders (or, for the few exceptions, the files) that
   the table "Who includes whom" in docs/architecture.md allows its folder. An include of
   "folder/file.h" names the folder; an include of a folder the table does not list is an error too.
   The table itself admits no loop of folders (a row's exception file counts for its folder), so
   no include circle can cross two folders.
2. Circles: no two files of any folder of the code (the tool's, the library's and those both
   share) call each other, straight or around a loop, inside a folder or across folders. A file
   and its header are one module (cli/ranks.c + cli/ranks.h); a module calls another when its
   function bodies call a function that the other alone defines (not static: a .c file's own, or
   an inline one in a header). Types shared through a header are no call. The files that include a
   module's inside, X_impl.h, are parts of module X (memviz/emit_impl.h: the emitter's writers and
   cache). A circle of ALLOWED_CIRCLES may stay while it only shrinks: one found with a module that
   its entry does not list is a break, and so is an entry that no circle needs any more.
3. Licence: every source file of the project (C, C++, CUDA, assembler and X-macro files, linker
   maps, CMake, shell, Python and JavaScript, scripts without a suffix that start with #!) says
   "SPDX-License-Identifier: Apache-2.0" on its first line, or on the line after its #! line (and a
   Python encoding line). Test data, golden outputs, fixtures, the report page's assets (built into
   the tool as they are) and build trees are not source.

Prints every break, one a line, and exits 1 when there is one; exits 0 silently otherwise."""
import os, re, sys

CODE_FOLDERS = ["cli", "export", "report", "analysis", "reader", "model", "interpose", "api", "process",
                "publish", "device", "real", "phases", "snapshot", "allocator", "record", "stats", "live",
                "memviz", "common", "include"]
CIRCLE_FOLDERS = CODE_FOLDERS
# Circles that were there when this check came to cover a folder, each as the modules it held:
# allowed to shrink, never to grow, and to be struck from here once gone. None is left: issue 47
# untied interpose/'s three and snapshot/'s (snapshot, snap_pools, snap_summary).
ALLOWED_CIRCLES = []
SOURCE_EXT = (".c", ".h", ".def")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
LEXEMES = re.compile(r"""/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'""", re.S)
IDENT = re.compile(r"[A-Za-z_]\w*")
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "do", "else", "case", "_Alignof",
            "_Static_assert", "_Generic", "defined", "__attribute__", "typeof", "__typeof__"}


def rules(source):
    """{folder: set of allowed folders or 'folder/file' paths}, from docs/architecture.md."""
    text = open(os.path.join(source, "docs", "architecture.md"), encoding="utf-8").read()
    m = re.search(r"Who includes whom.*?```\n(.*?)```", text, re.S)
    if m is None:
        sys.exit("docs/architecture.md: no table \"Who includes whom\" in a ``` block")
    table = {}
    for line in m.group(1).splitlines():
        words = line.split()
        if not words:
            continue
        folder = words[0].rstrip("/")
        table[folder] = {w.rstrip("/") for w in words[1:] if w != "-"}
    return table


def check_table(table):
    """The folders' rows, read as arrows from each folder to those it may include, form no loop."""
    arrows = {f: {t.split("/")[0] for t in allowed} - {f} for f, allowed in table.items()}
    errors, state = [], {}

    def visit(f, path):
        state[f] = "open"
        for t in sorted(arrows.get(f, ())):
            if state.get(t) == "open":
                loop = path[path.index(t):] + [t]
                errors.append("docs/architecture.md's \"Who includes whom\" has a loop of folders: " +
                              " -> ".join(x + "/" for x in loop))
            elif t not in state:
                visit(t, path + [t])
        state[f] = "done"

    for f in sorted(arrows):
        if f not in state:
            visit(f, [f])
    return errors


def sources(source, folders):
    for folder in folders:
        top = os.path.join(source, folder)
        for root, _, files in os.walk(top):
            for name in sorted(files):
                if name.endswith(SOURCE_EXT):
                    path = os.path.join(root, name)
                    yield os.path.relpath(path, source), open(path, encoding="utf-8", errors="replace").read()


def check_includes(source, table):
    errors = []
    for path, text in sources(source, CODE_FOLDERS):
        folder = path.split(os.sep)[0]
        allowed = table.get(folder)
        if allowed is None:
            errors.append(f"{path}: its folder {folder}/ has no row in docs/architecture.md's \"Who includes whom\"")
            continue
        for inc in INCLUDE.findall(text):
            if "/" not in inc:
                continue  # a file of the same folder (or a generated one beside it)
            target = inc.split("/")[0]
            if target == folder or target not in CODE_FOLDERS:
                continue
            if target in allowed or os.path.splitext(inc)[0] in allowed or inc in allowed:
                continue
            errors.append(f"{path}: includes \"{inc}\": {folder}/ may not include from {target}/ "
                          "(docs/architecture.md, \"Who includes whom\")")
    return errors


def strip(text):
    """Comments, strings, characters and preprocessor lines blanked (newlines kept)."""
    def blank(m):
        t = m.group(0)
        if t.startswith("/*"):
            return re.sub(r"[^\n]", " ", t)
        return "" if t.startswith("//") else t[0] * 2  # "" or ''
    text = LEXEMES.sub(blank, text)  # one pass: a "/*" in a string is no comment, nor "x" in one
    text = re.sub(r"^[ \t]*#(.*\\\n)*.*$", "", text, flags=re.M)
    return text


def functions(text):
    """[(name, is_static, body)] of the functions defined at file scope."""
    out = []
    depth, start, i, n = 0, 0, 0, len(text)
    while i < n:
        c = text[i]
        if c == "{":
            if depth == 0:
                head = text[start:i]
                body_start = i
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                start = i + 1
                head_s = head.strip()
                if head_s.endswith(")") and "=" not in head_s and not re.match(r"(typedef|struct|union|enum)\b", head_s):
                    close = len(head_s) - 1
                    level, j = 0, close
                    while j >= 0:  # the parameter list's '('
                        if head_s[j] == ")":
                            level += 1
                        elif head_s[j] == "(":
                            level -= 1
                            if level == 0:
                                break
                        j -= 1
                    names = IDENT.findall(head_s[:j])
                    if names:
                        out.append((names[-1], bool(re.search(r"\bstatic\b", head_s[:j])), text[body_start:i + 1]))
        elif c == ";" and depth == 0:
            start = i + 1
        i += 1
    return out


def module_of(path, text):
    """folder/name for folder/name.c and .h; X for the files that include X_impl.h."""
    for inc in INCLUDE.findall(text):
        if inc.endswith("_impl.h"):
            return inc[: -len("_impl.h")]
    module = os.path.splitext(path)[0]
    return module[: -len("_impl")] if module.endswith("_impl") else module


def check_circles(source):
    defined = {}  # name -> set of modules that define it, not static
    bodies = {}   # module -> [(function body, its file's static names)]
    files = list(sources(source, CIRCLE_FOLDERS))
    own_module = {}  # folder/name -> its module: X where name.c or name.h includes X_impl.h
    for path, text in files:
        stem, module = os.path.splitext(path)[0], module_of(path, text)
        if own_module.get(stem, stem) == stem:
            own_module[stem] = module
    for path, text in files:
        module = own_module[os.path.splitext(path)[0]]  # a header goes with its .c file
        fns = functions(strip(text))
        own_static = {name for name, static, _ in fns if static and path.endswith(".c")}
        for name, static, body in fns:
            if not static or path.endswith(".h"):
                defined.setdefault(name, set()).add(module)
            bodies.setdefault(module, []).append((body, own_static))
    calls = {}  # module -> {module: names}
    for module, items in bodies.items():
        for body, own_static in items:
            for m in re.finditer(r"([A-Za-z_]\w*)\s*\(", body):
                name = m.group(1)
                if name in KEYWORDS or name in own_static:
                    continue
                owners = defined.get(name, set())
                if len(owners) == 1 and module not in owners:
                    calls.setdefault(module, {}).setdefault(next(iter(owners)), set()).add(name)
    # Tarjan's strongly connected components
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in calls.get(v, {}):
            if w not in index:
                visit(w)
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
    for v in sorted(bodies):
        if v not in index:
            visit(v)
    errors = []
    needed = set()
    for comp in comps:
        allowed = [i for i, a in enumerate(ALLOWED_CIRCLES) if set(comp) <= set(a)]
        if allowed:
            needed.update(allowed)
            continue
        ties = "; ".join(f"{a} calls {b}: {', '.join(sorted(calls[a][b]))}"
                         for a in comp for b in sorted(calls.get(a, {})) if b in comp)
        errors.append(f"circle: {' <-> '.join(comp)} ({ties})")
    for i, a in enumerate(ALLOWED_CIRCLES):
        if i not in needed:
            errors.append(f"ALLOWED_CIRCLES lists {' <-> '.join(a)}, which is no circle any more: strike it")
    return errors


SPDX = "SPDX-License-Identifier: Apache-2.0"
LICENSED_EXT = (".c", ".h", ".cpp", ".cu", ".S", ".def", ".map", ".cmake", ".sh", ".py", ".mjs")
NOT_SOURCE = {os.path.join("tests", "data"), os.path.join("tests", "golden"),
              os.path.join("report", "report_assets")}


def check_licence(source):
    """Every source file's first line (after #! and a Python encoding line) names the licence."""
    errors = []
    for root, dirs, files in os.walk(source):
        rel = os.path.relpath(root, source)
        dirs[:] = sorted(d for d in dirs
                         if (not d.startswith(".") or d == ".ci") and not d.startswith("build")
                         and d not in ("node_modules", "__pycache__")
                         and os.path.normpath(os.path.join(rel, d)) not in NOT_SOURCE
                         and not os.path.exists(os.path.join(root, d, "CMakeCache.txt")))
        for name in sorted(files):
            path = os.path.join(root, name)
            try:
                with open(path, encoding="utf-8", errors="replace") as f:
                    head = [f.readline() for _ in range(3)]
            except OSError as e:
                errors.append(f"{os.path.relpath(path, source)}: cannot read: {e.strerror}")
                continue
            if not (name.endswith(LICENSED_EXT) or name == "CMakeLists.txt"
                    or ("." not in name and head[0].startswith("#!"))):
                continue
            i = 1 if head[0].startswith("#!") else 0
            if name.endswith(".py") and re.match(r"^[ \t\f]*#.*coding[:=][ \t]*[-\w.]+", head[i]):
                i += 1
            if SPDX not in head[i]:
                errors.append(f"{os.path.relpath(path, source)}: its line {i + 1} does not say \"{SPDX}\" "
                              "(LICENSE; tests/layout/check_layout.py, check 3)")
    return errors


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    source = sys.argv[1]
    table = rules(source)
    errors = check_table(table) + check_includes(source, table) + check_circles(source) + check_licence(source)
    for e in errors:
        print(e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
