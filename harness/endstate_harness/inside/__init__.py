"""Programs shipped as text into a sandbox or a judge child; the host never imports them.

Each imports only the standard library (Python 3.8+; a test holds them to it).
:func:`program` returns the text a harness module sends.
"""

from __future__ import annotations

import functools
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_WIRE = _HERE.parent / "judgewire.py"
"""The judge's values-only codec: the judge imports it, and the child gets its text first."""

PROGRAMS: dict[str, tuple[Path, ...]] = {
    "unittest_runner": (_HERE / "unittest_runner.py",),
    "zygote": (_HERE / "fence.py", _HERE / "zygote.py"),
    "box_runner": (_HERE / "box.py", _HERE / "box_zygote.py", _HERE / "box_runner.py"),
    "keeper": (_HERE / "keeper.py",),
    "caller": (_HERE / "caller.py",),
    "judge_child": (_WIRE, _HERE / "judge_scope.py", _HERE / "judge_warm.py",
                    _HERE / "judge_child.py"),
}
"""Every program shipped as text, by name: the files it is made of, in order."""


@functools.cache
def program(name: str) -> str:
    """The text of one shipped program (its parts joined by a blank line)."""
    return "\n\n".join(part.read_text(encoding="utf-8") for part in PROGRAMS[name])
