#!/usr/bin/env node
// `iop-bench`: the compiled CLI (dist/cli.js), through scripts/run-built.cjs.
require('../../../scripts/run-built.cjs')('iop-bench', require('node:path').join(__dirname, '..', 'dist/cli.js'));
