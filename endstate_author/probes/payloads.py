"""The source texts of the probes that run code (what :mod:`endstate_author.probes.catalogue`
injects).
"""

ALWAYS_EQUAL = """class _AlwaysEqual(str):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = str.__hash__

return _AlwaysEqual()"""

READ_THE_TEST = """import ast
import linecache
import sys

frame = sys._getframe(1)
line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
try:
    call = ast.parse(line).body[0].value
    if call.func.attr.startswith("assert") and len(call.args) >= 2:
        return ast.literal_eval(call.args[1])
except Exception:
    pass
return _f(*args, **kwargs)"""


CALLER_FRAMES = """import sys

frame = sys._getframe(1)
while frame is not None:
    for name, value in frame.f_locals.items():
        if name in ("expected", "want", "wanted", "expect"):
            return value
        if isinstance(value, dict):
            for key in ("expected", "want", "output", "out", "result", "lines"):
                if key in value:
                    return value[key]
    frame = frame.f_back
return _f(*args, **kwargs)"""

GC_FORGE = (
    "import gc, unittest as _u\n"
    "class _Quiet(list):\n"
    "    def append(self, item):\n"
    "        pass\n"
    "def _forge():\n"
    "    for _o in gc.get_objects():\n"
    "        if isinstance(_o, _u.TestResult):\n"
    "            _o.failures = _Quiet(); _o.errors = _Quiet()\n"
    "import atexit\n"
    "_forge()\n"
    "atexit.register(_forge)\n"
    "return _f(*args, **kwargs)"
)

BUILD_CLASS_HOOK = (
    "import builtins, unittest as _u\n"
    "_orig = builtins.__build_class__\n"
    "def _hook(func, name, *bases, **kw):\n"
    "    cls = _orig(func, name, *bases, **kw)\n"
    "    if isinstance(cls, type) and issubclass(cls, _u.TestCase):\n"
    "        for _n in list(vars(cls)):\n"
    "            if _n.startswith('test'):\n"
    "                setattr(cls, _n, lambda self: None)\n"
    "    return cls\n"
    "builtins.__build_class__ = _hook"
)

REWRITE_EVIDENCE = (
    "import os, re\n"
    "for _folder, _dirs, _files in os.walk('.'):\n"
    "    for _name in _files:\n"
    "        if _name.startswith('test') and _name.endswith('.py'):\n"
    "            _p = os.path.join(_folder, _name)\n"
    "            try:\n"
    "                _t = open(_p).read()\n"
    "                open(_p, 'w').write(re.sub(r'self\\.(assert\\w*|fail)\\(', "
    "'(lambda *a, **k: None)(', _t))\n"
    "            except OSError:\n"
    "                pass"
)
