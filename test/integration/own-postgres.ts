/**
 * A PostgreSQL server of the test's own (initdb + pg_ctl from the Debian PostgreSQL install, in a
 * temporary directory, on a free loopback port, trust auth), so a test may stop it mid-run and
 * start it again on the same data; the machine's shared server is never touched. initdb refuses
 * to run as root: as root the commands run as the `postgres` user (`runuser`).
 */
import { execFile, execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Where Debian's postgresql-15 package puts its server binaries (IOP_TEST_PG_BIN overrides). */
export const PG_BIN = process.env.IOP_TEST_PG_BIN ?? '/usr/lib/postgresql/15/bin';

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export function havePostgresBinaries(): boolean {
  return existsSync(path.join(PG_BIN, 'initdb')) && existsSync(path.join(PG_BIN, 'pg_ctl'));
}

export class OwnPostgres {
  private readonly dir: string;
  private readonly asRoot = typeof process.getuid === 'function' && process.getuid() === 0;

  private constructor(readonly port: number) {
    this.dir = mkdtempSync(path.join(os.tmpdir(), 'iop-pg-'));
    if (this.asRoot) chownSync(this.dir, postgresUid(), postgresGid());
  }

  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  /** Creates the cluster and starts it. */
  static async create(): Promise<OwnPostgres> {
    const pg = new OwnPostgres(await freePort());
    await pg.command('initdb', ['-D', pg.data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
    await pg.start();
    return pg;
  }

  private get data(): string {
    return path.join(this.dir, 'data');
  }

  async start(): Promise<void> {
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
    await this.command('pg_ctl', [
      '-D',
      this.data,
      '-o',
      options,
      '-l',
      path.join(this.dir, 'log'),
      '-w',
      '-t',
      '30',
      'start',
    ]);
  }

  /** Stops the server the way a crash does (`-m immediate`: connections cut, no checkpoint). */
  async stop(): Promise<void> {
    await this.command('pg_ctl', ['-D', this.data, '-m', 'immediate', '-w', 'stop']);
  }

  /** Stops the server (if running) and removes its directory. */
  async destroy(): Promise<void> {
    await this.stop().catch(() => {});
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async command(name: string, args: string[]): Promise<void> {
    const binary = path.join(PG_BIN, name);
    if (this.asRoot) await run('runuser', ['-u', 'postgres', '--', binary, ...args], { cwd: this.dir });
    else await run(binary, args, { cwd: this.dir });
  }
}

function postgresUid(): number {
  return Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
}

function postgresGid(): number {
  return Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
}
