// Through the built binary on a real pseudo-terminal (util-linux `script`): apply asks, Ctrl-C cancels, "yes" writes.
import { spawn, spawnSync } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, type TestContext } from 'vitest';
import { startEmulator } from '../../src/emulator/server.js';
import { seedWith, writes } from '../helpers/apply.js';
import { dockerDeploymentYaml, MAIN, REDIS_URL, ROOT, tempDir, until, writeFiles } from './helpers.js';
import { atEnd, prefixOf } from './scoped.js';

const QUESTION = 'Only "yes" is accepted: ';
const hasScript = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;

/** Single-quoted for sh. */
function quoted(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * `converge ARGS` inside `script`, whose pseudo-terminal is the command's stdin and stdout; what the test writes to
 * script's stdin is typed on that terminal. Resolves the terminal's output so far and the exit code once it ends.
 */
function onTerminal(t: TestContext, args: string[]) {
  const command = [process.execPath, MAIN, ...args].map(quoted).join(' ');
  const child = spawn('script', ['-qec', command, '/dev/null'], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: '1' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  atEnd(t, () => child.exitCode === null && child.kill('SIGKILL'));
  let screen = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (screen += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (screen += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { screen: () => screen, type: (keys: string) => child.stdin.write(keys), exited };
}

describe('apply on a real terminal', { timeout: 90_000 }, () => {
  it.skipIf(!hasScript)(
    'asks after the plan; Ctrl-C cancels with nothing written; "yes" applies and the process ends',
    async (t) => {
      const e = await startEmulator({ seed: seedWith([]), buildMs: 0 });
      atEnd(t, () => e.close());
      const dir = await tempDir('approve-tty');
      atEnd(t, () => rm(dir, { recursive: true, force: true }));
      await writeFiles(join(dir, 'm'), { 'a.yaml': dockerDeploymentYaml('tty-a', { maxScale: 1 }) });
      const args = [
        'apply',
        join(dir, 'm'),
        '--api-url',
        e.url,
        '--redis-url',
        REDIS_URL,
        '--redis-prefix',
        prefixOf(t, 'approve-tty'),
      ];

      const cancelled = onTerminal(t, args);
      await until('the question', () => cancelled.screen().includes(QUESTION), 30_000);
      expect(writes(e.requestLog)).toEqual([]);
      cancelled.type('\x03');
      expect(await cancelled.exited).toBe(1);
      expect(cancelled.screen()).toContain('Apply cancelled: nothing was written.');
      expect(writes(e.requestLog)).toEqual([]);

      const approved = onTerminal(t, args);
      await until('the question', () => approved.screen().includes(QUESTION), 30_000);
      expect(approved.screen()).toContain(`Apply these changes to ${e.url}?`);
      expect(writes(e.requestLog)).toEqual([]);
      approved.type('yes\r');
      expect(await approved.exited).toBe(0);
      expect(approved.screen()).toContain('Apply complete: 1 done');
      expect(writes(e.requestLog).map((w) => `${w.method} ${(w.body as { name?: string }).name}`)).toEqual([
        'POST tty-a',
      ]);
    },
  );
});
