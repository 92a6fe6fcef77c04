#!/usr/bin/env node
// `iop-agent`: the compiled CLI (dist/main.js), through scripts/run-built.cjs.
require('../../../scripts/run-built.cjs')('iop-agent', require('node:path').join(__dirname, '..', 'dist/main.js'));
