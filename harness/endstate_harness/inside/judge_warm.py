"""The warm-up of the judge's child before the first variant of a batch: shipped as source
before :mod:`endstate_harness.inside.judge_child`; standard library only, Python 3.8+.
"""

import importlib
import importlib.machinery
import os
import sys

WARM_FILES = 300
"""Most source files of the tree compiled ahead of the variants, in the order of a sorted walk
(a larger tree: the rest are compiled by each variant that imports them, as without the
warm-up). The warm-up is paid once per batch of up to four dozen variants whether they import
a file or not: a tree that vendors a library of thousands of modules must not cost seconds."""
WARM_BYTES = 4 << 20
"""Most source bytes compiled ahead of the variants."""
NOT_PREIMPORTED = {"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo",
                   "__main__", "__hello__", "__phello__"}
"""Standard modules never imported ahead: importing them does something visible."""


def _warm(root):
    """Before the first variant, in the process that forks them: what each variant's process
    would otherwise redo, done once.

    - Every source file of the tree is compiled (not run) and kept with its bytes; a
      variant's import uses the kept code object when the file holds the same bytes (the
      mutant's own file differs and is compiled as usual). The code object is the one
      ``compile`` makes of those bytes either way.
    - The standard modules the tree's code imports are imported here, so each variant finds
      them loaded, as ``json`` and ``decimal`` already are (the wire format uses them). Not
      when a module of the tree has the name of a standard module: a standard module that
      imports it would then run the tree's code here, before any variant.
    - The import system's view of the folders on ``sys.path`` is read once.

    Nothing of the tree runs here: this process still imported nothing of it, and what a
    variant does stays in its own process. Any failure leaves the variant to do the work."""
    try:
        codes, imported, tops = _compiled(root)
        SourceFileLoader = importlib.machinery.SourceFileLoader
        original = SourceFileLoader.source_to_code

        def source_to_code(self, data, path, *args, **kwargs):
            kept = codes.get(path)
            if kept is not None and not args and not kwargs and kept[0] == data:
                return kept[1]
            return original(self, data, path, *args, **kwargs)

        SourceFileLoader.source_to_code = source_to_code  # type: ignore[method-assign]
        importlib.machinery.PathFinder.find_spec("_endstate_judge_warm_")
        for name in preimports(imported, tops, getattr(sys, "stdlib_module_names", None)):
            try:
                __import__(name)
            except BaseException:  # the variant meets the same failure, in its own time
                pass
    except Exception:
        pass


def preimports(imported, tops, stdlib):
    """Which of the modules the tree imports are imported ahead (see :func:`_warm`): the
    standard library's, none when a top-level name of the tree is a standard module's (or the
    interpreter does not list them, before 3.10)."""
    if stdlib is None or set(tops) & set(stdlib):
        return []
    return [name for name in sorted(imported)
            if name.partition(".")[0] in stdlib and name.partition(".")[0] not in NOT_PREIMPORTED]


def _compiled(root):
    """Source path → (bytes, code) for the tree's ``.py`` files; the absolute module names
    they import; the top-level names the tree itself defines."""
    import ast  # deferred: only the process that forks the variants parses, once per batch

    codes = {}  # type: dict[str, tuple[bytes, object]]
    imported = set()  # type: set[str]
    tops = set()
    total = 0
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        if folder == root:
            tops.update(dirs)
            tops.update(n.partition(".")[0] for n in names)
        for name in sorted(names):
            if not name.endswith(".py") or len(codes) >= WARM_FILES:
                continue
            path = os.path.join(folder, name)
            try:
                with open(path, "rb") as source:
                    data = source.read(WARM_BYTES - total + 1)
                total += len(data)
                if total > WARM_BYTES:
                    return codes, imported, tops
                codes[path] = (data, compile(data, path, "exec", dont_inherit=True))
                tree = ast.parse(data, path)
            except Exception:  # unreadable or not Python: the variant finds out itself
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    imported.update(alias.name for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    imported.add(node.module)
    return codes, imported, tops
