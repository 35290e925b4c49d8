// Through the built binary against the emulator: `plan --out` saves the plan, `apply --plan` applies exactly its writes
// or refuses it as stale (nothing written), `plan --show` renders it without the service (docs/saved-plans.md).
import { execFileSync } from 'node:child_process';
import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, type TestContext } from 'vitest';
import { startEmulator } from '../../src/emulator/server.js';
import { planChecksum, type SavedPlan } from '../../src/core/saved-plan/schema.js';
import { seedWith, writes } from '../helpers/apply.js';
import { REDIS_URL } from '../helpers/redis.js';
import { dockerDeploymentYaml, runConverge, tempDir, writeFiles } from './helpers.js';
import { atEnd, prefixOf } from './scoped.js';

const TOKEN = 'sp-token-value-5Qm9Zx71';
const LIVE = [
  {
    name: 'sp-a',
    source: 'external_docker',
    source_config: { resource_spec: { max_scale: 2 } },
    source_revision_config: { image_uri: 'docker.io/acme/sp-a:1' },
  },
  {
    name: 'sp-b',
    source: 'external_docker',
    source_config: { resource_spec: { max_scale: 2 } },
    source_revision_config: { image_uri: 'docker.io/acme/sp-b:1' },
  },
];

/** The manifests: sp-a raised to 4 (an update), sp-b as live (no change), sp-c new with a secret (a create). */
function manifests(maxScaleA = 4): Record<string, string> {
  return {
    'a.yaml': dockerDeploymentYaml('sp-a', { maxScale: maxScaleA }),
    'b.yaml': dockerDeploymentYaml('sp-b', { maxScale: 2 }),
    'c.yaml': dockerDeploymentYaml('sp-c', { maxScale: 1, secrets: [['TOKEN', 'SP_TOKEN']] }),
  };
}

/** An emulator with sp-a and sp-b live, a manifest directory, a plan file path and the service and Redis flags. */
async function setup(t: TestContext, label: string) {
  const e = await startEmulator({ seed: seedWith(LIVE), buildMs: 0 });
  atEnd(t, () => e.close());
  const dir = await tempDir(label);
  atEnd(t, () => rm(dir, { recursive: true, force: true }));
  const manifestDir = join(dir, 'manifests');
  await writeFiles(manifestDir, manifests());
  const flags = ['--api-url', e.url, '--redis-url', REDIS_URL, '--redis-prefix', prefixOf(t, label)];
  const live = (name: string) => e.store.allDeployments().find((d) => d.name === name);
  return { e, dir, manifestDir, file: join(dir, 'reviewed.plan'), flags, live, env: { SP_TOKEN: TOKEN } };
}

type Setup = Awaited<ReturnType<typeof setup>>;

async function planOut(s: Setup, extra: string[] = []) {
  return runConverge(['plan', s.manifestDir, '--out', s.file, ...s.flags, ...extra], s.env);
}

/** Refused as stale: exit 1, one line naming what changed, and not one request that writes. */
async function expectStale(s: Setup, what: RegExp, env: NodeJS.ProcessEnv = s.env): Promise<void> {
  const before = writes(s.e.requestLog).length;
  const run = await runConverge(['apply', '--plan', s.file, ...s.flags], env);
  expect(run.code, run.stderr).toBe(1);
  const line = run.stderr.trim();
  expect(line.split('\n')).toHaveLength(1);
  expect(line).toMatch(/^converge apply: the plan is stale: since it was made, /);
  expect(line).toMatch(what);
  expect(line).toContain('nothing was written; run plan again');
  expect(writes(s.e.requestLog).length).toBe(before);
}

// The tests run concurrently (three at a time; they mostly wait on `converge` children), each with its own emulator,
// directory and Redis prefix (setup), stopped and removed when that test ends (scoped.ts).
describe.concurrent('saved plans: plan --out, apply --plan, plan --show', { timeout: 90_000 }, () => {
  it('apply --plan sends exactly the planned writes, refuses while a resource it does not write differs, and refuses the same plan a second time', async (t) => {
    const s = await setup(t, 'saved-plan-exact');
    const planned = await planOut(s, ['--detailed-exitcode']);
    expect(planned.code, planned.stderr).toBe(2);
    expect(planned.stdout).toContain('sp-a');
    expect(planned.stderr).toContain(`plan saved to ${s.file}`);
    expect((await stat(s.file)).mode & 0o777).toBe(0o600);
    expect(writes(s.e.requestLog)).toHaveLength(0);
    const saved = JSON.parse(await readFile(s.file, 'utf8')) as {
      writes: Array<{ name: string; action: string; fields: string[]; seen: { live: { updated_at: string } | null } }>;
    };
    expect(saved.writes.map((w) => `${w.action} ${w.name}`).sort()).toEqual(['adopt sp-a', 'create sp-c']);
    expect(saved.writes.find((w) => w.name === 'sp-a')!.seen.live!.updated_at).toBe(
      new Date(s.live('sp-a')!.updated_at).toISOString(),
    );

    // Someone changes sp-b by hand after the review: a fresh plan would write it, the saved one does not: stale.
    const b = s.live('sp-b')!;
    expect(
      s.e.store.patchDeployment(b.tenant_id, b.id, { source_config: { resource_spec: { max_scale: 3 } } }).ok,
    ).toBe(true);
    await expectStale(s, /Deployment\/sp-b: it would be adopted now, and the plan does not hold that write/);
    // Put back by hand: the plan holds again, and exactly its writes are sent.
    expect(
      s.e.store.patchDeployment(b.tenant_id, b.id, { source_config: { resource_spec: { max_scale: 2 } } }).ok,
    ).toBe(true);
    const applied = await runConverge(['apply', '--plan', s.file, ...s.flags], s.env);
    expect(applied.code, applied.stdout + applied.stderr).toBe(0);
    const sent = writes(s.e.requestLog).map((w) => `${w.method} ${w.route}`);
    expect(sent.sort()).toEqual(['PATCH /v2/deployments/{deployment_id}', 'POST /v2/deployments']);
    expect(writes(s.e.requestLog).find((w) => w.method === 'PATCH')!.deploymentId).toBe(s.live('sp-a')!.id);

    // The same plan again: stale (it was applied), nothing sent.
    await expectStale(s, /it was applied \(at .*; a plan is applied once\)/);
  });

  it('holds no secret value: not the value, not its base64, not its base64url', async (t) => {
    const s = await setup(t, 'saved-plan-secret');
    expect((await planOut(s)).code).toBe(0);
    const text = await readFile(s.file, 'utf8');
    for (const form of [
      TOKEN,
      Buffer.from(TOKEN).toString('base64'),
      Buffer.from(TOKEN).toString('base64url'),
      Buffer.from(TOKEN).toString('base64').replace(/=+$/, ''),
    ]) {
      expect(text).not.toContain(form);
    }
    // The secret is there as its salted hash (as in the applied state), which apply --plan checks.
    expect(text).toMatch(/"TOKEN": "[0-9a-f]{64}"/);
  });

  it('is stale when a manifest changed since the plan', async (t) => {
    const s = await setup(t, 'saved-plan-manifest');
    expect((await planOut(s)).code).toBe(0);
    await writeFile(join(s.manifestDir, 'a.yaml'), manifests(5)['a.yaml']!);
    await expectStale(s, /the manifests, variables files or overlays changed/);
  });

  it('is stale when a planned resource changed live since the plan', async (t) => {
    const s = await setup(t, 'saved-plan-live');
    expect((await planOut(s)).code).toBe(0);
    const a = s.live('sp-a')!;
    expect(
      s.e.store.patchDeployment(a.tenant_id, a.id, { source_revision_config: { image_uri: 'docker.io/acme/sp-a:0' } })
        .ok,
    ).toBe(true);
    await expectStale(s, /Deployment\/sp-a: (a new revision started live|it changed live)/);
  });

  it('is stale when a secret was rotated since the plan', async (t) => {
    const s = await setup(t, 'saved-plan-rotated');
    expect((await planOut(s)).code).toBe(0);
    await expectStale(s, /Deployment\/sp-c: secret TOKEN changed \(rotated\)/, { SP_TOKEN: `${TOKEN}-rotated` });
  });

  it('refuses a plan file edited by hand, truncated, of another version or not a plan: one line, nothing written', async (t) => {
    const s = await setup(t, 'saved-plan-edited');
    expect((await planOut(s)).code).toBe(0);
    const text = await readFile(s.file, 'utf8');
    const edited = join(s.dir, 'edited.plan');
    const cases: Array<[string, string, RegExp]> = [
      [
        'edited',
        text.replace(/"action": "adopt"/g, '"action": "update"'),
        /checksum does not match its content: it was edited or damaged/,
      ],
      ['truncated', text.slice(0, text.length / 2), /not a converge plan: it is not JSON \(truncated or damaged\?\)/],
      [
        'version',
        text.replace('"format_version": 1,', '"format_version": 2,'),
        /a converge plan of format version 2; this converge reads version 1/,
      ],
      [
        'not a plan',
        '{"format_version": "1", "changes": []}\n',
        /not a converge plan: it has no "format": "converge-plan"/,
      ],
    ];
    expect(cases[0]![1]).not.toBe(text);
    for (const [label, content, message] of cases) {
      await writeFile(edited, content);
      const run = await runConverge(['apply', '--plan', edited, ...s.flags], s.env);
      expect(run.code, label).toBe(1);
      expect(run.stderr.trim().split('\n'), label).toHaveLength(1);
      expect(run.stderr, label).toMatch(message);
      const shown = await runConverge(['plan', '--show', edited]);
      expect(shown.code, label).toBe(1);
      expect(shown.stderr, label).toMatch(message);
    }
    expect(writes(s.e.requestLog)).toHaveLength(0);
  });

  it('plan --show prints the saved plan as markdown without the service, as plan printed it', async (t) => {
    const s = await setup(t, 'saved-plan-show');
    const planned = await planOut(s, ['--output', 'markdown']);
    expect(planned.code, planned.stderr).toBe(0);
    const requests = s.e.requestLog.length;
    // No --api-url, no Redis: --show reads the file only.
    const shown = await runConverge(['plan', '--show', s.file, '--output', 'markdown'], {
      CONVERGE_API_URL: '',
      REDIS_URL: 'redis://127.0.0.1:1',
    });
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toBe(planned.stdout);
    expect(shown.stdout).toMatch(/sp-a/);
    expect(shown.stdout).toContain('max_scale');
    expect(s.e.requestLog.length).toBe(requests);
  });

  it('a plan made with --prune holds its deletes: apply --plan makes them when given --prune itself, and sends no delete probe', async (t) => {
    const s = await setup(t, 'saved-plan-prune');
    // converge creates sp-c (so it owns it), then its manifest is removed.
    const first = await runConverge(['apply', s.manifestDir, ...s.flags], s.env);
    expect(first.code, first.stdout + first.stderr).toBe(0);
    const id = s.live('sp-c')!.id;
    await rm(join(s.manifestDir, 'c.yaml'));
    expect((await planOut(s, ['--prune'])).code).toBe(0);
    const before = writes(s.e.requestLog).length;
    const saved = JSON.parse(await readFile(s.file, 'utf8')) as {
      options: { prune: boolean };
      writes: Array<{ name: string; action: string; deployment_id?: string }>;
    };
    expect(saved.options.prune).toBe(true);
    expect(saved.writes.map((w) => `${w.action} ${w.name} ${w.deployment_id ?? ''}`)).toEqual([`delete sp-c ${id}`]);
    // Without --prune of its own: refused, the options named, nothing sent.
    const bare = await runConverge(['apply', '--plan', s.file, ...s.flags], s.env);
    expect(bare.code).toBe(1);
    expect(bare.stderr.trim()).toBe(
      "converge apply: the plan's options are not this apply's: the plan was made with --prune, this apply has no --prune; nothing was written; give apply --plan the --prune, --max-deletes, --adopt, --name-prefix and --target the plan was made with, or plan again",
    );
    expect(writes(s.e.requestLog).length).toBe(before);
    const applied = await runConverge(['apply', '--plan', s.file, '--prune', ...s.flags], s.env);
    expect(applied.code, applied.stdout + applied.stderr).toBe(0);
    // One delete, and no DELETE probe of a made-up id (plan --out probed; apply --plan takes its answer from the plan).
    expect(
      writes(s.e.requestLog)
        .slice(before)
        .map((w) => `${w.method} ${w.deploymentId}`),
    ).toEqual([`DELETE ${id}`]);
  });

  it('a plan edited to delete (prune set, a delete added, checksum recomputed) is refused with nothing sent but reads', async (t) => {
    const s = await setup(t, 'saved-plan-tampered');
    const first = await runConverge(['apply', s.manifestDir, ...s.flags], s.env);
    expect(first.code, first.stdout + first.stderr).toBe(0);
    await rm(join(s.manifestDir, 'c.yaml'));
    // The delete, taken from a plan --prune --out of the same state; the reviewed plan has no prune.
    const pruned = join(s.dir, 'pruned.plan');
    expect((await runConverge(['plan', s.manifestDir, '--out', pruned, '--prune', ...s.flags], s.env)).code).toBe(0);
    const withDelete = JSON.parse(await readFile(pruned, 'utf8')) as SavedPlan;
    expect((await planOut(s)).code).toBe(0);
    const reviewed = JSON.parse(await readFile(s.file, 'utf8')) as SavedPlan;
    expect(reviewed.options.prune).toBe(false);
    expect(reviewed.writes).toEqual([]);
    const tampered = join(s.dir, 'tampered.plan');
    const tamper = async (edit: (plan: SavedPlan) => void) => {
      const { checksum: _, ...content } = structuredClone(reviewed);
      edit(content as SavedPlan);
      await writeFile(tampered, JSON.stringify({ ...content, checksum: planChecksum(content) }, null, 2));
    };
    const before = writes(s.e.requestLog).length;
    const refused = async (extra: string[], message: RegExp) => {
      const run = await runConverge(['apply', '--plan', tampered, ...extra, ...s.flags], s.env);
      expect(run.code, run.stdout + run.stderr).toBe(1);
      expect(run.stderr).toMatch(message);
      expect(writes(s.e.requestLog).length).toBe(before);
    };
    // prune set and the delete added, the plan left showing "0 to delete": refused by apply --plan and plan --show alike.
    await tamper((p) => {
      p.options.prune = true;
      p.writes = withDelete.writes;
    });
    await refused(
      [],
      /plan disagrees with its writes \(it writes Deployment\/sp-c \(delete\) but its plan shows orphan\)/,
    );
    await refused(['--prune'], /plan disagrees with its writes/);
    const shown = await runConverge(['plan', '--show', tampered]);
    expect(shown.code).toBe(1);
    expect(shown.stderr).toMatch(/plan disagrees with its writes/);
    // The whole plan taken too (changes, summary): the options are not this apply's.
    await tamper((p) => {
      p.options.prune = true;
      p.plan = withDelete.plan;
      p.writes = withDelete.writes;
    });
    await refused([], /the plan was made with --prune, this apply has no --prune/);
    // prune left off, the delete added with its change and summary: a fresh plan without prune deletes nothing: stale.
    await tamper((p) => {
      p.plan = withDelete.plan;
      p.writes = withDelete.writes;
    });
    await refused([], /the plan is stale: since it was made, Deployment\/sp-c: it would be \w+ now, not delete/);
    expect(s.live('sp-c')).toBeDefined();
  });

  it('with CONVERGE_PLAN_KEY: plan --out signs, apply --plan applies a signed plan and refuses an unsigned or mis-signed one, sending nothing', async (t) => {
    const s = await setup(t, 'saved-plan-signed');
    const KEY = 'plan-key-0123456789abcdef0123456789abcdef';
    const keyed = { ...s.env, CONVERGE_PLAN_KEY: KEY };
    // An unsigned plan, then the key set at apply: refused.
    expect((await planOut(s)).code).toBe(0);
    const refuse = async (env: NodeJS.ProcessEnv, message: RegExp) => {
      const before = writes(s.e.requestLog).length;
      const run = await runConverge(['apply', '--plan', s.file, ...s.flags], env);
      expect(run.code, run.stdout + run.stderr).toBe(1);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stderr).toMatch(message);
      expect(run.stderr).not.toContain(KEY);
      expect(writes(s.e.requestLog).length).toBe(before);
    };
    await refuse(keyed, /it is not signed, and CONVERGE_PLAN_KEY is set/);
    // Signed under another key: refused.
    expect(
      (
        await runConverge(['plan', s.manifestDir, '--out', s.file, ...s.flags], {
          ...s.env,
          CONVERGE_PLAN_KEY: 'another-key-0123456789abcdef0123456789ab',
        })
      ).code,
    ).toBe(0);
    await refuse(keyed, /its signature does not match under CONVERGE_PLAN_KEY/);
    // Signed, then edited with the checksum recomputed (max-deletes raised): the signature finds it.
    const signed = await runConverge(['plan', s.manifestDir, '--out', s.file, ...s.flags], keyed);
    expect(signed.code, signed.stderr).toBe(0);
    expect(signed.stderr).toContain('plan signed (CONVERGE_PLAN_KEY) and saved to');
    const text = await readFile(s.file, 'utf8');
    expect(text).not.toContain(KEY);
    const plan = JSON.parse(text) as SavedPlan;
    expect(plan.signature).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
    const { checksum: _, ...content } = { ...plan, options: { ...plan.options, max_deletes: 99 } };
    await writeFile(s.file, JSON.stringify({ ...content, checksum: planChecksum(content) }));
    await refuse({ ...keyed, CONVERGE_MAX_DELETES: '99' }, /its signature does not match/);
    // A too short key: one line, naming the variable, not the value.
    await writeFile(s.file, text);
    await refuse({ ...s.env, CONVERGE_PLAN_KEY: 'short-key' }, /CONVERGE_PLAN_KEY is shorter than 32 characters/);
    // The signed plan as written: applied.
    const applied = await runConverge(['apply', '--plan', s.file, ...s.flags], keyed);
    expect(applied.code, applied.stdout + applied.stderr).toBe(0);
    expect(
      writes(s.e.requestLog)
        .map((w) => `${w.method} ${w.route}`)
        .sort(),
    ).toEqual(['PATCH /v2/deployments/{deployment_id}', 'POST /v2/deployments']);
  });

  it('in git: another commit with the same manifests still holds (a merge commit); one that changed them is stale, named by its commits; an edit not committed is named as such', async (t) => {
    const s = await setup(t, 'saved-plan-git');
    const git = (...args: string[]) =>
      execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], {
        cwd: s.dir,
        stdio: 'pipe',
      })
        .toString()
        .trim();
    git('init', '-q', '-b', 'main');
    git('add', '.');
    git('commit', '-qm', 'manifests');
    expect((await planOut(s)).code).toBe(0);
    const saved = JSON.parse(await readFile(s.file, 'utf8')) as {
      manifests: { version: { kind: string; id: string } };
    };
    expect(saved.manifests.version).toMatchObject({ kind: 'git', id: git('rev-parse', 'HEAD') });
    // A commit that changes no manifest (as a merge of the reviewed pull request would be): the plan holds.
    await writeFile(join(s.dir, 'README.txt'), 'docs only\n');
    git('add', 'README.txt');
    git('commit', '-qm', 'docs');
    const applied = await runConverge(['apply', '--plan', s.file, ...s.flags], s.env);
    expect(applied.code, applied.stdout + applied.stderr).toBe(0);
    // A plan made now, then a commit that changes a manifest: stale, and the commits are named.
    expect((await planOut(s)).code).toBe(0);
    const planned = git('rev-parse', '--short=7', 'HEAD');
    await writeFile(join(s.manifestDir, 'b.yaml'), dockerDeploymentYaml('sp-b', { maxScale: 7 }));
    git('commit', '-qam', 'b to 7');
    await expectStale(
      s,
      new RegExp(
        `the manifests, variables files or overlays changed \\(${planned} then, ${git('rev-parse', '--short=7', 'HEAD')} now\\)`,
      ),
    );
    // An edit not committed (issue 42, item 5): the plan and its message say so, never "23acd65 then, 23acd65 now".
    const head = git('rev-parse', '--short=7', 'HEAD');
    const clean = await planOut(s);
    expect(clean.stderr).toContain(`plan saved to ${s.file} (manifests ${head}); apply exactly it`);
    await writeFile(join(s.manifestDir, 'b.yaml'), dockerDeploymentYaml('sp-b', { maxScale: 8 }));
    await expectStale(
      s,
      new RegExp(
        `the manifests, variables files or overlays changed \\(${head} then, uncommitted changes on top of ${head} now\\);`,
      ),
    );
    const dirty = await planOut(s);
    expect(dirty.stderr).toContain(
      `plan saved to ${s.file} (manifests uncommitted changes on top of ${head}); apply exactly it`,
    );
    const dirtySaved = JSON.parse(await readFile(s.file, 'utf8')) as {
      manifests: { version: { kind: string; id: string; uncommitted?: boolean } };
    };
    expect(dirtySaved.manifests.version).toMatchObject({
      kind: 'git',
      id: git('rev-parse', 'HEAD'),
      uncommitted: true,
    });
    const shown = await runConverge(['plan', '--show', s.file]);
    expect(shown.stderr).toContain(
      `saved plan of ${s.manifestDir} (manifests uncommitted changes on top of ${head}) made `,
    );
    await writeFile(join(s.manifestDir, 'b.yaml'), dockerDeploymentYaml('sp-b', { maxScale: 9 }));
    await expectStale(
      s,
      new RegExp(
        `the manifests, variables files or overlays changed \\(uncommitted changes on top of ${head}, edited again since\\);`,
      ),
    );
  });

  it('a plan made with --target holds its names: apply --plan is given the same targets, or refuses', async (t) => {
    const s = await setup(t, 'saved-plan-target');
    expect((await planOut(s, ['--target', 'sp-a'])).code).toBe(0);
    const saved = JSON.parse(await readFile(s.file, 'utf8')) as {
      options: { targets?: string[] };
      writes: Array<{ name: string }>;
    };
    expect(saved.options.targets).toEqual(['sp-a']);
    expect(saved.writes.map((w) => w.name)).toEqual(['sp-a']);
    const flagged = await runConverge(['apply', '--plan', s.file, '--target', 'sp-c', ...s.flags], s.env);
    expect(flagged.code).toBe(1);
    expect(flagged.stderr).toContain('the plan was made with --target sp-a, this apply has --target sp-c');
    const bare = await runConverge(['apply', '--plan', s.file, ...s.flags], s.env);
    expect(bare.code).toBe(1);
    expect(bare.stderr).toContain('the plan was made with --target sp-a, this apply has no --target');
    const applied = await runConverge(['apply', '--plan', s.file, '--target', 'sp-a', ...s.flags], s.env);
    expect(applied.code, applied.stdout + applied.stderr).toBe(0);
    // sp-c (a create the whole directory would make) is outside the targets: not written, not even named as unplanned.
    expect(applied.stdout).not.toContain('not in the saved plan');
    expect(writes(s.e.requestLog).map((w) => `${w.method} ${w.deploymentId}`)).toEqual([`PATCH ${s.live('sp-a')!.id}`]);
  });

  it("apply --plan from another directory names the plan's relative directory and how to run it; --chdir runs it from there", async (t) => {
    const s = await setup(t, 'saved-plan-elsewhere');
    const planned = await runConverge(
      ['--chdir', s.dir, 'plan', 'manifests', '--out', 'reviewed.plan', ...s.flags],
      s.env,
    );
    expect(planned.code, planned.stderr).toBe(0);
    expect(planned.stderr).toContain('plan saved to reviewed.plan');
    const elsewhere = await runConverge(['apply', '--plan', s.file, ...s.flags], s.env);
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stderr.trim().split('\n')).toHaveLength(1);
    expect(elsewhere.stderr).toContain(
      `the plan's manifest directory "manifests" is relative to the directory the plan was made in`,
    );
    expect(elsewhere.stderr).toContain('converge --chdir DIR apply --plan FILE');
    expect(writes(s.e.requestLog)).toHaveLength(0);
    const there = await runConverge(['--chdir', s.dir, 'apply', '--plan', 'reviewed.plan', ...s.flags], s.env);
    expect(there.code, there.stdout + there.stderr).toBe(0);
    expect(writes(s.e.requestLog).length).toBeGreaterThan(0);
    const missing = await runConverge(['--chdir', join(s.dir, 'nowhere'), 'plan', 'manifests']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^converge: --chdir .*nowhere: not a directory that can be entered/);
  });

  it('plan --out saves no plan while a manifest file fails to load', async (t) => {
    const s = await setup(t, 'saved-plan-broken');
    await writeFile(join(s.manifestDir, 'broken.yaml'), 'kind: Deployment\nmetadata: [unclosed\n');
    const run = await planOut(s);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`no plan saved to ${s.file}: the plan holds errors`);
    await expect(stat(s.file)).rejects.toThrow(/ENOENT/);
  });
});
