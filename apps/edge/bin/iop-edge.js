#!/usr/bin/env node
// `iop-edge`: the compiled CLI (dist/main.js), through scripts/run-built.cjs.
require('../../../scripts/run-built.cjs')('iop-edge', require('node:path').join(__dirname, '..', 'dist/main.js'));
