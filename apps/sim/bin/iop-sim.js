#!/usr/bin/env node
// `iop-sim`: the compiled CLI (dist/main.js), through scripts/run-built.cjs.
require('../../../scripts/run-built.cjs')('iop-sim', require('node:path').join(__dirname, '..', 'dist/main.js'));
