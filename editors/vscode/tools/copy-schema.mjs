// Copies the JSON Schema the Python package ships into the extension at build time, so the
// extension never carries a second, hand-kept copy that could drift from the task model.
import { copyFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
// editors/vscode/tools in the repository; endstate_author/data/editors/vscode/tools in the wheel
const candidates = [
  join(here, "..", "..", "..", "endstate_author", "data", "task.schema.json"),
  join(here, "..", "..", "..", "task.schema.json"),
];
const source = candidates.find((c) => existsSync(c)) ?? candidates[0];
const target = join(here, "..", "schemas", "task.schema.json");
let text;
try {
  text = readFileSync(source, "utf8");
  JSON.parse(text);
} catch (err) {
  console.error(`copy-schema: cannot read the shipped schema at ${source}: ${err.message}`);
  process.exit(1);
}
mkdirSync(dirname(target), { recursive: true });
copyFileSync(source, target);
console.log(`copy-schema: ${source} -> ${target}`);
