/**
 * Launches iop's own processes (sim, edge, agent) from their compiled entry points and follows
 * their JSON lines on stdout. Each process prints one readiness line, `{"event":"ready",…}`
 * (sim and edge: listening, with their ports; agent: registered with an edge, with its
 * `metricsPort`); `ready()` waits for it, so no waiter depends on a log message's wording. Also
 * reads a process's CPU time and memory from /proc (Linux).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { onCpus } from './cpu-pinning.js';

export type LogLine = Record<string, unknown>;

export class Proc {
  readonly lines: LogLine[] = [];
  readonly stderr: string[] = [];
  private waiters: Array<{ predicate: (line: LogLine) => boolean; resolve: (line: LogLine) => void }> = [];
  readonly exited: Promise<number | null>;

  private readonly reader: readline.Interface;

  constructor(
    readonly name: string,
    readonly child: ChildProcess,
    /** Keep at most this many log lines (long benchmarks log a lot). */
    private readonly keepLines = 100_000,
  ) {
    this.reader = readline.createInterface({ input: child.stdout! });
    this.reader.on('line', (text) => {
      let line: LogLine;
      try {
        line = JSON.parse(text) as LogLine;
      } catch {
        line = { text };
      }
      if (this.lines.length < this.keepLines) this.lines.push(line);
      if (this.waiters.length > 0) {
        this.waiters = this.waiters.filter((waiter) => {
          if (!waiter.predicate(line)) return true;
          waiter.resolve(line);
          return false;
        });
      }
    });
    readline.createInterface({ input: child.stderr! }).on('line', (text) => {
      if (this.stderr.length < 1000) this.stderr.push(text);
    });
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  /** Stops reading log lines (the output is still drained): keeps a benchmark's own process out of the measurement. */
  detach(): void {
    this.reader.close();
    this.child.stdout!.resume();
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** Resolves with the first log line (already seen or future) that matches. */
  waitFor(predicate: (line: LogLine) => boolean, timeoutMs = 20_000): Promise<LogLine> {
    const seen = this.lines.find(predicate);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `${this.name}: timed out waiting for a log line; stderr: ${this.stderr.slice(-5).join(' | ')}; last lines: ${JSON.stringify(this.lines.slice(-3))}`,
            ),
          ),
        timeoutMs,
      );
      this.waiters.push({
        predicate,
        resolve: (line) => {
          clearTimeout(timer);
          resolve(line);
        },
      });
    });
  }

  /** Resolves with the process's readiness line, `{"event":"ready",…}`. */
  ready(timeoutMs = 20_000): Promise<LogLine> {
    return this.waitFor((line) => line.event === 'ready', timeoutMs);
  }

  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill(signal);
    await this.exited;
  }
}

/** The repository root (the folder whose package.json declares the workspaces). */
export function repoRoot(from = __dirname): string {
  let dir = from;
  for (;;) {
    const manifest = path.join(dir, 'package.json');
    if (
      existsSync(manifest) &&
      (JSON.parse(readFileSync(manifest, 'utf8')) as { workspaces?: unknown }).workspaces !== undefined
    )
      return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('repository root not found');
    dir = parent;
  }
}

export interface LaunchOptions {
  /** Node options before the script (e.g. `--cpu-prof`). */
  execArgv?: string[];
  /** Run only on these CPUs (taskset's `-c` list, see cpu-pinning.ts); default: any. */
  cpus?: string;
}

/**
 * Starts `node <root>/<script> ...args` (`script` relative to the repository root, or absolute); the child inherits
 * the environment plus `env`.
 */
export function launch(
  name: string,
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv = {},
  options: LaunchOptions = {},
): Proc {
  const root = repoRoot();
  const entry = path.resolve(root, script);
  if (!existsSync(entry)) throw new Error(`${entry} is missing: run \`npm run build\` first`);
  const [command, ...argv] = onCpus(options.cpus, [process.execPath, ...(options.execArgv ?? []), entry, ...args]);
  const child = spawn(command, argv, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  return new Proc(name, child);
}

export interface AgentLaunch {
  /** The edge's tunnel port on 127.0.0.1. */
  tunnelPort: number;
  joinToken: string;
  agentId: string;
  /** The OpenAI-compatible backend (a sim), e.g. `http://127.0.0.1:8000`. */
  backendUrl: string;
  /** Models it serves, comma-separated (`--models`). */
  models: string;
  maxConcurrency: number;
  /** `IOP_LOG_LEVEL`; default info. */
  logLevel?: string;
  /** More flags (e.g. `--kv-events-endpoint`). */
  args?: string[];
  /** The agent's entry point; default this repository's `apps/agent/dist/main.js`. */
  script?: string;
}

/** Starts an agent (`--backend openai`) in front of `backendUrl`, joined to the edge on `tunnelPort`. */
export function launchAgent(name: string, agent: AgentLaunch, options: LaunchOptions = {}): Proc {
  return launch(
    name,
    agent.script ?? 'apps/agent/dist/main.js',
    [
      '--edge',
      `http://127.0.0.1:${agent.tunnelPort}`,
      '--join-token',
      agent.joinToken,
      '--agent-id',
      agent.agentId,
      '--backend',
      'openai',
      '--backend-url',
      agent.backendUrl,
      '--models',
      agent.models,
      '--max-concurrency',
      String(agent.maxConcurrency),
      ...(agent.args ?? []),
    ],
    { IOP_LOG_LEVEL: agent.logLevel ?? 'info' },
    options,
  );
}

export interface ProcStats {
  /** User + system CPU time, ms. */
  cpuMs: number;
  /** Resident set size now, bytes. */
  rssBytes: number;
}

/** Reads /proc/<pid>/stat and /proc/<pid>/status (Linux); CPU at the kernel's clock tick (10 ms). */
export function procStats(pid: number): ProcStats {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return { cpuMs: ticks * 10, rssBytes: rssKb * 1024 };
}
