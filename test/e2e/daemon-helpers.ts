// Helpers of the daemon tests: the built CLI as a child process, its JSON log lines, manifests, polling, Redis cleanup.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { dropPrefix, killAllConverge, spawnConverge, type LogLine } from './helpers.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export { MAIN } from './helpers.js';
export const REDIS_URL = process.env.CONVERGE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A Redis prefix of this test run (the global setup's, so its teardown removes leftovers), unique per call. */
export function testPrefix(label: string): string {
  return `${process.env.CONVERGE_TEST_PREFIX ?? '{cvt-local}'}${label}-${randomBytes(3).toString('hex')}`;
}

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
  history: Array<{ id: number; trigger: string; startedAt: string; ok: boolean; summary: Record<string, number> | null; enqueued: number; cycle?: string }>;
  resync: { everyMs: number; cyclesRun: string[] };
  resources: Array<{ key: string; state: string; action: string; error: string | null; heldAtLastGood: boolean; drift: { policy: string; fields: string[] } | null }>;
  orphans: string[];
  [field: string]: unknown;
}

/**
 * Starts `converge run DIR` (a child of the run's build, through the e2e helpers) with a free status port;
 * resolves once the status server logs that it listens.
 */
export async function startDaemonChild(dir: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<DaemonChild> {
  const c = spawnConverge(['run', dir, '--http-port', '0', '--http-host', '127.0.0.1', '--redis-url', REDIS_URL, ...args], env);
  const waitForLine = (match: (line: LogLine) => boolean, timeoutMs = 15_000): Promise<LogLine> => c.waitForLine(match, timeoutMs);
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

/** Polls `check` until it returns a truthy value; throws with `what` after `timeoutMs`. */
export async function until<T>(what: string, check: () => T | Promise<T>, timeoutMs = 10_000, everyMs = 50): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (${String(last)})` : ''}`);
    await sleep(everyMs);
  }
}

/** A Deployment manifest the emulator accepts (internal_docker: image_uri required). */
export function deploymentYaml(name: string, maxScale: number, annotations: Record<string, string> = {}): string {
  const notes = Object.entries(annotations);
  return [
    'apiVersion: converge/v1',
    'kind: Deployment',
    'metadata:',
    `  name: ${name}`,
    ...(notes.length ? ['  annotations:', ...notes.map(([k, v]) => `    ${k}: "${v}"`)] : []),
    'spec:',
    '  source: internal_docker',
    '  source_config:',
    `    resource_spec: { max_scale: ${maxScale} }`,
    '  source_revision_config:',
    `    image_uri: registry.example.com/${name}:1`,
    '',
  ].join('\n');
}

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
