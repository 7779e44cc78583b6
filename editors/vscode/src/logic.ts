/**
 * The extension's decisions, kept free of the `vscode` module so node's own test runner can
 * check them without an editor: which settings the server gets, where the server is found,
 * which task a file belongs to, what the status item says, how a prove report reads.
 *
 * extension.ts gathers the inputs (settings, the Python extension's interpreter, the
 * environment, the file system) and applies the answers; everything that can be wrong in
 * a way a user notices is decided here.
 */

import * as path from "node:path";

/** The server's own settings (lsp/endstate_lsp/server.py `Settings`), as it reads them. */
export interface ServerSettings {
  trusted: boolean;
  proveOnSave: boolean;
  debounceMs: number;
  sandbox: Sandbox;
}

export type Sandbox = "auto" | "docker" | "local";
export const SANDBOXES: readonly Sandbox[] = ["auto", "docker", "local"];
export const SECTION = "endstate-author";

/** What `workspace.getConfiguration("endstate-author")` holds; values are untrusted input. */
export interface RawSettings {
  path?: unknown;
  interpreter?: unknown;
  proveOnSave?: unknown;
  debounceMs?: unknown;
  sandbox?: unknown;
}

const DEFAULTS: ServerSettings = {
  trusted: false,
  proveOnSave: true,
  debounceMs: 150,
  sandbox: "auto",
};

/**
 * The settings sent as initializationOptions and answered to workspace/configuration.
 *
 * `trusted` comes from VS Code's workspace trust, never from a setting: a workspace cannot
 * declare itself trusted through its own .vscode/settings.json. A malformed value falls back
 * to the default (the server would only log and ignore it), and the problem is returned so
 * the extension can say which setting was wrong.
 */
export function serverSettings(
  raw: RawSettings,
  trusted: boolean,
): { settings: ServerSettings; problems: string[] } {
  const problems: string[] = [];
  const settings: ServerSettings = { ...DEFAULTS, trusted };
  if (raw.proveOnSave !== undefined) {
    if (typeof raw.proveOnSave === "boolean") settings.proveOnSave = raw.proveOnSave;
    else problems.push("endstate-author.proveOnSave must be true or false");
  }
  if (raw.debounceMs !== undefined) {
    const value = raw.debounceMs;
    if (typeof value === "number" && Number.isFinite(value) && value >= 0 && value <= 10000) {
      settings.debounceMs = Math.round(value);
    } else {
      problems.push("endstate-author.debounceMs must be a number between 0 and 10000");
    }
  }
  if (raw.sandbox !== undefined) {
    if (SANDBOXES.includes(raw.sandbox as Sandbox)) settings.sandbox = raw.sandbox as Sandbox;
    else problems.push('endstate-author.sandbox must be "auto", "docker" or "local"');
  }
  return { settings, problems };
}

/**
 * The answer to a workspace/configuration request: our section gets the computed settings
 * (with `trusted`), every other item keeps what VS Code answered.
 */
export function answerConfiguration(
  items: readonly { section?: string }[],
  fallback: readonly unknown[],
  ours: ServerSettings,
): unknown[] {
  return items.map((item, i) =>
    item.section === SECTION ? { ...ours } : i < fallback.length ? fallback[i] : null,
  );
}

/** A change of these settings means a different server process: restart it. */
export function needsRestart(before: RawSettings, after: RawSettings): boolean {
  return (
    text(before.path) !== text(after.path) || text(before.interpreter) !== text(after.interpreter)
  );
}

function text(value: unknown): string {
  return typeof value === "string" ? value.trim() : "";
}

// ----- finding the server -------------------------------------------------------------------

export type Source = "setting:path" | "setting:interpreter" | "python-extension" | "PATH";

/** How to run endstate-author: `command ...baseArgs lsp` or `command ...baseArgs prove ...`. */
export interface ServerCommand {
  command: string;
  baseArgs: string[];
  source: Source;
}

export interface DiscoveryInput {
  settings: RawSettings;
  /** The interpreter the Python extension has selected for the workspace, if any. */
  selectedInterpreter?: string;
  /** Folder that relative setting values are relative to (the first workspace folder). */
  workspaceFolder?: string;
  env: Record<string, string | undefined>;
  platform: NodeJS.Platform;
  /** True when `file` exists and is a file (injected: tests use a fake file system). */
  isFile: (file: string) => boolean;
}

export type Discovery =
  | { found: true; server: ServerCommand; notes: string[] }
  | { found: false; message: string; looked: string[] };

const EXE = "endstate-author";

/**
 * Where the server is: the `endstate-author.path` setting, else the `interpreter` setting,
 * else the Python extension's selected interpreter, else PATH.
 *
 * An explicit setting that points at nothing is an error, not a reason to fall through: the
 * user said which one to use, and silently running another would hide the typo. The Python
 * extension's interpreter is used only when its environment holds the endstate-author
 * script, since a project venv without the package is the common case and PATH may still
 * have a working install.
 */
export function discoverServer(input: DiscoveryInput): Discovery {
  const { settings, platform, isFile } = input;
  const looked: string[] = [];
  const explicitPath = expand(text(settings.path), input);
  if (explicitPath) {
    if (isFile(explicitPath)) {
      return {
        found: true,
        server: { command: explicitPath, baseArgs: [], source: "setting:path" },
        notes: [],
      };
    }
    return {
      found: false,
      message:
        `The endstate-author.path setting names ${explicitPath}, which is not a file. ` +
        "Fix the setting, or clear it to look in the Python environment and on PATH.",
      looked: [explicitPath],
    };
  }
  const explicitPython = expand(text(settings.interpreter), input);
  if (explicitPython) {
    if (!isFile(explicitPython)) {
      return {
        found: false,
        message:
          `The endstate-author.interpreter setting names ${explicitPython}, which is not a ` +
          "file. Point it at a Python interpreter that has endstate-author installed.",
        looked: [explicitPython],
      };
    }
    // -P (Python 3.11+): the server starts in the workspace folder, and plain `-m` would put
    // that folder first on sys.path, so a task repository holding its own endstate_author/
    // package would run in place of the server, in an untrusted workspace too.
    return {
      found: true,
      server: {
        command: explicitPython,
        baseArgs: ["-P", "-m", "endstate_author"],
        source: "setting:interpreter",
      },
      notes: [],
    };
  }
  const notes: string[] = [];
  if (input.selectedInterpreter) {
    const script = scriptBeside(input.selectedInterpreter, platform);
    looked.push(script);
    if (isFile(script)) {
      return {
        found: true,
        server: { command: script, baseArgs: [], source: "python-extension" },
        notes,
      };
    }
    notes.push(
      `the selected interpreter ${input.selectedInterpreter} has no endstate-author ` +
        `(install it there: "${input.selectedInterpreter}" -m pip install endstate-author)`,
    );
  }
  const onPath = searchPath(EXE, input.env, platform, isFile);
  looked.push(...onPath.looked);
  if (onPath.found) {
    return {
      found: true,
      server: { command: onPath.found, baseArgs: [], source: "PATH" },
      notes,
    };
  }
  const why = notes.length ? ` (${notes.join("; ")})` : "";
  return {
    found: false,
    message:
      `The endstate-author language server was not found${why}. Install it with ` +
      "`pip install endstate-author` into the Python environment you select " +
      '(command "Python: Select Interpreter"), or set endstate-author.path to the ' +
      "endstate-author executable.",
    looked,
  };
}

/** The console script an interpreter's environment installs beside it. */
export function scriptBeside(python: string, platform: NodeJS.Platform): string {
  const p = platform === "win32" ? path.win32 : path.posix;
  return p.join(p.dirname(python), platform === "win32" ? `${EXE}.exe` : EXE);
}

/** `which`: the first PATH entry holding `name` (with PATHEXT on Windows). */
export function searchPath(
  name: string,
  env: Record<string, string | undefined>,
  platform: NodeJS.Platform,
  isFile: (file: string) => boolean,
): { found?: string; looked: string[] } {
  const p = platform === "win32" ? path.win32 : path.posix;
  const raw = env.PATH ?? env.Path ?? "";
  const dirs = raw.split(platform === "win32" ? ";" : ":").filter((d) => d.length > 0);
  const exts =
    platform === "win32"
      ? (env.PATHEXT ?? ".EXE;.CMD;.BAT").split(";").filter((e) => e.length > 0)
      : [""];
  const looked: string[] = [];
  for (const dir of dirs) {
    for (const ext of exts) {
      const candidate = p.join(dir, name + ext.toLowerCase());
      looked.push(candidate);
      if (isFile(candidate)) return { found: candidate, looked };
    }
  }
  return { looked };
}

/** `~` and `${workspaceFolder}` in a setting; a relative path is taken from the workspace. */
function expand(value: string, input: DiscoveryInput): string {
  if (!value) return "";
  const p = input.platform === "win32" ? path.win32 : path.posix;
  let out = value;
  const home = input.env.HOME ?? input.env.USERPROFILE;
  if (home && (out === "~" || out.startsWith("~/"))) out = p.join(home, out.slice(1));
  if (input.workspaceFolder) out = out.split("${workspaceFolder}").join(input.workspaceFolder);
  if (!p.isAbsolute(out) && input.workspaceFolder && /[\\/]/.test(out)) {
    out = p.join(input.workspaceFolder, out);
  }
  return out;
}

// ----- tasks and suites ---------------------------------------------------------------------

const TASK_DIRS = new Set(["fixture", "holdout", "solution", "defects"]);
const TASK_FILES = new Set(["task.json", "prompt.md", "oracle.json"]);

/**
 * The task folder `file` belongs to (the same rule as endstate_author.hooks.task_of): the
 * outermost folder holding task.json below which `file` is task.json, prompt.md,
 * oracle.json or lies under fixture/, holdout/, solution/, defects/.
 */
export function taskOf(file: string, isFile: (f: string) => boolean): string | undefined {
  const parts = path.resolve(file).split(path.sep);
  let found: string | undefined;
  for (let cut = parts.length - 1; cut >= 1; cut--) {
    const rest = parts.slice(cut);
    const owned =
      (rest.length === 1 && TASK_FILES.has(rest[0])) ||
      (rest.length >= 2 && TASK_DIRS.has(rest[0]));
    if (!owned) continue;
    const folder = parts.slice(0, cut).join(path.sep) || path.sep;
    if (isFile(path.join(folder, "task.json"))) found = folder;
  }
  return found;
}

// ----- the status item ----------------------------------------------------------------------

export type ServerState = "starting" | "running" | "stopped" | "not-found" | "failed";

export interface LastProof {
  outcome: "proved" | "findings" | "unassessed" | "error" | "running";
  summary: string;
}

export interface StatusInput {
  state: ServerState;
  trusted: boolean;
  proveOnSave: boolean;
  lastProof?: LastProof;
  detail?: string;
}

/** Text (with codicons), tooltip and whether to draw it as a warning. */
export function statusView(input: StatusInput): {
  text: string;
  tooltip: string;
  warning: boolean;
} {
  const icon: Record<ServerState, string> = {
    starting: "$(sync~spin)",
    running: "$(check)",
    stopped: "$(circle-slash)",
    "not-found": "$(error)",
    failed: "$(error)",
  };
  const words: Record<ServerState, string> = {
    starting: "starting",
    running: "ready",
    stopped: "stopped",
    "not-found": "server not found",
    failed: "server failed",
  };
  const lines = [`endstate-author language server: ${words[input.state]}`];
  if (input.detail) lines.push(input.detail);
  let text = `${icon[input.state]} endstate`;
  let warning = input.state === "not-found" || input.state === "failed";
  if (!input.trusted) {
    text += " $(shield) lint only";
    lines.push(
      "Workspace not trusted: only static lint runs. Prove imports and runs the suite's " +
        "graders and fixtures, so it waits until you trust this workspace " +
        '("Workspaces: Manage Workspace Trust").',
    );
  } else if (!input.proveOnSave) {
    lines.push("Prove on save is off (setting endstate-author.proveOnSave).");
  }
  if (input.lastProof) {
    const mark: Record<LastProof["outcome"], string> = {
      proved: "$(pass)",
      findings: "$(warning)",
      unassessed: "$(question)",
      error: "$(error)",
      running: "$(loading~spin)",
    };
    text += ` ${mark[input.lastProof.outcome]}`;
    lines.push(`Last proof: ${input.lastProof.summary}`);
    if (input.lastProof.outcome === "findings" || input.lastProof.outcome === "error") {
      warning = true;
    }
  }
  lines.push("Click to show the server log.");
  return { text, tooltip: lines.join("\n"), warning };
}

/**
 * The server's code lens title after a prove on save ("proved: 9 checks passed",
 * "prove failed: ...") read as a proof result; titles that are not results give undefined.
 */
export function proofFromLens(title: string): LastProof | undefined {
  const t = title.trim();
  if (t.startsWith("proved:")) return { outcome: "proved", summary: t };
  if (t.startsWith("prove failed to run") || t.startsWith("prove could not start")) {
    return { outcome: "error", summary: t };
  }
  if (t.startsWith("prove failed:") || /^prove: \d+ findings?/.test(t)) {
    return { outcome: "findings", summary: t };
  }
  if (t.startsWith("prove unassessed")) return { outcome: "unassessed", summary: t };
  if (t.startsWith("prove: running")) return { outcome: "running", summary: t };
  return undefined;
}

// ----- the prove report ---------------------------------------------------------------------

interface ReportCheck {
  check: string;
  outcome: string;
  seconds?: number;
  detail?: string;
}

interface ReportDiagnostic {
  code: string;
  severity: string;
  message: string;
  file: string;
  line?: number;
  column?: number;
}

/**
 * `endstate-author prove -o json` output → lines for the output channel and a result for
 * the status item. The exit code decides the outcome the same way the CLI documents it
 * (0 proved, 1 findings, 2 unassessed or unusable input), and output that is not the JSON
 * report is shown as it came, so a crash or a usage error is never hidden.
 */
export function readProveReport(
  stdout: string,
  stderr: string,
  exitCode: number | null,
): { lines: string[]; proof: LastProof } {
  let data: { diagnostics?: ReportDiagnostic[]; tasks?: { task: string; checks: ReportCheck[] }[] };
  try {
    data = JSON.parse(stdout);
    if (typeof data !== "object" || data === null || !Array.isArray(data.tasks)) {
      throw new Error("not a prove report");
    }
  } catch {
    const lines = [stdout.trim(), stderr.trim()].filter((s) => s.length > 0);
    const first = stderr.trim().split("\n").pop() ?? "";
    return {
      lines,
      proof: {
        outcome: "error",
        summary: `prove did not run (exit ${exitCode ?? "signal"})${first ? `: ${first}` : ""}`,
      },
    };
  }
  const lines: string[] = [];
  const counts = { pass: 0, fail: 0, unassessed: 0, skipped: 0 } as Record<string, number>;
  const tasks = data.tasks ?? [];
  for (const task of tasks) {
    lines.push(`${task.task}`);
    for (const c of task.checks) {
      counts[c.outcome] = (counts[c.outcome] ?? 0) + 1;
      const mark = c.outcome === "pass" ? "pass" : c.outcome.toUpperCase();
      const detail = c.outcome !== "pass" && c.detail ? `  ${c.detail.split("\n")[0]}` : "";
      lines.push(`  ${mark.padEnd(10)} ${c.check}${detail}`);
    }
  }
  for (const d of data.diagnostics ?? []) {
    const where = d.line ? `${d.file}:${d.line}:${d.column ?? 1}` : d.file;
    lines.push(`${where}: ${d.code} ${d.message}`);
  }
  const noun = tasks.length === 1 ? "task" : "tasks";
  const tail =
    `${tasks.length} ${noun}: ${counts.pass ?? 0} checks passed, ${counts.fail ?? 0} failed, ` +
    `${counts.unassessed ?? 0} unassessed`;
  lines.push(tail);
  const outcome: LastProof["outcome"] =
    exitCode === 0 ? "proved" : exitCode === 1 ? "findings" : "unassessed";
  return { lines, proof: { outcome, summary: tail } };
}

// ----- the JSON Schema while the server runs ------------------------------------------------

/** The scheme of the schema URI VS Code's JSON extension reads through our content provider. */
export const SCHEMA_SCHEME = "endstate-author-schema";

/**
 * Which schema task.json is validated with in a server state: the constraint-free hints
 * unless the server is known not to run (not found, failed to start). Serving the full schema
 * until the server *was* running left a window — finding the server and starting it take
 * seconds on a loaded machine — in which VS Code's JSON extension validated with it, and when
 * it missed the switch afterwards an unknown key showed twice (its "Property … is not allowed"
 * beside ES101). Now no state in which the server reports is ever served constraints.
 */
export function schemaServed(state: ServerState): "hints" | "full" {
  return state === "not-found" || state === "failed" ? "full" : "hints";
}

/** Keywords that only constrain a value; the server reports each such problem itself. */
const CONSTRAINTS = new Set([
  "type", "required", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
  "multipleOf", "minLength", "maxLength", "pattern", "format", "minItems", "maxItems",
  "uniqueItems", "contains", "minContains", "maxContains", "minProperties", "maxProperties",
  "propertyNames", "dependentRequired", "not", "if", "then", "else",
  "unevaluatedProperties", "unevaluatedItems", "additionalItems",
]);
/** Keywords whose value is a map of name → schema. */
const SCHEMA_MAPS = new Set(["properties", "$defs", "definitions", "patternProperties", "dependentSchemas"]);
/** Keywords whose value is a list of schemas. */
const SCHEMA_LISTS = new Set(["anyOf", "allOf", "oneOf", "prefixItems"]);

/**
 * The task schema for the time the language server runs: the same properties, titles,
 * descriptions, defaults and suggested values (so VS Code still completes keys and values
 * and shows their docs), but no constraint. The server's ES1xx rules check exactly what the
 * schema constrains (both come from the same task model), so with the full schema every
 * unknown key or wrong value would be shown twice: once with its ES code, once as the JSON
 * extension's "Property … is not allowed". `enum` and `const` become `examples` (still
 * offered, never enforced); `oneOf` becomes `anyOf` (two matching branches are no error).
 */
export function hintSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(hintSchema);
  if (typeof schema !== "object" || schema === null) return schema;
  const out: Record<string, unknown> = {};
  const examples: unknown[] = [];
  for (const [key, value] of Object.entries(schema as Record<string, unknown>)) {
    if (CONSTRAINTS.has(key)) continue;
    if (key === "enum" && Array.isArray(value)) examples.push(...value);
    else if (key === "const") examples.push(value);
    else if (key === "examples" && Array.isArray(value)) examples.unshift(...value);
    else if (key === "additionalProperties" || key === "items") {
      if (typeof value === "object" && value !== null) out[key] = hintSchema(value);
    } else if (SCHEMA_MAPS.has(key) && typeof value === "object" && value !== null) {
      out[key] = Object.fromEntries(
        Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, hintSchema(v)]),
      );
    } else if (SCHEMA_LISTS.has(key) && Array.isArray(value)) {
      out[key === "oneOf" ? "anyOf" : key] = value.map(hintSchema);
    } else out[key] = value;
  }
  if (examples.length) out.examples = examples;
  return out;
}
