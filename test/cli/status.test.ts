// `converge status` over loopback HTTP: its text reads /status in format 2 (made whole) and says what format 1 says;
// a daemon that does not know format 2 is read as it answers; --output json is the document of format 1.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startStatusServer, type StatusServer } from '../../src/daemon/server/status-server.js';
import { runCapture } from '../helpers/cli.js';

const message = 'the service hides OPENAI_API_KEY and no applied state records them; not rewritten blind';
function row(i: number): Record<string, unknown> {
  const name = `app-${String(i).padStart(3, '0')}`;
  return {
    key: `Deployment/${name}`,
    kind: 'Deployment',
    name,
    file: `teams/${name}.yaml`,
    action: i === 2 ? 'blocked' : 'adopt',
    state: 'out_of_sync',
    sync: { status: 'out_of_sync', reason: 'SecretsUnknown', message: `${message} (${name})` },
    health: {
      status: 'healthy',
      reason: 'RevisionDeployed',
      message: `revision r-${i}-0000000 is active`,
      revisionId: `r-${i}-0000000`,
    },
    reason: `SecretsUnknown: ${message} (${name})`,
    error: i === 2 ? 'a manifest error that is long enough to be referenced' : null,
    drift: null,
    heldAtLastGood: i === 1,
    job: null,
    desired: 'ab'.repeat(32),
    syncReason: 'SecretsUnknown',
  };
}
const diagnostic = {
  severity: 'warning',
  line: 9,
  column: 3,
  message: 'spec.source_config.deployment_type is not set: the service will create it as prod',
};
const doc = {
  format_version: '1',
  daemon: {
    dir: 'manifests',
    pid: 7,
    hostname: 'h',
    startedAt: '2026-01-01T00:00:00.000Z',
    stopping: false,
    reconcileEndpoint: true,
  },
  secretsUnknown: ['Deployment/app-000', 'Deployment/app-001', 'Deployment/app-002'],
  sync: { out_of_sync: 3 },
  health: { healthy: 3 },
  lastReconcile: {
    id: 1,
    trigger: 'startup',
    finishedAt: '2026-01-01T00:00:01.000Z',
    durationMs: 5,
    ok: true,
    error: null,
    summary: { adopt: 3 },
    enqueued: 0,
    drifted: 0,
    held: 1,
  },
  resources: [row(0), row(1), row(2)],
  orphans: [],
  plan: { diagnostics: [0, 1, 2].map((i) => ({ ...diagnostic, file: `teams/app-00${i}.yaml` })) },
};
const readyz = { ready: true, checks: [] };

let server: StatusServer | undefined;
let older: Server | undefined;
afterEach(async () => {
  await server?.close();
  await new Promise((resolve) => (older ? older.close(resolve) : resolve(undefined)));
  server = older = undefined;
});

describe('converge status', () => {
  it('reads format 2 for its text and prints what format 1 prints; --output json is format 1', async () => {
    const asked: string[] = [];
    // The status server the daemon runs, with the document above; an older daemon's server, which knows no format 2.
    server = await startStatusServer({
      host: '127.0.0.1',
      port: 0,
      handlers: { readiness: async () => [], metrics: async () => '', status: () => doc },
    });
    older = createServer((req, res) => {
      asked.push(req.url ?? '');
      const url = new URL(req.url ?? '/', 'http://x');
      const unknown = [...url.searchParams.keys()];
      const [status, body] =
        url.pathname === '/readyz'
          ? [200, readyz]
          : unknown.length > 0
            ? [400, { error: `unknown /status parameter "${unknown[0]}"` }]
            : [200, doc];
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
    await new Promise<void>((resolve) => older!.listen(0, '127.0.0.1', resolve));
    const olderUrl = `http://127.0.0.1:${(older.address() as AddressInfo).port}`;

    const text = await runCapture(['status', '--url', server.url]);
    const fromOlder = await runCapture(['status', '--url', olderUrl]);
    expect(text.code).toBe(0);
    expect(fromOlder.code).toBe(0);
    // The text asks for format 2 first; the older daemon's 400 makes it ask for the document as that daemon gives it.
    expect([...asked].sort()).toEqual(['/readyz', '/status', '/status?format=2']);
    // The same words from format 2 as from format 1 (the daemon's URL aside).
    expect(text.stdout.replaceAll(server.url, 'URL')).toBe(fromOlder.stdout.replaceAll(olderUrl, 'URL'));
    expect(text.stdout).toMatch(/Deployment\s+app-001\s+out_of_sync\*\s+healthy\s+SecretsUnknown\s+adopt/);
    expect(text.stdout).toContain('a manifest error that is long enough to be referenced');
    expect(text.stdout).toContain(`teams/app-002.yaml:9:3: warning: ${diagnostic.message}`);

    const json = await runCapture(['status', '--url', server.url, '--output', 'json']);
    const printed = JSON.parse(json.stdout) as Record<string, unknown>;
    expect(printed.format_version).toBe('1');
    expect(printed.resources).toEqual(doc.resources);
  });
});
