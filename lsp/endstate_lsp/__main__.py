"""``python -m endstate_lsp [--tcp HOST:PORT]``: what ``endstate-author lsp`` runs."""

from __future__ import annotations

import argparse


def run(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="endstate-lsp", description="The endstate-author language server (stdio by default)."
    )
    parser.add_argument("--tcp", metavar="HOST:PORT", help="listen on a TCP port instead of stdio")
    parser.add_argument("--stdio", action="store_true", help="serve over stdio (the default)")
    args = parser.parse_args(argv)
    # deferred: --help answers without loading pygls and the whole analysis
    from endstate_lsp.app import main

    main(tcp=args.tcp)


if __name__ == "__main__":
    run()
