// Through the built binary: CONVERGE_PLAN_KEY fails closed. Set but empty, it is an error wherever it is read; a signed
// plan read with no key is refused unless --skip-signature-check; nothing is written either way (docs/saved-plans.md).
import { readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, type TestContext } from 'vitest';
import { startEmulator } from '../../src/emulator/server.js';
import { startCommentHost } from '../helpers/comment-host.js';
import { writes } from '../helpers/apply.js';
import { REDIS_URL } from '../helpers/redis.js';
import { dockerDeploymentYaml, runConverge, tempDir, writeFiles } from './helpers.js';
import { atEnd, prefixOf } from './scoped.js';

const KEY = 'plan-key-0123456789abcdef0123456789abcdef';

/** An emulator with nothing live, a manifest directory of two deployments, and the service and Redis flags. */
async function setup(t: TestContext, label: string) {
  const e = await startEmulator({ seed: {}, buildMs: 0 });
  atEnd(t, () => e.close());
  const dir = await tempDir(label);
  atEnd(t, () => rm(dir, { recursive: true, force: true }));
  const manifestDir = join(dir, 'manifests');
  await writeFiles(manifestDir, {
    'a.yaml': dockerDeploymentYaml('pk-a', { maxScale: 2 }),
    'b.yaml': dockerDeploymentYaml('pk-b', { maxScale: 2 }),
  });
  const flags = ['--api-url', e.url, '--redis-url', REDIS_URL, '--redis-prefix', prefixOf(t, label)];
  const nonGets = () => writes(e.requestLog).length;
  return { e, dir, manifestDir, flags, nonGets };
}

/** Refused: exit 1, one line on stderr matching `message`, the key in no output. */
function expectRefused(
  run: { code: number | null; stdout: string; stderr: string },
  command: string,
  message: RegExp,
): void {
  expect(run.code, run.stdout + run.stderr).toBe(1);
  expect(run.stderr.trim().split('\n')).toHaveLength(1);
  expect(run.stderr).toMatch(new RegExp(`^converge ${command}: `));
  expect(run.stderr.trim()).toMatch(message);
  expect(run.stdout + run.stderr).not.toContain(KEY);
}

describe('saved plans: a signing key that fails closed', { timeout: 90_000 }, () => {
  it('CONVERGE_PLAN_KEY set but empty: a forged plan that adds a delete is refused with 0 writes; plan --out, --show and comment refuse it too', async (t) => {
    const s = await setup(t, 'plan-key-empty');
    // Both deployments created and owned by converge.
    const created = await runConverge(['apply', s.manifestDir, ...s.flags]);
    expect(created.code, created.stdout + created.stderr).toBe(0);
    expect(
      s.e.store
        .allDeployments()
        .map((d) => d.name)
        .sort(),
    ).toEqual(['pk-a', 'pk-b']);
    // The forger: a copy of the manifests without pk-b, planned with --prune and no key: a plan that deletes pk-b.
    const forgedDir = join(s.dir, 'forged');
    await writeFiles(forgedDir, { 'a.yaml': dockerDeploymentYaml('pk-a', { maxScale: 2 }) });
    const forged = join(s.dir, 'forged.plan');
    const made = await runConverge(['plan', forgedDir, '--out', forged, '--prune', ...s.flags]);
    expect(made.code, made.stderr).toBe(0);
    expect(JSON.parse(await readFile(forged, 'utf8')).writes).toMatchObject([{ action: 'delete', name: 'pk-b' }]);

    // The apply job whose CI secret is missing: CONVERGE_PLAN_KEY expands to "" (or to blanks). Refused, nothing sent.
    const before = s.nonGets();
    for (const empty of ['', '  ']) {
      const run = await runConverge(['apply', '--plan', forged, '--prune', ...s.flags], { CONVERGE_PLAN_KEY: empty });
      expectRefused(run, 'apply', /CONVERGE_PLAN_KEY is set but empty: .*or unset it$/);
    }
    expect(s.nonGets()).toBe(before);
    expect(
      s.e.store
        .allDeployments()
        .map((d) => d.name)
        .sort(),
    ).toEqual(['pk-a', 'pk-b']);

    // plan --out: refused before anything is listed or saved.
    const out = join(s.dir, 'empty-key.plan');
    expectRefused(
      await runConverge(['plan', s.manifestDir, '--out', out, ...s.flags], { CONVERGE_PLAN_KEY: '' }),
      'plan',
      /CONVERGE_PLAN_KEY is set but empty/,
    );
    await expect(stat(out)).rejects.toMatchObject({ code: 'ENOENT' });
    // plan --show and comment: refused, the comment host never asked.
    expectRefused(
      await runConverge(['plan', '--show', forged], { CONVERGE_PLAN_KEY: '' }),
      'plan',
      /CONVERGE_PLAN_KEY is set but empty/,
    );
    const host = await startCommentHost('github', {
      repository: 'acme/manifests',
      pull: 3,
      token: 'comment-token-0123',
    });
    atEnd(t, () => host.close());
    const commentEnv = {
      GITHUB_API_URL: host.apiUrl,
      GITHUB_REPOSITORY: 'acme/manifests',
      GITHUB_TOKEN: 'comment-token-0123',
      CONVERGE_PLAN_KEY: '',
    };
    expectRefused(
      await runConverge(['comment', '--plan', forged, '--pull', '3'], commentEnv),
      'comment',
      /CONVERGE_PLAN_KEY is set but empty/,
    );
    expect(host.requests).toHaveLength(0);
    expect(s.nonGets()).toBe(before);
  });

  it('a signed plan with no key set is refused by apply --plan, plan --show and comment (0 writes) unless --skip-signature-check', async (t) => {
    const s = await setup(t, 'plan-key-missing');
    const file = join(s.dir, 'signed.plan');
    const signed = await runConverge(['plan', s.manifestDir, '--out', file, ...s.flags], { CONVERGE_PLAN_KEY: KEY });
    expect(signed.code, signed.stderr).toBe(0);
    expect(signed.stderr).toContain('plan signed (CONVERGE_PLAN_KEY) and saved to');
    const unchecked =
      /it is signed, and CONVERGE_PLAN_KEY is not set: its signature cannot be checked; set CONVERGE_PLAN_KEY to the key it was signed with, or give --skip-signature-check to read it unchecked$/;

    // No key in the apply job: refused, nothing sent.
    expectRefused(await runConverge(['apply', '--plan', file, ...s.flags]), 'apply', unchecked);
    expect(s.nonGets()).toBe(0);
    expectRefused(await runConverge(['plan', '--show', file]), 'plan', unchecked);
    const host = await startCommentHost('github', {
      repository: 'acme/manifests',
      pull: 4,
      token: 'comment-token-0123',
    });
    atEnd(t, () => host.close());
    const commentEnv = {
      GITHUB_API_URL: host.apiUrl,
      GITHUB_REPOSITORY: 'acme/manifests',
      GITHUB_TOKEN: 'comment-token-0123',
    };
    expectRefused(await runConverge(['comment', '--plan', file, '--pull', '4'], commentEnv), 'comment', unchecked);
    expect(host.requests).toHaveLength(0);
    // The flag is about a saved plan: with DIR it is a usage error.
    expectRefused(
      await runConverge(['apply', s.manifestDir, '--skip-signature-check', ...s.flags]),
      'apply',
      /--skip-signature-check is about a saved plan: give it with --plan FILE/,
    );
    expect(s.nonGets()).toBe(0);

    // Said explicitly: read unchecked. plan --show prints it, comment posts it, apply --plan applies it.
    const shown = await runConverge(['plan', '--show', file, '--skip-signature-check']);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain('pk-a');
    const posted = await runConverge(['comment', '--plan', file, '--pull', '4', '--skip-signature-check'], commentEnv);
    expect(posted.code, posted.stderr).toBe(0);
    expect(host.writes()).toHaveLength(1);
    const applied = await runConverge(['apply', '--plan', file, '--skip-signature-check', ...s.flags]);
    expect(applied.code, applied.stdout + applied.stderr).toBe(0);
    expect(
      s.e.store
        .allDeployments()
        .map((d) => d.name)
        .sort(),
    ).toEqual(['pk-a', 'pk-b']);
  });
});
