// The event recorder's buffer while Redis does not answer: entries past its bound are counted and said, never dropped in silence.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { ResourceState } from '../../src/core/resource-state.js';
import { EventRecorder, type RecordStore } from '../../src/daemon/status/event-recorder.js';
import { ResourceTracker } from '../../src/daemon/status/resource-tracker.js';

const ROW: ResourceState = {
  key: 'Deployment/web', kind: 'Deployment', name: 'web', file: 'web.yaml', action: 'update',
  sync: { status: 'synced', reason: 'Applied', message: 'applied' },
  health: { status: 'progressing', reason: 'RevisionBuilding', message: 'building r0', revisionId: 'r0' },
  reason: null, error: null, drift: null, heldAtLastGood: false, job: null, deploymentId: 'd-web',
};

describe('the event recorder past its buffer', () => {
  it('counts every entry it drops while Redis hangs and warns once', async () => {
    const lines: Array<{ level: number; msg: string; max?: number }> = [];
    const sink = new Writable({ write: (chunk: Buffer, _enc, done) => (lines.push(JSON.parse(chunk.toString()) as (typeof lines)[number]), done()) });
    const log = pino({ level: 'info' }, sink);
    // Redis that never answers: the first write hangs, every later entry waits behind it.
    const hanging = { write: () => new Promise<void>(() => undefined) } as unknown as RecordStore;
    let dropped = 0;
    const tracker = new ResourceTracker();
    new EventRecorder(hanging, { by: 'replica-a', log, leading: () => true, overflow: (n) => (dropped += n) }, tracker);
    tracker.restore(new Map([[ROW.key, ROW]]));
    const revisions = 10_050;
    for (let i = 1; i <= revisions; i++) tracker.setHealth(ROW.key, { status: 'progressing', reason: 'RevisionBuilding', message: `building r${i}`, revisionId: `r${i}`, revisionStatus: 'BUILDING' });
    // The first entry went out with the write that hangs; 10,000 wait; the rest were dropped, each one counted.
    expect(dropped).toBe(revisions - 1 - 10_000);
    await new Promise((resolve) => setImmediate(resolve));
    const warnings = lines.filter((l) => l.level === 40 && l.msg.startsWith('event log: entries wait past the buffer'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.max).toBe(10_000);
  });
});
