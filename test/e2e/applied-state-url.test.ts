// A plan for a pull request without the production Redis: the daemon serves the applied state at GET /applied-state
// behind its read-only CONVERGE_STATE_TOKEN, `plan --applied-state-url` reads it instead of Redis and prints the plan
// Redis gives, and a plan saved that way is applied by `apply --plan` with Redis, or refused as stale, as one saved with
// Redis (docs/saved-plans.md). Through the built binary, against the emulator (secrets masked, as the real service does).
import { cp, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/server.js';
import { writes } from '../helpers/apply.js';
import { REDIS_URL } from '../helpers/redis.js';
import { dockerDeploymentYaml, freePort, runConverge, tempDir, until, writeFiles } from './helpers.js';
import { atEnd, daemonOf, prefixOf } from './scoped.js';

const SECRET = 'known-secret-value-Zq81mX4p';
const API_KEY = 'api-key-value-Hj27Ld90';
const STATE = 'state-token-Pw63Kc05';
const HOOK = 'hook-token-Rt48Vb12';

function manifests(maxScaleA: number): Record<string, string> {
  return {
    'a.yaml': dockerDeploymentYaml('asu-a', { maxScale: maxScaleA, secrets: [['TOKEN', 'ASU_TOKEN']] }),
    'b.yaml': dockerDeploymentYaml('asu-b', { maxScale: 1, secrets: [['TOKEN', 'ASU_TOKEN']] }),
  };
}

describe('plan --applied-state-url: the applied state from the daemon, not from Redis', { timeout: 180_000 }, () => {
  it('serves it behind its token without a secret, plans as Redis does, and its saved plan applies (or is stale) as with Redis', async (t) => {
    const e = await startEmulator({ buildMs: 0, secrets: 'masked' });
    atEnd(t, () => e.close());
    const root = await tempDir('applied-state-url');
    atEnd(t, () => rm(root, { recursive: true, force: true }));
    const prefix = prefixOf(t, 'applied-state-url');
    const env = { ASU_TOKEN: SECRET, CONVERGE_API_KEY: API_KEY };
    const service = ['--api-url', e.url];
    const redis = ['--redis-url', REDIS_URL, '--redis-prefix', prefix];
    // The daemon's manifests (main) are applied; the pull request's (pr) raise asu-a's max_scale.
    const main = join(root, 'main');
    const pr = join(root, 'pr');
    await writeFiles(main, manifests(1));
    const created = await runConverge(['apply', main, ...service, ...redis], env);
    expect(created.code, created.stdout + created.stderr).toBe(0);
    await cp(main, pr, { recursive: true });
    await writeFiles(pr, { 'a.yaml': manifests(3)['a.yaml']! });
    const daemon = await daemonOf(t, main, [...service, ...redis, '--resync', '1h'], {
      ...env,
      CONVERGE_STATE_TOKEN: STATE,
      CONVERGE_WEBHOOK_TOKEN: HOOK,
    });

    // The endpoint: 401 without the token, with the webhook's; 200 with its own, holding hashes and no secret or API key.
    for (const headers of [{}, { authorization: `Bearer ${HOOK}` }] as Array<Record<string, string>>) {
      const refused = await fetch(`${daemon.url}/applied-state`, { headers });
      expect(refused.status).toBe(401);
      expect(((await refused.json()) as { error: string }).error).not.toContain('\n');
    }
    // 503 until the daemon has opened Redis (its status server listens first).
    const answer = await until(
      'the daemon serves its applied state',
      async () => {
        const reply = await fetch(`${daemon.url}/applied-state`, { headers: { authorization: `Bearer ${STATE}` } });
        if (reply.status === 503) return undefined;
        return reply;
      },
      60_000,
      50,
    );
    expect(answer.status).toBe(200);
    const body = await answer.text();
    expect(body).not.toContain(SECRET);
    expect(body).not.toContain(API_KEY);
    expect(body).not.toContain(STATE);
    const document = JSON.parse(body) as {
      records: Record<string, { secrets: Record<string, string>; ownership?: { origin: string }; file?: string }>;
    };
    expect(Object.keys(document.records).sort()).toEqual(['Deployment/asu-a', 'Deployment/asu-b']);
    expect(document.records['Deployment/asu-a']!.secrets.TOKEN).toMatch(/^[0-9a-f]{64}$/);
    expect(document.records['Deployment/asu-a']!.ownership?.origin).toBe('created');
    expect(document.records['Deployment/asu-a']!.file).toBe('a.yaml');
    // Its size per resource (docs/saved-plans.md: about 1 KB; 10,000 resources about 10 MB).
    expect(Buffer.byteLength(body) / 2).toBeLessThan(1_500);

    // The pull request's plan through the URL is the plan through Redis, and not the plan without the applied state.
    const viaUrl = ['--applied-state-url', daemon.url];
    const urlEnv = { ...env, CONVERGE_STATE_TOKEN: STATE };
    const byRedis = await runConverge(['plan', pr, '--output', 'json', ...service, ...redis], env);
    const byUrl = await runConverge(['plan', pr, '--output', 'json', ...service, ...viaUrl], urlEnv);
    const blind = await runConverge(['plan', pr, '--output', 'json', ...service, '--no-applied-state'], env);
    expect(byRedis.code, byRedis.stderr).toBe(0);
    expect(byUrl.code, byUrl.stderr).toBe(0);
    expect(byUrl.stdout).toBe(byRedis.stdout);
    expect(blind.stdout).not.toBe(byRedis.stdout);

    // Saved through the URL (no Redis flag, no REDIS_URL), applied with Redis as the deploy job does: exactly its write.
    const file = join(root, 'pr.plan');
    const saved = await runConverge(['plan', pr, '--out', file, ...service, ...viaUrl], { ...urlEnv, REDIS_URL: '' });
    expect(saved.code, saved.stderr).toBe(0);
    expect(saved.stderr).toContain(`plan saved to ${file}`);
    const before = writes(e.requestLog).length;
    const applied = await runConverge(['apply', '--plan', file, ...service, ...redis], env);
    expect(applied.code, applied.stdout + applied.stderr).toBe(0);
    expect(
      writes(e.requestLog)
        .slice(before)
        .map((w) => w.method),
    ).toEqual(['PATCH']);
    const a = e.store.allDeployments().find((d) => d.name === 'asu-a')!;
    expect((a.source_config as { resource_spec: { max_scale: number } }).resource_spec.max_scale).toBe(3);

    // A change between the plan and its apply (asu-b edited by hand): refused as stale, nothing written.
    await writeFiles(pr, { 'a.yaml': manifests(4)['a.yaml']! });
    const again = await runConverge(['plan', pr, '--out', file, ...service, ...viaUrl], urlEnv);
    expect(again.code, again.stderr).toBe(0);
    const b = e.store.allDeployments().find((d) => d.name === 'asu-b')!;
    expect(e.store.patchDeployment(b.tenant_id, b.id, { source_config: { resource_spec: { max_scale: 2 } } }).ok).toBe(
      true,
    );
    const quiet = writes(e.requestLog).length;
    const stale = await runConverge(['apply', '--plan', file, ...service, ...redis], env);
    expect(stale.code, stale.stderr).toBe(1);
    expect(stale.stderr.trim().split('\n')).toHaveLength(1);
    expect(stale.stderr).toMatch(/^converge apply: the plan is stale: since it was made, .*Deployment\/asu-b/);
    expect(writes(e.requestLog).length).toBe(quiet);
  });

  it('an unreachable URL is one line and exit 1, and no plan is saved', async (t) => {
    const e = await startEmulator({ buildMs: 0 });
    atEnd(t, () => e.close());
    const root = await tempDir('applied-state-url-down');
    atEnd(t, () => rm(root, { recursive: true, force: true }));
    await writeFiles(join(root, 'm'), { 'a.yaml': dockerDeploymentYaml('asu-down', { maxScale: 1 }) });
    const file = join(root, 'down.plan');
    const url = `http://127.0.0.1:${await freePort()}`;
    const run = await runConverge(
      ['plan', join(root, 'm'), '--out', file, '--api-url', e.url, '--applied-state-url', url],
      { CONVERGE_STATE_TOKEN: STATE },
    );
    expect(run.code).toBe(1);
    const lines = run.stderr.trim().split('\n');
    expect(lines, run.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `^converge plan: cannot read the applied state from ${url}/applied-state: no answer \\(ECONNREFUSED\\)`,
      ),
    );
    expect(run.stderr).not.toContain(STATE);
    await expect(stat(file)).rejects.toThrow(/ENOENT/);
    expect(await readFile(join(root, 'm', 'a.yaml'), 'utf8')).toContain('asu-down');
  });
});
