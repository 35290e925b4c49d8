// One poll of the rollout follower against a fake client: each followed resource read once, by its latest revision while the service has the endpoint, else by the listing, and the requests it took.
import { describe, expect, it } from 'vitest';
import type { LiveDeployment } from '../core/model.js';
import type { RolloutTarget } from '../core/rollout.js';
import type { RevisionReads } from '../service/client.js';
import type { RevisionById } from '../service/revisions.js';
import { pollRollouts } from './rollouts.js';

function deployment(id: string, latest: string | null): LiveDeployment {
  return { id, name: id, status: 'DEPLOYING', latest_revision_id: latest, active_revision_id: null } as LiveDeployment;
}

/** A client whose revisions are `statuses` (revision id -> status; absent: gone), listing every id it is asked for. */
function fakeClient(
  statuses: Record<string, string>,
  endpoint = true,
): RevisionReads & { reads: string[]; lists: string[][] } {
  let known: boolean | undefined;
  const client = {
    reads: [] as string[],
    lists: [] as string[][],
    get revisionReads(): boolean | undefined {
      return known;
    },
    async readRevision(_deploymentId: string, revisionId: string): Promise<RevisionById> {
      if (known === false) return { outcome: 'no-endpoint', status: 0 };
      client.reads.push(revisionId);
      known = endpoint;
      if (!endpoint) return { outcome: 'no-endpoint', status: 405 };
      const status = statuses[revisionId];
      return status
        ? {
            outcome: 'found',
            revision: {
              id: revisionId,
              status,
              created_at: '2026-01-01T00:00:00Z',
              updated_at: '2026-01-01T00:00:30Z',
            },
          }
        : { outcome: 'gone' };
    },
    async listDeploymentsById(ids: readonly string[]) {
      client.lists.push([...ids]);
      return ids.filter((id) => !id.startsWith('missing')).map((id) => deployment(id, 'r-listed'));
    },
  };
  return client;
}

const target = (name: string, revisionId?: string): RolloutTarget => ({
  key: `Deployment/${name}`,
  kind: 'Deployment',
  deploymentId: name,
  revisionId,
});

describe('pollRollouts', () => {
  it('reads a known latest revision; lists one without it, one whose revision is gone, and skips one the service no longer has', async () => {
    const client = fakeClient({ r1: 'BUILDING', r2: 'BUILD_FAILED' });
    const poll = await pollRollouts(client, [
      target('a', 'r1'),
      target('b', 'r2'),
      target('c'),
      target('d', 'r-gone'),
      target('missing-e'),
    ]);
    expect(poll.readings.get('Deployment/a')).toEqual({
      revision: { id: 'r1', status: 'BUILDING', createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:30Z' },
    });
    expect(poll.readings.get('Deployment/b')).toMatchObject({ revision: { id: 'r2', status: 'BUILD_FAILED' } });
    expect(poll.readings.get('Deployment/c')).toEqual({ live: deployment('c', 'r-listed') });
    expect(poll.readings.get('Deployment/d')).toEqual({ live: deployment('d', 'r-listed') });
    expect(poll.readings.has('Deployment/missing-e')).toBe(false);
    expect(client.lists).toEqual([['c', 'missing-e', 'd']]);
    expect(poll.requests).toBe(3 + 1);
  });

  it('without the revision endpoint: one probe, then every one through the list, 100 ids per request', async () => {
    const client = fakeClient({}, false);
    const targets = Array.from({ length: 150 }, (_, i) => target(`d${i}`, `r${i}`));
    const poll = await pollRollouts(client, targets, { parallel: 1 });
    expect(client.reads).toEqual(['r0']);
    expect(client.lists.map((ids) => ids.length)).toEqual([100, 50]);
    expect(poll.readings.size).toBe(150);
    expect(poll.requests).toBe(1 + 2);
    const again = await pollRollouts(client, targets.slice(0, 3));
    expect(again.requests).toBe(1);
    expect(client.reads).toEqual(['r0']);
  });

  it('stops reading once told to', async () => {
    const client = fakeClient({ r1: 'BUILDING' });
    const poll = await pollRollouts(client, [target('a', 'r1'), target('c')], { stopped: () => true });
    expect(poll).toEqual({ readings: new Map(), requests: 0 });
    expect(client.lists).toEqual([]);
  });
});
