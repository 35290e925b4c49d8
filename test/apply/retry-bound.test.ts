// One retry layer per request, counted at a real loopback server: a job's read is sent once per attempt; a read outside jobs is tried 5 times.
import { afterAll, describe, expect, it } from 'vitest';
import { deployment, json, startServer, type ScriptedServer } from '../service/scripted-server.js';
import { deploymentYaml, externalDockerSpec, manifestDir, runApplyCli } from '../helpers/apply.js';
import { dropPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';

const WEB = deployment('web', {
  source: 'external_docker',
  source_config: { resource_spec: { max_scale: 1 } },
  source_revision_config: { image_uri: 'docker.io/acme/web:1' },
});

/** The transport's tries of a read outside jobs (src/service/transport.ts DEFAULTS.retry.attempts). */
const TRANSPORT_TRIES = 5;

describe('one retry layer per request', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  async function setUp(
    handler: Parameters<typeof startServer>[0],
  ): Promise<{ server: ScriptedServer; argv: (attempts: number) => string[] }> {
    const server = await startServer(handler);
    const tree = await manifestDir({
      'web.yaml': deploymentYaml('web', externalDockerSpec('docker.io/acme/web:1', 3)),
    });
    const prefix = testPrefix('retry-bound');
    cleanups.push(
      () => server.close(),
      () => tree.remove(),
      () => dropPrefix(prefix),
    );
    const argv = (attempts: number): string[] => [
      tree.dir,
      '--api-url',
      server.url,
      '--redis-url',
      REDIS_URL,
      '--redis-prefix',
      prefix,
      '--attempts',
      String(attempts),
      '--backoff',
      '10ms',
      '--log-level',
      'error',
    ];
    return { server, argv };
  }

  it.each([1, 4])(
    'a job whose read always answers 503 sends it exactly once per attempt (--attempts %i), not 5 times each',
    async (attempts) => {
      const { server, argv } = await setUp((request, response) => {
        // The listing (outside the job) answers; every read inside the job is a 503.
        if (request.method === 'GET' && request.url.pathname === '/v2/deployments') {
          const first = Number(request.url.searchParams.get('offset') ?? 0) === 0;
          return json(response, 200, { resources: first ? [WEB] : [], offset: 1 });
        }
        return json(response, 503, { detail: 'unavailable' });
      });
      const run = await runApplyCli(argv(attempts), {});
      expect(run.code).toBe(1);
      expect(run.stdout).toContain('0 done, 0 unchanged, 1 failed');
      const reads = server.received.filter(
        (r) => r.method === 'GET' && r.url.pathname === `/v2/deployments/${WEB.id as string}`,
      );
      expect(reads).toHaveLength(attempts);
      // Besides those reads, only the plan's listing (its pages): no write was sent.
      expect(
        new Set(server.received.filter((r) => !reads.includes(r)).map((r) => `${r.method} ${r.url.pathname}`)),
      ).toEqual(new Set(['GET /v2/deployments']));
    },
  );

  it(`a read outside jobs (the plan's listing) that always answers 503 is tried ${TRANSPORT_TRIES} times, then the command fails without enqueueing`, async () => {
    const { server, argv } = await setUp((_request, response) =>
      json(response, 503, { detail: 'unavailable' }, { 'retry-after': '0' }),
    );
    const run = await runApplyCli(argv(8), {});
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/503/);
    expect(server.received.map((r) => `${r.method} ${r.url.pathname}`)).toEqual(
      Array(TRANSPORT_TRIES).fill('GET /v2/deployments'),
    );
  });
});
