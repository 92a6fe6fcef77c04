/**
 * Where the gateway bench runs its processes. A gateway is measured on a core of its own, as
 * gateways are compared (each gateway on one core; iop's edge and agent together on that one
 * core), so the load generator and the sim, which do as much work per token as the gateway, do
 * not compete with it for a core: the gateway's processes run on the last CPU, the bench's own
 * process (the load generator) and the sim on the others.
 *
 * Linux only, through util-linux's `taskset` (sched_setaffinity(2)); off when `BENCH_PIN=0`, with
 * fewer than 2 CPUs, or when `taskset` is missing (the bench then prints why and shares every CPU).
 */
import { spawnSync } from 'node:child_process';
import os from 'node:os';

export interface CpuPlan {
  /** CPU list (taskset's `-c` syntax) of the edge, the agent and the edge-alone. */
  gateway: string;
  /** CPU list of the load generator and the sim. */
  load: string;
}

/** The plan for this machine, or a sentence saying why every process shares every CPU. */
export function cpuPlan(env: NodeJS.ProcessEnv = process.env): CpuPlan | string {
  if (env.BENCH_PIN === '0') return 'BENCH_PIN=0';
  if (process.platform !== 'linux') return `${process.platform} (taskset is Linux-only)`;
  const cpus = os.availableParallelism();
  if (cpus < 2) return 'one CPU';
  if (spawnSync('taskset', ['-V'], { stdio: 'ignore' }).status !== 0) return 'taskset not found (util-linux)';
  const last = cpus - 1;
  return { gateway: String(last), load: last === 1 ? '0' : `0-${last - 1}` };
}

/**
 * Pins every thread of process `pid` to `cpus`. Threads it starts later inherit the mask.
 * @throws Error when taskset fails (the CPU list is not in this process's allowed set).
 */
export function pinProcess(pid: number, cpus: string): void {
  const result = spawnSync('taskset', ['-a', '-c', '-p', cpus, String(pid)], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`taskset -a -c -p ${cpus} ${pid} failed: ${result.stderr.trim()}`);
}

/** The command that starts `argv` on `cpus` (taskset execs it, so the child's pid is the program's). */
export function onCpus(cpus: string | undefined, argv: [string, ...string[]]): [string, ...string[]] {
  return cpus === undefined ? argv : ['taskset', '-c', cpus, ...argv];
}
