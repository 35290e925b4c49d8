// The daemon's DELETE probe when a delete falls due: an unanswered probe is unknown, its due deletes wait with its note, nothing else changes.
import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../core/errors.js';
import type { Plan, PlanChange } from '../../core/model.js';
import { pruneGrace } from '../../core/prune-grace.js';
import { deletesWaitingForProbe, PROBE_RECHECK_MS, probeDeletes } from './delete-probe.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');

function del(name: string, id: string): PlanChange {
  return { kind: 'Deployment', name, action: 'delete', new_revision: false, fields: [], reason: null, id };
}

describe('probeDeletes', () => {
  it('passes an answer through, and turns a failure into unknown with one line naming it', async () => {
    expect(await probeDeletes({ deploymentDeletes: async () => ({ deletes: true }) })).toEqual({ deletes: true });
    const failed = await probeDeletes({
      deploymentDeletes: async () => {
        throw new ServiceError({
          status: 503,
          method: 'DELETE',
          route: '/v2/deployments/{deployment_id}',
          detail: 'Service temporarily unavailable\nsecond line',
        });
      },
    });
    expect(failed).toEqual({
      deletes: 'unknown',
      note: "delete due, not sent: the service did not answer converge's DELETE probe (DELETE /v2/deployments/{deployment_id} answered 503: Service temporarily unavailable); the delete waits, and a reconcile asks again within 30s",
    });
  });
});

describe('deletesWaitingForProbe', () => {
  it('marks the due deletes pending with the note, keeps the waiting ones as they wait, and asks for a reconcile within PROBE_RECHECK_MS', () => {
    const plan: Plan = {
      format_version: '1',
      summary: { create: 0, update: 0, adopt: 0, delete: 2, noop: 0, orphan: 0, blocked: 0 } as Plan['summary'],
      changes: [del('due', 'id-due'), del('young', 'id-young')],
      diagnostics: [],
    };
    const absent = new Map([['Deployment/due', { since: T0, manifests: 'm', seen: 1, id: 'id-due' }]]);
    const now = T0 + 120_000;
    const graced = pruneGrace({
      absent,
      candidates: [
        { key: 'Deployment/due', id: 'id-due' },
        { key: 'Deployment/young', id: 'id-young' },
      ],
      manifests: 'm',
      now,
      graceMs: 60_000,
      mode: 'auto',
      confirmed: () => false,
    });
    expect([...graced.due]).toEqual(['Deployment/due']);
    const { plan: waiting, recheckAt } = deletesWaitingForProbe(plan, graced, 'the note', now);
    const [due, young] = waiting.changes;
    expect(due).toMatchObject({
      action: 'delete',
      id: 'id-due',
      reason: 'the note',
      pending_delete: { since: new Date(T0).toISOString(), due: new Date(now).toISOString(), confirm: false },
    });
    expect(young?.pending_delete).toMatchObject({ since: new Date(now).toISOString(), confirm: false });
    expect(young?.reason).toMatch(/^delete pending: owned by converge/);
    expect(waiting.notes).toEqual(['the note']);
    // The young delete is due in 60 s, the probe is asked again sooner.
    expect(recheckAt).toBe(now + PROBE_RECHECK_MS);
  });
});
