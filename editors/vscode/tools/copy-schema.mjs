// Copies the JSON Schema the Python package ships into the extension at build time, so the
// extension never carries a second, hand-kept copy that could drift from the task model.
import { copyFileSync, mkdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const source = join(here, "..", "..", "..", "endstate_author", "data", "task.schema.json");
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
