// Helpers of the daemon tests: the built CLI as a child process, its JSON log lines, manifests, polling, Redis cleanup.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dropPrefix, killAllConverge, spawnConverge, type LogLine } from './helpers.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export { MAIN } from './helpers.js';
import { REDIS_URL, testPrefix } from '../helpers/redis.js';
import { until } from '../helpers/until.js';

export { REDIS_URL, testPrefix, until };

/** Removes every key under `prefix` (the e2e helper, with the daemon suite's name). */
export const deletePrefix = dropPrefix;

export type { LogLine };

export interface DaemonChild {
  child: ChildProcess;
  url: string;
  lines: LogLine[];
  stderr: () => string;
  exited: Promise<number | null>;
  waitForLine(match: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
  status(): Promise<DaemonStatusDoc>;
  metricsText(): Promise<string>;
  signal(signal: NodeJS.Signals): void;
}

export interface DaemonStatusDoc {
  reconciles: { total: number; failed: number; byTrigger: Record<string, number> };
  history: Array<{
    id: number;
    trigger: string;
    startedAt: string;
    ok: boolean;
    summary: Record<string, number> | null;
    enqueued: number;
    cycle?: string;
  }>;
  resync: { everyMs: number; cyclesRun: string[] };
  resources: Array<{
    key: string;
    state: string;
    action: string;
    error: string | null;
    heldAtLastGood: boolean;
    drift: { policy: string; fields: string[] } | null;
  }>;
  orphans: string[];
  [field: string]: unknown;
}

/**
 * Starts `converge run DIR` (a child of the run's build, through the e2e helpers) with a free status port;
 * resolves once the status server logs that it listens.
 */
export async function startDaemonChild(dir: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<DaemonChild> {
  const c = spawnConverge(
    ['run', dir, '--http-port', '0', '--http-host', '127.0.0.1', '--redis-url', REDIS_URL, ...args],
    env,
  );
  const waitForLine = (match: (line: LogLine) => boolean, timeoutMs = 15_000): Promise<LogLine> =>
    c.waitForLine(match, timeoutMs);
  // Starting node and loading the CLI is not under test: a loaded machine gets a minute for it.
  const listening = await waitForLine((l) => l.msg === 'status server listening', 60_000);
  const url = String(listening.url);
  return {
    child: c.child,
    url,
    lines: c.lines,
    stderr: c.stderr,
    exited: c.exited.then(({ code }) => code),
    waitForLine,
    async status() {
      return (await (await fetch(`${url}/status`)).json()) as DaemonStatusDoc;
    },
    async metricsText() {
      return (await fetch(`${url}/metrics`)).text();
    },
    signal(signal) {
      c.child.kill(signal);
    },
  };
}

/** Kills every daemon child still running (afterAll). */
export const killAll = killAllConverge;

export async function writeManifest(path: string, text: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, text);
}

/** An editor's atomic save: write a temporary file beside the target, then rename it over the target. */
export async function atomicSave(path: string, text: string): Promise<void> {
  const temp = join(dirname(path), `.${randomBytes(3).toString('hex')}.tmp`);
  await writeFile(temp, text);
  await rename(temp, path);
}
