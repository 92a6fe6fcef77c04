#!/usr/bin/env node
// `iop-agent`: runs the compiled CLI (dist/main.js). This shim exists from the clone on, so npm links the
// command at install time, before the first build.
'use strict';
const path = require('node:path');
const entry = path.join(__dirname, '..', 'dist/main.js');
try {
  require.resolve(entry);
} catch {
  process.stderr.write('iop-agent: not built yet; run `npm run build` (or `npm start`) in the repository first\n');
  process.exit(2);
}
require(entry);
