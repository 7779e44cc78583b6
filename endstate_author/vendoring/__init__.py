"""``endstate-author vendor``: the hardened graders, written into a suite for plain endstate.

- :mod:`~endstate_author.vendoring.render` — the vendored module's text, header and hash;
- :mod:`~endstate_author.vendoring.portable_src` — the part of that module that differs from
  the harness (shipped as source, never imported);
- :mod:`~endstate_author.vendoring.suite` — what vendoring a suite changes: the module, and
  the grader names in each task.json.
"""
