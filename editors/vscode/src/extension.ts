/**
 * The VS Code face of endstate-author: starts `endstate-author lsp` for folders holding
 * task.json, keeps its settings and workspace trust in step, and adds prove commands and a
 * status item. Every decision lives in logic.ts (unit-tested without VS Code); this file
 * only wires those decisions to the editor.
 */

import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import {
  DidChangeConfigurationNotification,
  LanguageClient,
  State,
  type LanguageClientOptions,
  type ServerOptions,
} from "vscode-languageclient/node";
import {
  SCHEMA_SCHEME,
  SECTION,
  answerConfiguration,
  discoverServer,
  hintSchema,
  schemaServed,
  needsRestart,
  proofFromLens,
  readProveReport,
  serverSettings,
  statusView,
  taskOf,
  type LastProof,
  type RawSettings,
  type ServerCommand,
  type ServerState,
} from "./logic";

/** The slice of the Python extension's exported API we use (ms-python.python). */
interface PythonApi {
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { path: string };
    resolveEnvironment?(
      env: { path: string } | string,
    ): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
    onDidChangeActiveEnvironmentPath?: vscode.Event<unknown>;
  };
}

let client: LanguageClient | undefined;
let server: ServerCommand | undefined;
let state: ServerState = "stopped";
let stateDetail: string | undefined;
let lastProof: LastProof | undefined;
let status: vscode.StatusBarItem;
let proveOutput: vscode.OutputChannel;
let serverLog: vscode.OutputChannel;
let lastRaw: RawSettings = {};
const running = new Set<ChildProcess>();
/** The schema VS Code's JSON extension validates task.json with (package.json jsonValidation). */
const schemaUri = vscode.Uri.parse(`${SCHEMA_SCHEME}:/task.schema.json`);
const schemaChanged = new vscode.EventEmitter<vscode.Uri>();
let fullSchema = "{}";
let served = schemaServed(state);

/**
 * Serves task.json's schema: the constraint-free one whenever the server runs or is about to
 * (so each problem is shown once, with its ES code, never also as "Property … is not
 * allowed"), the full one once the server is known not to run (validation without it).
 */
const schemaProvider: vscode.TextDocumentContentProvider = {
  onDidChange: schemaChanged.event,
  provideTextDocumentContent: () =>
    served === "hints" ? JSON.stringify(hintSchema(JSON.parse(fullSchema))) : fullSchema,
};

function serveSchema(kind: "hints" | "full"): void {
  if (served === kind) return;
  served = kind;
  schemaChanged.fire(schemaUri);
}

function isFile(file: string): boolean {
  try {
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function rawSettings(): RawSettings {
  const c = vscode.workspace.getConfiguration(SECTION);
  return {
    path: c.get("path"),
    interpreter: c.get("interpreter"),
    proveOnSave: c.get("proveOnSave"),
    debounceMs: c.get("debounceMs"),
    sandbox: c.get("sandbox"),
  };
}

function currentSettings() {
  return serverSettings(rawSettings(), vscode.workspace.isTrusted);
}

function refreshStatus(): void {
  const { settings } = currentSettings();
  const view = statusView({
    state,
    trusted: settings.trusted,
    proveOnSave: settings.proveOnSave,
    lastProof,
    detail: stateDetail,
  });
  status.text = view.text;
  status.tooltip = view.tooltip;
  status.backgroundColor = view.warning
    ? new vscode.ThemeColor("statusBarItem.warningBackground")
    : undefined;
  status.show();
  serveSchema(schemaServed(state));
}

async function selectedInterpreter(): Promise<string | undefined> {
  const ext = vscode.extensions.getExtension<PythonApi>("ms-python.python");
  if (!ext) return undefined;
  try {
    const api = ext.isActive ? ext.exports : await ext.activate();
    const envs = api?.environments;
    if (!envs) return undefined;
    const active = envs.getActiveEnvironmentPath(vscode.workspace.workspaceFolders?.[0]?.uri);
    const resolved = envs.resolveEnvironment ? await envs.resolveEnvironment(active) : undefined;
    return resolved?.executable.uri?.fsPath ?? active.path;
  } catch {
    return undefined; // the Python extension is optional: PATH is still searched
  }
}

async function findServer() {
  return discoverServer({
    settings: rawSettings(),
    selectedInterpreter: await selectedInterpreter(),
    workspaceFolder: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath,
    env: process.env,
    platform: process.platform,
    isFile,
  });
}

async function notFound(message: string, looked: string[]): Promise<void> {
  serverLog.appendLine(`[endstate-author] ${message}`);
  if (looked.length) serverLog.appendLine(`looked in:\n  ${looked.join("\n  ")}`);
  const pick = await vscode.window.showErrorMessage(
    message,
    "Select Interpreter",
    "Open Settings",
    "Show Log",
  );
  if (pick === "Select Interpreter") {
    await vscode.commands.executeCommand("python.setInterpreter");
  } else if (pick === "Open Settings") {
    await vscode.commands.executeCommand("workbench.action.openSettings", SECTION);
  } else if (pick === "Show Log") {
    serverLog.show(true);
  }
}

async function startClient(): Promise<void> {
  lastRaw = rawSettings();
  const found = await findServer();
  if (!found.found) {
    server = undefined;
    state = "not-found";
    stateDetail = found.message;
    refreshStatus();
    void notFound(found.message, found.looked);
    return;
  }
  server = found.server;
  for (const note of found.notes) serverLog.appendLine(`[endstate-author] ${note}`);
  const serverOptions: ServerOptions = {
    command: server.command,
    args: [...server.baseArgs, "lsp"],
    options: { cwd: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: "file", pattern: "**/task.json" }],
    outputChannel: serverLog,
    initializationOptions: currentSettings().settings,
    middleware: {
      workspace: {
        configuration: async (params, token, next) => {
          const fallback = await next(params, token);
          const answered = Array.isArray(fallback) ? fallback : [];
          return answerConfiguration(params.items, answered, currentSettings().settings);
        },
      },
      provideCodeLenses: async (document, token, next) => {
        const lenses = await next(document, token);
        for (const lens of lenses ?? []) {
          const proof = lens.command ? proofFromLens(lens.command.title) : undefined;
          if (proof) {
            lastProof = proof;
            refreshStatus();
          }
        }
        return lenses;
      },
    },
  };
  const c = new LanguageClient(SECTION, "endstate-author", serverOptions, clientOptions);
  client = c;
  c.onDidChangeState((e) => {
    state =
      e.newState === State.Running
        ? "running"
        : e.newState === State.Starting
          ? "starting"
          : "stopped";
    stateDetail = `${server?.command} ${[...(server?.baseArgs ?? []), "lsp"].join(" ")}`;
    refreshStatus();
  });
  state = "starting";
  refreshStatus();
  try {
    await c.start();
  } catch (err) {
    state = "failed";
    stateDetail = `could not start ${server.command}: ${String(err)}`;
    refreshStatus();
    const pick = await vscode.window.showErrorMessage(
      `endstate-author: the language server did not start (${String(err)}). ` +
        "Check that endstate-author is installed in the environment it runs from.",
      "Show Log",
      "Open Settings",
    );
    if (pick === "Show Log") serverLog.show(true);
    if (pick === "Open Settings") {
      await vscode.commands.executeCommand("workbench.action.openSettings", SECTION);
    }
  }
}

async function stopClient(): Promise<void> {
  const c = client;
  client = undefined;
  if (c) {
    try {
      await c.stop(2000);
    } catch {
      // a server that died already has nothing left to stop
    }
  }
  state = "stopped";
}

async function restart(): Promise<void> {
  await stopClient();
  await startClient();
}

/** Send the current settings (trust included) to a running server. */
function pushSettings(): void {
  if (client && client.state === State.Running) {
    void client.sendNotification(DidChangeConfigurationNotification.type, {
      settings: { [SECTION]: currentSettings().settings },
    });
  }
  refreshStatus();
}

/** Run `endstate-author prove TARGET -o json` and show the report; prove runs suite code. */
async function prove(target: string, label: string): Promise<void> {
  if (!vscode.workspace.isTrusted) {
    void vscode.window.showWarningMessage(
      "endstate-author: prove imports and runs the suite's graders and fixtures; trust this " +
        "workspace first (Workspaces: Manage Workspace Trust). Static lint keeps running.",
    );
    return;
  }
  if (!server) {
    void vscode.window.showErrorMessage(
      "endstate-author: no endstate-author executable was found, so prove cannot run. " +
        "Install it (pip install endstate-author) or set endstate-author.path.",
    );
    return;
  }
  const { settings } = currentSettings();
  const args = [...server.baseArgs, "prove", target, "-o", "json", "--sandbox", settings.sandbox];
  proveOutput.show(true);
  proveOutput.appendLine(`$ ${server.command} ${args.join(" ")}`);
  lastProof = { outcome: "running", summary: `proving ${label}…` };
  refreshStatus();
  const started = Date.now();
  const child = spawn(server.command, args, {
    cwd: path.dirname(target),
    detached: process.platform !== "win32", // its own process group: cancel kills the tree
  });
  running.add(child);
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => {
    child.on("error", (err) => {
      stderr += String(err);
      resolve(null);
    });
    child.on("close", (c) => resolve(c));
  });
  running.delete(child);
  const report = readProveReport(stdout, stderr, code);
  for (const line of report.lines) proveOutput.appendLine(line);
  proveOutput.appendLine(`(${((Date.now() - started) / 1000).toFixed(1)}s)\n`);
  lastProof = report.proof;
  refreshStatus();
}

function activeTask(): string | undefined {
  const doc = vscode.window.activeTextEditor?.document;
  return doc && doc.uri.scheme === "file" ? taskOf(doc.uri.fsPath, isFile) : undefined;
}

function killAll(): void {
  for (const child of running) {
    try {
      if (child.pid && process.platform !== "win32") process.kill(-child.pid, "SIGTERM");
      else child.kill();
    } catch {
      // already gone
    }
  }
  running.clear();
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  serverLog = vscode.window.createOutputChannel("endstate-author server");
  proveOutput = vscode.window.createOutputChannel("endstate-author prove");
  status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 10);
  status.command = "endstate-author.showServerLog";
  context.subscriptions.push(serverLog, proveOutput, status, { dispose: killAll });
  try {
    fullSchema = fs.readFileSync(
      path.join(context.extensionPath, "schemas", "task.schema.json"),
      "utf8",
    );
  } catch (err) {
    serverLog.appendLine(`[endstate-author] the packaged schema cannot be read: ${String(err)}`);
  }
  context.subscriptions.push(
    schemaChanged,
    vscode.workspace.registerTextDocumentContentProvider(SCHEMA_SCHEME, schemaProvider),
  );

  for (const problem of currentSettings().problems) {
    void vscode.window.showWarningMessage(`endstate-author: ${problem}; using the default.`);
  }

  context.subscriptions.push(
    vscode.commands.registerCommand("endstate-author.proveTask", async () => {
      const task = activeTask();
      if (!task) {
        void vscode.window.showInformationMessage(
          "endstate-author: open a file of a task (task.json, prompt.md, fixture/…) first.",
        );
        return;
      }
      await prove(task, path.basename(task));
    }),
    vscode.commands.registerCommand("endstate-author.proveSuite", async () => {
      const task = activeTask();
      const suite = task ? path.dirname(task) : vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
      if (!suite) {
        void vscode.window.showInformationMessage("endstate-author: open a folder of tasks first.");
        return;
      }
      await prove(suite, `the suite ${path.basename(suite)}`);
    }),
    vscode.commands.registerCommand("endstate-author.restartServer", restart),
    vscode.commands.registerCommand("endstate-author.showServerLog", () => serverLog.show(true)),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (!e.affectsConfiguration(SECTION)) return;
      const now = rawSettings();
      for (const problem of currentSettings().problems) {
        void vscode.window.showWarningMessage(`endstate-author: ${problem}; using the default.`);
      }
      if (needsRestart(lastRaw, now)) void restart();
      else pushSettings();
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => pushSettings()),
  );

  const py = vscode.extensions.getExtension<PythonApi>("ms-python.python");
  if (py?.isActive && py.exports?.environments?.onDidChangeActiveEnvironmentPath) {
    context.subscriptions.push(
      py.exports.environments.onDidChangeActiveEnvironmentPath(() => {
        const s = rawSettings();
        if (!(s.path || s.interpreter)) void restart(); // the interpreter decides the server
      }),
    );
  }
  await startClient();
}

export async function deactivate(): Promise<void> {
  killAll();
  await stopClient();
}
