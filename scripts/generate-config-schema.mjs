// Writes the published JSON Schemas of the config files (schema/iop-edge.schema.json,
// schema/iop-agent.schema.json) from the apps' TypeBox schemas. Needs the apps built:
// `npm run generate:schema` builds them first; `npm run check:generated` fails when the
// committed files are stale (as a unit test does: apps/edge/test/unit/config-json-schema.test.ts).
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { edgeJsonSchema } = require('../apps/edge/dist/config-schema.js');
const { agentJsonSchema } = require('../apps/agent/dist/options-schema.js');

const write = (name, schema) =>
  writeFileSync(new URL(`../schema/${name}`, import.meta.url), `${JSON.stringify(schema, null, 2)}\n`);
write('iop-edge.schema.json', edgeJsonSchema());
write('iop-agent.schema.json', agentJsonSchema());
