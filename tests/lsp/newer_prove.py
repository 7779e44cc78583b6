"""A real process standing in for a prove of a newer wire version than the server's (the
server may run another install's prove): one progress event and a report, each saying
``wire_version`` one above :data:`endstate_author.prove.wire.WIRE_VERSION`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from endstate_author.prove.wire import WIRE_VERSION

task = Path(sys.argv[1]).resolve()
newer = WIRE_VERSION + 1
result = {"check": "solution passes", "group": "directions", "outcome": "pass"}
print(json.dumps({"event": "done", "wire_version": newer, "task": task.name,
                  "check": "solution passes", "result": result}), file=sys.stderr, flush=True)
print(json.dumps({"wire_version": newer, "sandbox": {"kind": "local"}, "diagnostics": [],
                  "tasks": [{"task": task.name, "path": str(task), "checks": [result]}]}))
