"""ES110 — the scaffold's example text left in a task the author means to ship.

``endstate-author new`` writes a working example (a clamp() bug, its prompt, its one-line
description) so the task lints and proves at once. That is also why nothing else would tell
the author the example is still there: this family points at each piece left unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator

from endstate_author.engine.context import FIXTURE_DIR, TaskContext
from endstate_author.engine.declare import rule
from endstate_author.engine.diagnostics import Diagnostic
from endstate_author.scaffold import PLACEHOLDER_CODE, PLACEHOLDER_DESCRIPTION, PROMPTS


@rule("ES110", "scaffold-placeholder", "warning")
def scaffold_placeholder(ctx: TaskContext) -> Iterator[Diagnostic]:
    """The scaffold's placeholder text is still in the task (description, prompt, code).

    ## What it checks
    The `description` `endstate-author new` writes, a prompt.md identical to one of its
    example prompts, and fixture files still holding its example module's first line.

    ## Why it matters
    The scaffold is a working example so that it lints and proves at once; left in place,
    the task tests the example's clamp() bug, not the author's project, and lint and prove
    stay quiet about it. Under `lint --strict` this warning fails the run.

    ## Example
    `"description": "Replace with one line on what this task tests."`

    ## Fix
    Replace the example: describe the task in one line, write the prompt for your project,
    and put your project in fixture/ (with its solution and holdout).
    """
    if ctx.data.get("description") == PLACEHOLDER_DESCRIPTION:
        yield ctx.at_value(
            "ES110",
            "the description is the scaffold's placeholder: say in one line what this task tests",
            ("description",),
        )
    prompt = ctx.prompt_md
    if prompt is not None and prompt.strip() in {p.strip() for p in PROMPTS.values()}:
        yield ctx.at_file(
            "ES110",
            "prompt.md is the scaffold's example prompt (the clamp() bug): write the prompt "
            "for your task",
            ctx.root / "prompt.md",
        )
    for rel in sorted(ctx.files(FIXTURE_DIR)):
        if not rel.endswith(".py"):
            continue
        text = ctx.read_tree_text(FIXTURE_DIR, rel)
        if text is not None and text.startswith(PLACEHOLDER_CODE):
            yield ctx.at_file(
                "ES110",
                f"fixture/{rel} is the scaffold's example module: replace it with the project "
                "the agent works in",
                ctx.root / FIXTURE_DIR / rel,
            )
