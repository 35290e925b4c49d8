// ServiceClient's revision reads: found, gone, and a service without the endpoint probed once and never asked again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { ServiceClient } from '../../src/service/client.js';

const emulators: RunningEmulator[] = [];
const clients: ServiceClient[] = [];

async function setUp(
  specOnly: boolean,
): Promise<{ e: RunningEmulator; client: ServiceClient; notices: string[]; id: string; revision: string }> {
  const e = await startEmulator({ buildMs: 60_000, buildFail: /^bad/, specOnly });
  emulators.push(e);
  const client = new ServiceClient({ baseUrl: e.url });
  clients.push(client);
  const notices: string[] = [];
  client.onNotice((m) => notices.push(m));
  const created = await client.createDeployment({
    name: 'bad-one',
    source: 'external_docker',
    source_config: { resource_spec: {} },
    source_revision_config: { image_uri: 'docker.io/acme/a:1' },
    secrets: [],
  } as never);
  return { e, client, notices, id: created.id, revision: created.latest_revision_id! };
}

afterAll(async () => {
  for (const c of clients) await c.close();
  for (const e of emulators) await e.close();
});

describe('revision reads', () => {
  let specOnly: Awaited<ReturnType<typeof setUp>>;
  let full: Awaited<ReturnType<typeof setUp>>;
  beforeAll(async () => {
    [full, specOnly] = await Promise.all([setUp(false), setUp(true)]);
  });

  it('reads a revision, tells a revision or deployment that is not there, and lists revisions', async () => {
    const answer = await full.client.readRevision(full.id, full.revision);
    expect(answer).toMatchObject({ outcome: 'found', revision: { id: full.revision, status: 'QUEUED' } });
    expect(await full.client.readRevision(full.id, '00000000-0000-4000-8000-000000000000')).toEqual({
      outcome: 'gone',
    });
    expect(await full.client.readRevision('00000000-0000-4000-8000-000000000000', full.revision)).toEqual({
      outcome: 'gone',
    });
    expect(full.client.revisionReads).toBe(true);
    expect((await full.client.listRevisions(full.id))?.resources.map((r) => r.id)).toEqual([full.revision]);
    expect(full.notices).toEqual([]);
  });

  it('without the endpoint: one probe, one notice, then no request at all', async () => {
    const before = specOnly.e.requestLog.length;
    const answers = await Promise.all([
      specOnly.client.readRevision(specOnly.id, specOnly.revision),
      specOnly.client.readRevision(specOnly.id, specOnly.revision),
    ]);
    expect(answers.map((a) => a.outcome)).toEqual(['no-endpoint', 'no-endpoint']);
    expect(await specOnly.client.readRevision(specOnly.id, specOnly.revision)).toMatchObject({
      outcome: 'no-endpoint',
    });
    expect(specOnly.e.requestLog.length - before).toBe(1);
    expect(specOnly.client.revisionReads).toBe(false);
    expect(specOnly.notices).toHaveLength(1);
    expect(specOnly.notices[0]).toContain('ProgressDeadlineExceeded');
    expect(await specOnly.client.listRevisions(specOnly.id)).toBeUndefined();
  });

  it('lists deployments by id in one request when every id exists', async () => {
    const before = full.e.requestLog.length;
    expect((await full.client.listDeploymentsById([full.id])).map((d) => d.id)).toEqual([full.id]);
    expect(full.e.requestLog.length - before).toBe(1);
  });
});
