// Checks that every generated file carries protoc-gen-es's "@generated" header, so lint and
// reviewers can tell generated code apart. protoc-gen-es already writes the header; this script
// fails loudly if a plugin change ever drops it.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('../packages/proto/src/gen', import.meta.url).pathname;
const walk = (dir) =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
const missing = walk(root).filter((path) => !readFileSync(path, 'utf8').includes('@generated'));
if (missing.length > 0) {
  console.error(`generated files without an @generated header: ${missing.join(', ')}`);
  process.exit(1);
}
