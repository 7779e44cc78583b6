// Unit tests of the extension's pure logic, on node's own test runner (no VS Code needed).
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import {
  answerConfiguration,
  discoverServer,
  hintSchema,
  needsRestart,
  proofFromLens,
  readProveReport,
  schemaServed,
  scriptBeside,
  searchPath,
  serverSettings,
  statusView,
  taskOf,
  type DiscoveryInput,
} from "../src/logic";

function fakeFs(files: string[]): (f: string) => boolean {
  const set = new Set(files);
  return (f) => set.has(f);
}

function input(over: Partial<DiscoveryInput>): DiscoveryInput {
  return {
    settings: {},
    env: { PATH: "/usr/local/bin:/usr/bin", HOME: "/home/u" },
    platform: "linux",
    isFile: fakeFs([]),
    ...over,
  };
}

test("settings: defaults, trust from the editor, bad values fall back with a message", () => {
  const plain = serverSettings({}, false);
  assert.deepEqual(plain.settings, {
    trusted: false,
    proveOnSave: true,
    debounceMs: 150,
    sandbox: "auto",
  });
  assert.deepEqual(plain.problems, []);
  const set = serverSettings({ proveOnSave: false, debounceMs: 42.4, sandbox: "docker" }, true);
  assert.deepEqual(set.settings, {
    trusted: true,
    proveOnSave: false,
    debounceMs: 42,
    sandbox: "docker",
  });
  const bad = serverSettings({ proveOnSave: "yes", debounceMs: -1, sandbox: "podman" }, true);
  assert.deepEqual(bad.settings, { ...plain.settings, trusted: true });
  assert.equal(bad.problems.length, 3);
  assert.match(bad.problems.join("\n"), /sandbox must be/);
  // a workspace's own settings cannot make it trusted: there is no `trusted` setting at all
  const sneaky = serverSettings({ trusted: true } as never, false);
  assert.equal(sneaky.settings.trusted, false);
});

test("configuration answers our section with the computed settings, others untouched", () => {
  const ours = serverSettings({ debounceMs: 5 }, true).settings;
  const answer = answerConfiguration(
    [{ section: "endstate-author" }, { section: "python" }, {}],
    [{ debounceMs: 999 }, { x: 1 }],
    ours,
  );
  assert.deepEqual(answer, [ours, { x: 1 }, null]);
});

test("restart only when the server process would change", () => {
  assert.equal(needsRestart({ path: "" }, { path: " " }), false);
  assert.equal(needsRestart({ path: "/a" }, { path: "/b" }), true);
  assert.equal(needsRestart({ interpreter: undefined }, { interpreter: "/py" }), true);
  assert.equal(needsRestart({ debounceMs: 1 }, { debounceMs: 2, sandbox: "local" }), false);
});

test("discovery: the path setting wins, and a wrong one is an error, not a fallback", () => {
  const ok = discoverServer(
    input({ settings: { path: "/opt/es/bin/endstate-author" }, isFile: fakeFs(["/opt/es/bin/endstate-author", "/usr/bin/endstate-author"]) }),
  );
  assert.deepEqual(ok.found && ok.server, {
    command: "/opt/es/bin/endstate-author",
    baseArgs: [],
    source: "setting:path",
  });
  const wrong = discoverServer(
    input({ settings: { path: "/nope" }, isFile: fakeFs(["/usr/bin/endstate-author"]) }),
  );
  assert.equal(wrong.found, false);
  assert.match(!wrong.found ? wrong.message : "", /endstate-author\.path .*\/nope/);
});

test("discovery: ~ and ${workspaceFolder} and relative paths in settings", () => {
  const home = discoverServer(
    input({ settings: { path: "~/bin/endstate-author" }, isFile: fakeFs(["/home/u/bin/endstate-author"]) }),
  );
  assert.equal(home.found && home.server.command, "/home/u/bin/endstate-author");
  const ws = discoverServer(
    input({
      settings: { interpreter: "${workspaceFolder}/.venv/bin/python" },
      workspaceFolder: "/w",
      isFile: fakeFs(["/w/.venv/bin/python"]),
    }),
  );
  assert.deepEqual(ws.found && ws.server, {
    command: "/w/.venv/bin/python",
    baseArgs: ["-P", "-m", "endstate_author"],
    source: "setting:interpreter",
  });
  const rel = discoverServer(
    input({ settings: { interpreter: ".venv/bin/python" }, workspaceFolder: "/w", isFile: fakeFs(["/w/.venv/bin/python"]) }),
  );
  assert.equal(rel.found && rel.server.command, "/w/.venv/bin/python");
});

test("discovery: the selected interpreter's environment, when it has the script", () => {
  const files = ["/w/.venv/bin/python", "/w/.venv/bin/endstate-author", "/usr/bin/endstate-author"];
  const got = discoverServer(input({ selectedInterpreter: "/w/.venv/bin/python", isFile: fakeFs(files) }));
  assert.deepEqual(got.found && got.server, {
    command: "/w/.venv/bin/endstate-author",
    baseArgs: [],
    source: "python-extension",
  });
  // without the script there, PATH is next, and the note says how to install it there
  const fallback = discoverServer(
    input({ selectedInterpreter: "/w/.venv/bin/python", isFile: fakeFs(["/usr/bin/endstate-author"]) }),
  );
  assert.equal(fallback.found && fallback.server.source, "PATH");
  assert.match(fallback.found ? fallback.notes.join() : "", /-m pip install endstate-author/);
});

test("discovery: nothing anywhere gives one message with the fix and where it looked", () => {
  const none = discoverServer(input({ selectedInterpreter: "/w/.venv/bin/python" }));
  assert.equal(none.found, false);
  if (!none.found) {
    assert.match(none.message, /pip install endstate-author/);
    assert.match(none.message, /endstate-author\.path/);
    assert.match(none.message, /\/w\/\.venv\/bin\/python has no endstate-author/);
    assert.deepEqual(none.looked, [
      "/w/.venv/bin/endstate-author",
      "/usr/local/bin/endstate-author",
      "/usr/bin/endstate-author",
    ]);
  }
});

test("PATH search honours order and PATHEXT on Windows", () => {
  const unix = searchPath("endstate-author", { PATH: "/a::/b" }, "linux", fakeFs(["/b/endstate-author"]));
  assert.equal(unix.found, "/b/endstate-author");
  const win = searchPath(
    "endstate-author",
    { Path: "C:\\py\\Scripts;C:\\x", PATHEXT: ".COM;.EXE" },
    "win32",
    fakeFs(["C:\\x\\endstate-author.exe"]),
  );
  assert.equal(win.found, "C:\\x\\endstate-author.exe");
  assert.equal(scriptBeside("C:\\v\\Scripts\\python.exe", "win32"), "C:\\v\\Scripts\\endstate-author.exe");
});

test("taskOf maps task parts to the (outermost) task folder, on a real file tree", () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "es-vscode-"));
  try {
    const task = path.join(root, "tasks", "alpha");
    const write = (rel: string) => {
      const f = path.join(task, rel);
      fs.mkdirSync(path.dirname(f), { recursive: true });
      fs.writeFileSync(f, "{}");
    };
    ["task.json", "prompt.md", "fixture/pkg/a.py", "fixture/inner/task.json", "NOTES.md"].forEach(write);
    const isFile = (f: string) => fs.existsSync(f) && fs.statSync(f).isFile();
    assert.equal(taskOf(path.join(task, "task.json"), isFile), task);
    assert.equal(taskOf(path.join(task, "fixture", "pkg", "a.py"), isFile), task);
    assert.equal(taskOf(path.join(task, "fixture", "inner", "task.json"), isFile), task);
    assert.equal(taskOf(path.join(task, "solution", "new.py"), isFile), task);
    assert.equal(taskOf(path.join(task, "NOTES.md"), isFile), undefined);
    assert.equal(taskOf(path.join(root, "elsewhere.py"), isFile), undefined);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test("status: untrusted says why; findings warn; a missing server warns", () => {
  const untrusted = statusView({ state: "running", trusted: false, proveOnSave: true });
  assert.match(untrusted.text, /lint only/);
  assert.match(untrusted.tooltip, /not trusted.*only static lint/s);
  assert.equal(untrusted.warning, false);
  const trusted = statusView({ state: "running", trusted: true, proveOnSave: true });
  assert.doesNotMatch(trusted.text, /lint only/);
  const failing = statusView({
    state: "running",
    trusted: true,
    proveOnSave: true,
    lastProof: { outcome: "findings", summary: "prove failed: holdout" },
  });
  assert.equal(failing.warning, true);
  assert.match(failing.tooltip, /Last proof: prove failed: holdout/);
  assert.equal(statusView({ state: "not-found", trusted: true, proveOnSave: true }).warning, true);
  assert.match(
    statusView({ state: "running", trusted: true, proveOnSave: false }).tooltip,
    /Prove on save is off/,
  );
});

test("code lens titles read as proof results", () => {
  assert.equal(proofFromLens("proved: 9 checks passed")?.outcome, "proved");
  assert.equal(proofFromLens("prove failed: ES902, ES910")?.outcome, "findings");
  assert.equal(proofFromLens("prove: 3 findings")?.outcome, "findings");
  assert.equal(proofFromLens("prove unassessed: ES908")?.outcome, "unassessed");
  assert.equal(proofFromLens("prove failed to run (exit 2, no JSON report)")?.outcome, "error");
  assert.equal(proofFromLens("prove on save is off: the workspace is not trusted"), undefined);
  assert.equal(proofFromLens("prove: not run yet (save to run)"), undefined);
});

test("prove report: JSON to lines and a result; anything else is shown as it came", () => {
  const report = JSON.stringify({
    diagnostics: [
      { code: "ES910", severity: "error", message: "defect passes", file: "t/task.json", line: 3, column: 5 },
    ],
    tasks: [
      {
        task: "alpha",
        checks: [
          { check: "fixture fails", outcome: "pass", seconds: 0.1, detail: "" },
          { check: "defect wrong", outcome: "fail", seconds: 0.2, detail: "graders passed\nmore" },
        ],
      },
    ],
  });
  const read = readProveReport(report, "", 1);
  assert.equal(read.proof.outcome, "findings");
  assert.equal(read.proof.summary, "1 task: 1 checks passed, 1 failed, 0 unassessed");
  assert.ok(read.lines.includes("  FAIL       defect wrong  graders passed"));
  assert.ok(read.lines.includes("t/task.json:3:5: ES910 defect passes"));
  assert.equal(readProveReport(report, "", 0).proof.outcome, "proved");
  assert.equal(readProveReport(report, "", 2).proof.outcome, "unassessed");
  const broken = readProveReport("", "endstate-author: tasks/x: no such file or folder\n", 2);
  assert.equal(broken.proof.outcome, "error");
  assert.match(broken.proof.summary, /no such file or folder/);
  assert.deepEqual(broken.lines, ["endstate-author: tasks/x: no such file or folder"]);
});

test("hintSchema keeps what completes and documents, drops every constraint", () => {
  const full = JSON.parse(
    fs.readFileSync(path.join(__dirname, "..", "..", "..", "..", "endstate_author", "data", "task.schema.json"), "utf8"),
  );
  const hint = hintSchema(full) as Record<string, any>;
  const text = JSON.stringify(hint);
  for (const word of ['"additionalProperties":false', '"required"', '"enum"', '"minimum"', '"oneOf"']) {
    assert.ok(!text.includes(word), `${word} survives`);
  }
  assert.deepEqual(Object.keys(hint.properties).sort(), Object.keys(full.properties).sort());
  assert.equal(hint.properties.id.description, full.properties.id.description);
  // a property *named* like a keyword is a property, not a keyword: it stays
  const odd = hintSchema({ properties: { type: { type: "string", enum: ["a", "b"] } } }) as any;
  assert.deepEqual(odd, { properties: { type: { examples: ["a", "b"] } } });
  // an object-valued additionalProperties is a schema: kept, constraints stripped
  const open = hintSchema({ additionalProperties: { type: "integer", description: "n" } }) as any;
  assert.deepEqual(open, { additionalProperties: { description: "n" } });
});

test("schemaServed: constraints only once the server is known not to run", () => {
  // before the server is found, while it starts, runs or restarts, it reports every unknown
  // key itself (ES101): the JSON extension must never validate with constraints meanwhile
  for (const state of ["stopped", "starting", "running"] as const) {
    assert.equal(schemaServed(state), "hints", state);
  }
  for (const state of ["not-found", "failed"] as const) {
    assert.equal(schemaServed(state), "full", state);
  }
});
