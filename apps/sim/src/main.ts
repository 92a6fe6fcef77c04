#!/usr/bin/env node
/**
 * `iop-sim` entry point: parses the command line, starts the sim, prints one JSON line
 * `{"event":"ready","port":<n>,"host":"...","kvEventsEndpoint"?,"kvEventsReplayEndpoint"?}` (its readiness line) to
 * stdout, and closes on SIGTERM/SIGINT.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { helpText, parseCli, setCliVersion } from './cli.js';
import { startSim } from './server.js';

/** The sim's version, from its package.json. */
const SIM_VERSION = (JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { version: string })
  .version;

async function main(): Promise<void> {
  setCliVersion(SIM_VERSION);
  let parsed;
  try {
    parsed = parseCli(process.argv.slice(2));
  } catch (error) {
    // As every iop command reports bad usage (commander's format), exit 2.
    process.stderr.write(`error: ${(error as Error).message}\n(add --help for additional information)\n`);
    process.exitCode = 2;
    return;
  }
  if ('version' in parsed) {
    process.stdout.write(`${SIM_VERSION}\n`);
    return;
  }
  if (parsed.help) {
    process.stdout.write(`${helpText()}\n`);
    return;
  }
  const sim = await startSim(parsed.options);
  const kvEvents =
    sim.kvEvents === undefined
      ? {}
      : { kvEventsEndpoint: sim.kvEvents.endpoint, kvEventsReplayEndpoint: sim.kvEvents.replayEndpoint };
  process.stdout.write(`${JSON.stringify({ event: 'ready', port: sim.port, host: sim.host, ...kvEvents })}\n`);
  const shutdown = (): void => {
    sim.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
}

main().catch((error: unknown) => {
  process.stderr.write(`iop-sim: ${(error as Error).message}\n`);
  process.exit(1);
});
