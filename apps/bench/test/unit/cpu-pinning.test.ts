import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { cpuPlan, onCpus, pinProcess } from '../../src/cpu-pinning';

const tasksetPresent = process.platform === 'linux' && spawnSync('taskset', ['-V'], { stdio: 'ignore' }).status === 0;
const multiCore = os.availableParallelism() >= 2;

/** The CPUs a process may run on, from /proc/<pid>/status (`Cpus_allowed_list`, e.g. `0-1`). */
function allowedCpus(pid: number): string {
  return /Cpus_allowed_list:\s*(\S+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]!;
}

describe('cpuPlan', () => {
  it('shares every CPU when BENCH_PIN=0', () => {
    expect(cpuPlan({ BENCH_PIN: '0' })).toBe('BENCH_PIN=0');
  });

  (tasksetPresent && multiCore ? it : it.skip)('puts the gateway on the last CPU and the load on the others', () => {
    const last = os.availableParallelism() - 1;
    expect(cpuPlan({})).toEqual({ gateway: String(last), load: last === 1 ? '0' : `0-${last - 1}` });
  });
});

describe('onCpus', () => {
  it('runs the command as it is without a CPU list', () => {
    expect(onCpus(undefined, ['node', 'main.js'])).toEqual(['node', 'main.js']);
  });

  it('prefixes taskset with the CPU list', () => {
    expect(onCpus('1', ['node', 'main.js', '--port', '0'])).toEqual([
      'taskset',
      '-c',
      '1',
      'node',
      'main.js',
      '--port',
      '0',
    ]);
  });

  (tasksetPresent && multiCore ? it : it.skip)(
    'starts a child whose pid is the program and whose threads stay on the CPUs',
    async () => {
      const [command, ...args] = onCpus('0', [process.execPath, '-e', 'setTimeout(() => {}, 5000)']);
      const child = spawn(command, args, { stdio: 'ignore' });
      try {
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(readFileSync(`/proc/${child.pid!}/comm`, 'utf8').trim()).toBe('node');
        expect(allowedCpus(child.pid!)).toBe('0');
        pinProcess(child.pid!, '1');
        expect(allowedCpus(child.pid!)).toBe('1');
      } finally {
        child.kill('SIGKILL');
      }
    },
  );
});

describe('pinProcess', () => {
  (tasksetPresent ? it : it.skip)('throws with taskset’s reason for a CPU this machine does not have', () => {
    const missing = String(os.availableParallelism() + 64);
    expect(() => pinProcess(process.pid, missing)).toThrow(
      new RegExp(`taskset -a -c -p ${missing} ${process.pid} failed: .*Invalid argument`),
    );
  });
});
