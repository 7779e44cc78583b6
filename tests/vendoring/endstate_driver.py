"""Grade tasks with endstate 0.3.0's own runner, in a process that cannot see this repository.

Run as ``python -I -S endstate_driver.py CONFIG_JSON``: ``-I -S`` keeps the repository, the
working directory and every ``.pth`` file (the editable install of endstate-author is one) off
``sys.path``; the config names the one site-packages folder to add (where endstate 0.3.0 from
PyPI and its dependencies are) and the suite folder (what ``PYTHONPATH=SUITE`` gives plain
endstate). Each task is run through ``EvalRunner`` with a scripted provider: ``fixture`` ends
the turn at once; ``solution`` writes solution/'s files, or runs oracle.json's calls when the
task has one (a permissioning task), then ends the turn; ``overlay:DIR`` writes DIR's files.
Prints one JSON object.

Config: ``{"site": str, "suite": str, "tasks": [task folder, ...], "modes": [...],
"sandbox": "local"|"docker", "image": str}``.
"""

import importlib.util
import json
import sys
from pathlib import Path


def main() -> None:
    config = json.loads(sys.argv[1])
    sys.path.append(config["site"])
    sys.path.insert(0, config["suite"])
    hidden = {
        name: importlib.util.find_spec(name) is None
        for name in ("endstate_harness", "endstate_author", "endstate_lsp")
    }
    from endstate.evals import DockerSandbox, EvalRunner, LocalSandbox, load_task
    from endstate.providers.fake import FakeProvider
    from endstate.types import Message, Response, StopReason, ToolCall

    def responses(task, mode):
        if mode == "fixture":
            return []
        root = Path(task.root)
        oracle = root / "oracle.json"
        if mode.startswith("overlay:"):
            source = Path(mode[len("overlay:") :])
            steps = [
                [
                    {
                        "tool": "write",
                        "args": {
                            "path": p.relative_to(source).as_posix(),
                            "content": p.read_text(encoding="utf-8"),
                        },
                    }
                ]
                for p in sorted(source.rglob("*"))
                if p.is_file()
            ]
        elif oracle.is_file():
            steps = json.loads(oracle.read_text(encoding="utf-8"))
        else:
            solution = root / "solution"
            steps = [
                [
                    {
                        "tool": "write",
                        "args": {
                            "path": p.relative_to(solution).as_posix(),
                            "content": p.read_text(encoding="utf-8"),
                        },
                    }
                ]
                for p in sorted(solution.rglob("*"))
                if p.is_file()
            ]
        out = []
        for n, step in enumerate(steps):
            calls = [
                ToolCall(id=f"c{n}-{i}", name=c["tool"], arguments=c["args"])
                for i, c in enumerate(step)
            ]
            out.append(
                Response(
                    message=Message(role="assistant", content="", tool_calls=calls),
                    stop_reason=StopReason.TOOL_USE,
                )
            )
        return out

    def sandbox_for(task):
        if config["sandbox"] == "docker":
            return DockerSandbox(task.fixture, image=config["image"])
        return LocalSandbox(task.fixture)

    results = []
    for folder in config["tasks"]:
        task = load_task(Path(folder))
        for mode in config["modes"]:
            runner = EvalRunner(
                provider_factory=lambda t, m=mode: FakeProvider(responses(t, m)),
                sandbox_factory=sandbox_for,
            )
            result = runner.run_task(task)
            results.append(
                {
                    "task": task.id,
                    "mode": mode,
                    "passed": result.passed,
                    "error": result.error,
                    "reason": result.verdict.reason,
                    "checks": [[c.name, c.passed, c.detail[:600]] for c in result.verdict.checks],
                }
            )
    loaded = sorted(n for n in sys.modules if n.split(".")[0] in hidden)
    print(json.dumps({"hidden": hidden, "loaded": loaded, "results": results}))


if __name__ == "__main__":
    main()
