// converge apply in a change window (docs/rollouts.md, "Change windows"): stopped before writing (one line, exit 4, no
// request but reads), written where the window says manual: true, and written with --override-window, which the
// history records with who asked.
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/server.js';
import { deploymentYaml, externalDockerSpec, manifestDir, runApplyCli, seedWith, writes } from '../helpers/apply.js';
import { runCapture } from '../helpers/cli.js';
import { dropPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';

/** A window of `kind` open since the start of the current UTC minute for an hour (deny), or one that opened 2 hours ago for 1 hour (allow: now is outside it). */
function windowYaml(kind: 'deny' | 'allow', manual: boolean): string {
  const at = new Date(Date.now() - (kind === 'allow' ? 2 * 3_600_000 : 0));
  return `windows:\n  - kind: ${kind}\n    schedule: "${at.getUTCMinutes()} ${at.getUTCHours()} * * *"\n    duration: 1h\n    manual: ${manual}\n`;
}

describe('converge apply in a change window', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function setup(label: string, windows: string) {
    const emulator = await startEmulator({ seed: seedWith([]), buildMs: 0 });
    const tree = await manifestDir({ 'a.yaml': deploymentYaml('win-apply', externalDockerSpec('docker.io/a:1', 1)) });
    const config = join(tree.dir, '..', `${label}-${Math.random().toString(36).slice(2)}.yaml`);
    await writeFile(config, windows);
    const prefix = testPrefix(label);
    cleanups.push(
      () => emulator.close(),
      () => tree.remove(),
      () => rm(config, { force: true }),
      () => dropPrefix(prefix),
    );
    const args = [
      tree.dir,
      '--config',
      config,
      '--api-url',
      emulator.url,
      '--redis-url',
      REDIS_URL,
      '--redis-prefix',
      prefix,
      '--auto-approve',
    ];
    return { emulator, args, prefix };
  }

  it('stops before writing inside a deny window (exit 4, one line); --override-window writes, and the history says who asked', async () => {
    const { emulator, args, prefix } = await setup('win-deny', windowYaml('deny', false));
    const stopped = await runApplyCli(args, {});
    expect(stopped.code, stopped.stdout + stopped.stderr).toBe(4);
    expect(stopped.stdout).toMatch(
      /^Apply stopped before writing: deny window windows\[0\] \(deny "\d+ \d+ \* \* \*" for 1h, UTC\) is open until \S+Z and allows no manual writes; nothing was written\. Run "converge apply --override-window" to write now, or apply after it ends \(a daemon writes it then\)\.$/m,
    );
    expect(writes(emulator.requestLog)).toEqual([]);
    const json = await runApplyCli([...args, '--output', 'json'], {});
    expect(json.code).toBe(4);
    expect(json.stderr).toMatch(/^converge apply: Apply stopped before writing: deny window windows\[0\]/);
    expect(writes(emulator.requestLog)).toEqual([]);

    const written = await runApplyCli([...args, '--override-window'], {});
    expect(written.code, written.stdout + written.stderr).toBe(0);
    expect(writes(emulator.requestLog).map((r) => r.method)).toEqual(['POST']);
    expect(written.stderr).toContain('change window overridden (--override-window): deny window windows[0]');
    const history = await runCapture([
      'history',
      'win-apply',
      '--output',
      'json',
      '--redis-url',
      REDIS_URL,
      '--redis-prefix',
      prefix,
    ]);
    const events = (JSON.parse(history.stdout) as { events: Array<{ type: string; message: string; by: string }> })
      .events;
    expect(events.find((e) => e.type === 'decided')?.message).toMatch(
      /^create: .*; asked by converge apply --override-window on replica apply@/,
    );
  });

  it('writes inside a deny window that says manual: true, and stops outside every allow window', async () => {
    const manual = await setup('win-manual', windowYaml('deny', true));
    const run = await runApplyCli(manual.args, {});
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(writes(manual.emulator.requestLog).map((r) => r.method)).toEqual(['POST']);

    const outside = await setup('win-allow', windowYaml('allow', false));
    const stopped = await runApplyCli(outside.args, {});
    expect(stopped.code, stopped.stdout + stopped.stderr).toBe(4);
    expect(stopped.stdout).toMatch(
      /Apply stopped before writing: outside every allow window until \S+Z \(the next: windows\[0\] \(allow "\d+ \d+ \* \* \*" for 1h, UTC\)\) and allows no manual writes/,
    );
    expect(writes(outside.emulator.requestLog)).toEqual([]);
  });
});
