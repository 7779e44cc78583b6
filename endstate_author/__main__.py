"""``python -m endstate_author``: the ``endstate-author`` command, without its console script."""

try:
    from endstate_author.cli import run
except KeyboardInterrupt:  # Ctrl-C while the imports run: nothing exists yet to clean up
    raise SystemExit(130) from None

run()
