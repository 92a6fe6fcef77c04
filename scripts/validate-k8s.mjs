#!/usr/bin/env node
/**
 * Renders every Kustomize overlay of deploy/k8s/overlays with `kubectl kustomize` and validates
 * each object offline against the Kubernetes API schemas (kubernetes-models: the OpenAPI schemas
 * of Kubernetes 1.33 compiled to ajv validators) and the prometheus-operator CRD schemas
 * (@kubernetes-models/prometheus-operator). No cluster and no network are needed.
 *
 * The overlays read secrets from files the operator writes (`iop-secrets.env` from
 * `iop-secrets.env.example`, …), which are never committed: each overlay is rendered from a copy of
 * deploy/ in a temporary directory where those files are written with test values (each commented
 * `# NAME=` line of an example uncommented), and it must also fail to render while they are absent.
 * The PrometheusRule must carry exactly the groups of deploy/prometheus/iop-alerts.yml.
 *
 * Usage: node scripts/validate-k8s.mjs [--overlay NAME]... [--write-rules] [--stage DIR]
 *   --write-rules  rewrites deploy/k8s/components/monitoring/prometheus-rule.yaml from the rules file;
 *   --stage DIR    only writes the copy of deploy/ with the operator's files into DIR/deploy (tests
 *                  render variants of it with `kubectl kustomize`).
 * Exit 0 when every overlay is valid, 1 with every problem on stderr, 2 on bad usage.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, isDeepStrictEqual } from 'node:util';
import { parse, parseAllDocuments, stringify } from 'yaml';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OVERLAYS = path.join(ROOT, 'deploy/k8s/overlays');
const RULES_FILE = path.join(ROOT, 'deploy/prometheus/iop-alerts.yml');
const RULE_OBJECT_FILE = path.join(ROOT, 'deploy/k8s/components/monitoring/prometheus-rule.yaml');
const require = createRequire(import.meta.url);

/** The value written for a secret line of an example file: one per name, longer than every minLength. */
export function testSecret(name) {
  return `test-${name.toLowerCase().replaceAll('_', '-')}-0123456789`;
}
/** Files an overlay needs that the operator writes, with what CI writes there instead. */
const OPERATOR_FILES = {
  'tunnel-ca.crt': '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n',
};

/** The overlay names (folders of deploy/k8s/overlays). */
export function overlayNames() {
  return readdirSync(OVERLAYS, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
}

/** An example env file with its commented `# NAME=value` lines uncommented (value or `testSecret(NAME)`). */
export function exampleValues(text) {
  return text
    .split('\n')
    .map((line) => /^# ([A-Z][A-Z0-9_]*)=(.*)$/.exec(line))
    .filter((match) => match !== null)
    .map(([, name, value]) => `${name}=${value === '' ? testSecret(name) : value}`)
    .join('\n');
}

/**
 * Copies deploy/ to a temporary directory; with `withOperatorFiles`, writes each overlay's
 * operator-written files there. @returns the copy's deploy/ path and a cleanup function.
 */
function stage(withOperatorFiles, dir = mkdtempSync(path.join(tmpdir(), 'iop-k8s-'))) {
  cpSync(path.join(ROOT, 'deploy'), path.join(dir, 'deploy'), {
    recursive: true,
    // The operator's own files, if any are lying in this checkout, are not the ones validated.
    filter: (source) => !/(iop-secrets|iop-storage)\.env$|tunnel-ca\.crt$/.test(source),
  });
  if (withOperatorFiles) {
    for (const name of overlayNames()) {
      const folder = path.join(dir, 'deploy/k8s/overlays', name);
      for (const file of readdirSync(folder)) {
        if (file.endsWith('.env.example'))
          writeFileSync(
            path.join(folder, file.slice(0, -'.example'.length)),
            exampleValues(readFileSync(path.join(folder, file), 'utf8')),
          );
      }
      const kustomization = readFileSync(path.join(folder, 'kustomization.yaml'), 'utf8');
      for (const [file, text] of Object.entries(OPERATOR_FILES))
        if (kustomization.includes(file)) writeFileSync(path.join(folder, file), text);
    }
  }
  return { deploy: path.join(dir, 'deploy'), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

function kustomize(folder) {
  return spawnSync('kubectl', ['kustomize', folder], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
}

/**
 * Renders one overlay as CI does (operator files written with test values).
 * @returns {object[]} the rendered objects.
 * @throws Error with kustomize's message when it does not render.
 */
export function renderOverlay(name) {
  const { deploy, cleanup } = stage(true);
  try {
    const result = kustomize(path.join(deploy, 'k8s/overlays', name));
    if (result.status !== 0)
      throw new Error(`${name}: kubectl kustomize failed: ${result.stderr.trim() || result.error?.message}`);
    return parseAllDocuments(result.stdout).map((document) => document.toJS());
  } finally {
    cleanup();
  }
}

/** Renders one overlay without the operator's files. @returns kustomize's exit status and stderr. */
export function renderWithoutOperatorFiles(name) {
  const { deploy, cleanup } = stage(false);
  try {
    const result = kustomize(path.join(deploy, 'k8s/overlays', name));
    return { status: result.status, stderr: result.stderr };
  } finally {
    cleanup();
  }
}

/** The model class of `apiVersion`/`kind`, or undefined for a kind no schema package covers. */
function modelOf(apiVersion, kind) {
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
  const module =
    group === 'monitoring.coreos.com'
      ? `@kubernetes-models/prometheus-operator/${group}/${version}`
      : `kubernetes-models/${group === '' ? '' : `${group}/`}${version}`;
  try {
    return require(module)[kind];
  } catch {
    return undefined;
  }
}

/** Schema problems of one object (empty when valid). */
export function schemaProblems(object) {
  const where = `${object?.kind ?? '?'}/${object?.metadata?.name ?? '?'}`;
  if (typeof object?.apiVersion !== 'string' || typeof object?.kind !== 'string')
    return [`${where}: no apiVersion or kind`];
  const Model = modelOf(object.apiVersion, object.kind);
  if (Model === undefined) return [`${where}: no schema for ${object.apiVersion} ${object.kind}`];
  // kustomize wraps the base64 of a Secret's file at 76 columns; the API server's decoder (Go's
  // encoding/base64) skips those newlines, the schema's `byte` format does not.
  const data =
    object.kind === 'Secret' && object.data !== undefined
      ? Object.fromEntries(
          Object.entries(object.data).map(([key, value]) => [key, String(value).replace(/[\r\n]/g, '')]),
        )
      : object.data;
  try {
    new Model(data === undefined ? object : { ...object, data }).validate();
    return [];
  } catch (error) {
    return [`${where}: ${error.message}`];
  }
}

/** The PrometheusRule object the rules file gives. */
function ruleObject() {
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: { name: 'iop', labels: { 'app.kubernetes.io/name': 'iop' } },
    spec: parse(readFileSync(RULES_FILE, 'utf8')),
  };
}

/** Every problem of one overlay: rendering, schemas, the rules' copy, refusal without secrets. */
export function validateOverlay(name) {
  const problems = [];
  let objects;
  try {
    objects = renderOverlay(name);
  } catch (error) {
    return [error.message];
  }
  for (const object of objects) problems.push(...schemaProblems(object));
  const expected = ruleObject().spec;
  for (const rule of objects.filter((object) => object.kind === 'PrometheusRule'))
    if (!isDeepStrictEqual(rule.spec, expected))
      problems.push(
        `PrometheusRule/${rule.metadata.name}: its groups differ from deploy/prometheus/iop-alerts.yml (run --write-rules)`,
      );
  const refused = renderWithoutOperatorFiles(name);
  if (refused.status === 0) problems.push(`${name}: renders without the operator's secret files; it must refuse`);
  return problems.map((problem) => `${name}: ${problem}`);
}

function main() {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        overlay: { type: 'string', multiple: true },
        'write-rules': { type: 'boolean' },
        stage: { type: 'string' },
      },
      strict: true,
    }));
  } catch (error) {
    process.stderr.write(`validate-k8s: ${error.message}\n`);
    process.exit(2);
  }
  if (values['write-rules']) {
    const header = readFileSync(RULE_OBJECT_FILE, 'utf8')
      .split('\n')
      .filter((line) => line.startsWith('#'));
    writeFileSync(RULE_OBJECT_FILE, `${header.join('\n')}\n${stringify(ruleObject(), { lineWidth: 0 })}`);
  }
  if (values.stage !== undefined) {
    stage(true, path.resolve(values.stage));
    process.exit(0);
  }
  try {
    execFileSync('kubectl', ['version', '--client'], { stdio: 'ignore' });
  } catch {
    process.stderr.write('validate-k8s: kubectl is not installed (it renders the overlays: kubectl kustomize)\n');
    process.exit(1);
  }
  const names = values.overlay ?? overlayNames();
  let failed = false;
  for (const name of names) {
    if (!existsSync(path.join(OVERLAYS, name, 'kustomization.yaml'))) {
      process.stderr.write(`validate-k8s: no overlay ${name}\n`);
      process.exit(2);
    }
    const problems = validateOverlay(name);
    if (problems.length > 0) {
      failed = true;
      process.stderr.write(
        `deploy/k8s/overlays/${name}: invalid\n${problems.map((problem) => `  - ${problem}`).join('\n')}\n`,
      );
    } else {
      process.stdout.write(
        `deploy/k8s/overlays/${name}: renders, valid against the Kubernetes and prometheus-operator schemas; refuses to render without its secrets\n`,
      );
    }
  }
  process.exit(failed ? 1 : 0);
}

if (import.meta.url === `file://${process.argv[1]}`) main();
