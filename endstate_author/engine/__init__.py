"""What a rule sees: the task as parsed with positions (``jsonpos``, ``lineindex``), findings
and fixes (``diagnostics``, ``fixes``), configuration (``config``), suggestions (``suggest``),
argument types (``argtypes``), the syntax-walk helpers (``astwalk``), text made safe to print
(``textsafe``), the lint context and the trees a rule reads (``context``, ``trees``), the rule
declaration (``declare``), the grader catalogue (``catalogue/``) and test discovery
(``discovery/``).

Everything above (``rules``, ``lint``, ``prove``, ``assist``, ``cli``) imports from here, and
nothing here imports them: a rule's inputs are defined apart from what runs the rules. This
package re-exports nothing, so importing one engine module never loads the others.
"""
