// Bundles the console (src/main.tsx and its CSS, uPlot's included) into dist/: content-hashed
// files under dist/assets/ (the edge caches them for a year) and dist/index.html naming them.
// No CDN: everything the page loads comes from the edge.
import { build } from 'esbuild';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(fileURLToPath(import.meta.url));
const dist = path.join(root, 'dist');
rmSync(dist, { recursive: true, force: true });
mkdirSync(dist, { recursive: true });

const result = await build({
  absWorkingDir: root,
  entryPoints: { app: 'src/main.tsx' },
  bundle: true,
  minify: true,
  sourcemap: 'linked',
  format: 'esm',
  target: ['es2022'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  outdir: path.join(dist, 'assets'),
  entryNames: '[name]-[hash]',
  assetNames: '[name]-[hash]',
  metafile: true,
  legalComments: 'linked',
  logLevel: 'warning',
});

const outputs = Object.keys(result.metafile.outputs).map((file) => path.relative(dist, path.resolve(root, file)));
const script = outputs.find((file) => file.endsWith('.js'));
const style = outputs.find((file) => file.endsWith('.css'));
if (script === undefined || style === undefined)
  throw new Error(`the bundle lacks a script or a style sheet: ${outputs.join(', ')}`);
const html = readFileSync(path.join(root, 'src/index.html'), 'utf8')
  .replace('%SCRIPT%', `/console/${script}`)
  .replace('%STYLE%', `/console/${style}`);
writeFileSync(path.join(dist, 'index.html'), html);
console.log(`console built: ${['index.html', ...outputs].join(', ')}`);
