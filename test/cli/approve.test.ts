// `apply` on a terminal asks before it writes; --auto-approve, a non-terminal, JSON and a saved plan do not (docs/commands.md).
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { askApproval } from '../../src/cli/approve.js';
import { declaredInKey } from '../../src/store/applied-state.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { deploymentYaml, externalDockerSpec, manifestDir, seedWith, writes } from '../helpers/apply.js';
import { runCapture } from '../helpers/cli.js';
import { dropPrefix, keysUnder, rawRedis, REDIS_URL, testPrefix } from '../helpers/redis.js';

const QUESTION = 'Only "yes" is accepted: ';
const CANCELLED = 'Apply cancelled: nothing was written.\n';

/**
 * A terminal's input that answers `typed` (null: Ctrl-D, the end of input) once something starts reading it, and
 * remembers how many requests that write the service had received at that moment.
 */
function terminal(emulator: RunningEmulator, typed: string | null, isTTY = true) {
  const state: { writesWhenRead: number | undefined } = { writesWhenRead: undefined };
  const stream = new Readable({
    read() {
      if (state.writesWhenRead !== undefined) return;
      state.writesWhenRead = writes(emulator.requestLog).length;
      this.push(typed);
    },
  });
  return {
    stdin: Object.assign(stream, { isTTY }),
    get read() {
      return state.writesWhenRead !== undefined;
    },
    get writesWhenRead() {
      return state.writesWhenRead;
    },
  };
}

describe('converge apply on a terminal: the plan, then one question', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  /** An empty service, a tree that creates `a`, a prefix of its own, and `apply` with given extras. */
  async function setup() {
    const emulator = await startEmulator({ seed: seedWith([]), buildMs: 0 });
    const tree = await manifestDir({ 'a.yaml': deploymentYaml('a', externalDockerSpec('docker.io/a:1', 1)) });
    const prefix = testPrefix('approve');
    cleanups.push(
      () => emulator.close(),
      () => tree.remove(),
      () => dropPrefix(prefix),
    );
    const flags = ['--api-url', emulator.url, '--redis-url', REDIS_URL, '--redis-prefix', prefix];
    const apply = (
      stdin: NodeJS.ReadableStream & { isTTY?: boolean },
      extra: string[] = [],
      env: NodeJS.ProcessEnv = {},
      tty = true,
    ) => runCapture(['apply', tree.dir, ...flags, ...extra], env, { tty, stdin });
    return { emulator, tree, prefix, flags, apply };
  }

  it('"no": prints the plan and the question, then one line, exit 1: no request that writes, nothing enqueued or recorded', async () => {
    const s = await setup();
    const input = terminal(s.emulator, 'no\n');
    const run = await s.apply(input.stdin);
    expect(run.code, run.stderr).toBe(1);
    expect(run.stdout).toContain(`Apply these changes to ${s.emulator.url}? ${QUESTION}`);
    expect(run.stdout.indexOf('Plan: 1 to create')).toBeGreaterThanOrEqual(0);
    expect(run.stdout.indexOf('Plan: 1 to create')).toBeLessThan(run.stdout.indexOf(QUESTION));
    expect(run.stdout.endsWith(CANCELLED)).toBe(true);
    expect(run.stdout).not.toContain('Apply complete');
    expect(input.writesWhenRead).toBe(0);
    expect(writes(s.emulator.requestLog)).toEqual([]);
    // Nothing enqueued (no key of the apply queue but the one its opening writes) and nothing recorded of the manifests.
    const redis = rawRedis();
    cleanups.push(async () => void redis.disconnect());
    const keys = await keysUnder(redis, s.prefix);
    expect(keys.filter((k) => k.includes(':converge-apply:') && !k.endsWith(':converge-apply:meta'))).toEqual([]);
    expect(keys).not.toContain(declaredInKey(s.prefix));
    // The same apply answered "yes" does record it: the check above looks at the right key.
    expect((await s.apply(terminal(s.emulator, 'yes\n').stdin)).code).toBe(0);
    expect(await keysUnder(redis, s.prefix)).toContain(declaredInKey(s.prefix));
  });

  it('"yes": asked before anything is written, then applies as without the question', async () => {
    const s = await setup();
    const input = terminal(s.emulator, 'yes\n');
    const run = await s.apply(input.stdin);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(QUESTION);
    expect(input.writesWhenRead).toBe(0);
    expect(run.stdout.indexOf(QUESTION)).toBeLessThan(run.stdout.indexOf('Apply complete: 1 done'));
    expect(writes(s.emulator.requestLog).map((e) => `${e.method} ${(e.body as { name?: string }).name}`)).toEqual([
      'POST a',
    ]);
  });

  it('anything but "yes" cancels: Ctrl-D (end of input), Ctrl-C, an empty line, "Yes", "y"', async () => {
    const s = await setup();
    for (const typed of [null, '\x03', '\n', 'Yes\n', 'y\n']) {
      const input = terminal(s.emulator, typed);
      const run = await s.apply(input.stdin);
      expect(run.code, JSON.stringify(typed)).toBe(1);
      expect(run.stdout).toContain(QUESTION);
      expect(run.stdout.endsWith(CANCELLED), JSON.stringify(typed)).toBe(true);
    }
    expect(writes(s.emulator.requestLog)).toEqual([]);
  });

  it('not asked: --auto-approve, CONVERGE_AUTO_APPROVE, stdin or stdout not a terminal, --output json', async () => {
    const s = await setup();
    const cases: Array<{ what: string; tty?: boolean; stdinTTY?: boolean; extra?: string[]; env?: NodeJS.ProcessEnv }> =
      [
        { what: '--auto-approve', extra: ['--auto-approve'] },
        { what: 'CONVERGE_AUTO_APPROVE', env: { CONVERGE_AUTO_APPROVE: 'true' } },
        { what: 'stdin not a terminal (CI, a pipe)', stdinTTY: false },
        { what: 'stdout not a terminal', tty: false },
        { what: '--output json', extra: ['--output', 'json'] },
      ];
    for (const [i, c] of cases.entries()) {
      // Each case changes max_scale, so there is something to write; a question would read "no" and write nothing.
      await writeFile(join(s.tree.dir, 'a.yaml'), deploymentYaml('a', externalDockerSpec('docker.io/a:1', i + 1)));
      const input = terminal(s.emulator, 'no\n', c.stdinTTY ?? true);
      const before = writes(s.emulator.requestLog).length;
      const run = await runCapture(['apply', s.tree.dir, ...s.flags, ...(c.extra ?? [])], c.env ?? {}, {
        tty: c.tty ?? true,
        stdin: input.stdin,
      });
      expect(run.code, `${c.what}: ${run.stderr}`).toBe(0);
      expect(run.stdout, c.what).not.toContain(QUESTION);
      expect(input.read, c.what).toBe(false);
      expect(writes(s.emulator.requestLog).length, c.what).toBe(before + 1);
    }
  });

  it('not asked: nothing to change', async () => {
    const s = await setup();
    expect((await s.apply(terminal(s.emulator, 'yes\n').stdin)).code).toBe(0);
    const input = terminal(s.emulator, 'no\n');
    const before = writes(s.emulator.requestLog).length;
    const run = await s.apply(input.stdin);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).not.toContain(QUESTION);
    expect(input.read).toBe(false);
    expect(writes(s.emulator.requestLog).length).toBe(before);
  });

  it('not asked: apply --plan FILE, the plan a person reviewed', async () => {
    const s = await setup();
    const file = join(s.tree.dir, '..', `${s.prefix.replace(/\W/g, '')}.plan`);
    cleanups.push(() => rm(file, { force: true }));
    const planned = await runCapture(['plan', s.tree.dir, '--out', file, ...s.flags], {});
    expect(planned.code, planned.stderr).toBe(0);
    const input = terminal(s.emulator, 'no\n');
    const run = await runCapture(['apply', '--plan', file, ...s.flags], {}, { tty: true, stdin: input.stdin });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).not.toContain(QUESTION);
    expect(input.read).toBe(false);
    expect(writes(s.emulator.requestLog).map((e) => e.method)).toEqual(['POST']);
  });
});

describe('askApproval', () => {
  it('a signal to the process (SIGINT, SIGTERM) while it waits ends the question unanswered', async () => {
    const stdin = Object.assign(new PassThrough(), { isTTY: true });
    const stdout = Object.assign(new PassThrough(), { isTTY: true });
    const controller = new AbortController();
    const asked = askApproval({ stdin, stdout }, 'Apply? ', controller.signal);
    controller.abort();
    expect(await asked).toEqual({ approved: false, ended: 'interrupt' });
  });

  it('blanks around "yes" are not part of the answer', async () => {
    const stdin = Object.assign(new PassThrough(), { isTTY: true });
    const stdout = Object.assign(new PassThrough(), { isTTY: true });
    const asked = askApproval({ stdin, stdout }, 'Apply? ');
    stdin.write('  yes \n');
    expect(await asked).toEqual({ approved: true });
  });
});
