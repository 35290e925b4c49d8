// The job runner's first step: a job of a former leader (older fencing token) or a superseded one is completed unsent.
import type { Job } from 'bullmq';
import { describe, expect, it } from 'vitest';
import type { ServiceClient } from '../../service/client.js';
import { buildJobData } from '../queue/jobs.js';
import { createProcessor, type ProcessorContext } from './processor.js';
import { wasNotRun, type StaleJob } from './stale-job.js';
import type { AppliedStateStore } from '../../store/applied-state.js';
import type { PendingWrite } from '../../core/kinds/index.js';

const data = {
  ...buildJobData(
    {
      kind: 'Deployment',
      name: 'web',
      location: { file: 'web.yaml', line: 1, column: 1 },
      suspend: false,
      spec: {
        source: 'external_docker',
        source_config: { resource_spec: { max_scale: 2 } },
        source_revision_config: { image_uri: 'docker.io/web:1' },
      },
    },
    'patch-deployment',
    {
      origin: 'daemon',
      write: { op: 'update', fields: ['source_config.resource_spec.max_scale'] },
      now: new Date('2026-01-01T00:00:00Z'),
    },
  ),
  fence: 3,
  seq: 7,
};

/**
 * A processor's context whose service must not be called, and whose applied state answers only `read` (with `pending`
 * as the resource's pending write): a former leader's job asks it whether a write of its own is still pending.
 */
function context(
  stale: StaleJob | undefined,
  lines: Array<{ fields: object; msg: string }>,
  pending?: PendingWrite,
): ProcessorContext {
  const untouchable = new Proxy(
    {},
    {
      get: (_, name) => {
        throw new Error(`${String(name)} must not be called for a stale job`);
      },
    },
  );
  const readOnly = new Proxy(
    { read: async () => ({ applied: undefined, pending }) },
    {
      get: (target, name) => {
        if (name === 'read') return target.read;
        throw new Error(`${String(name)} must not be called for a stale job`);
      },
    },
  );
  const log = {
    info: (fields: object, msg: string) => lines.push({ fields, msg }),
    debug: () => undefined,
    warn: () => undefined,
    error: () => undefined,
  };
  return {
    client: untouchable as ServiceClient,
    store: readOnly as unknown as AppliedStateStore,
    env: {},
    log: log,
    rateLimit: async () => undefined,
    stale: async (seen) => {
      expect(seen).toMatchObject({ key: 'Deployment/web', fence: 3, seq: 7 });
      return stale;
    },
  };
}

describe('createProcessor: stale jobs', () => {
  it("completes a former leader's job as unchanged with the reason, sends nothing, and logs it once", async () => {
    const lines: Array<{ fields: object; msg: string }> = [];
    const process = createProcessor(
      context(
        {
          code: 'former_leader',
          message: 'enqueued by a former leader (fencing token 3, current 4); dropped, nothing sent',
        },
        lines,
      ),
    );
    const result = await process({ id: 'j1', data, attemptsMade: 0 } as unknown as Job);
    // An outcome, with its code: the daemon tells a job not run by it, not by the wording.
    expect(result).toEqual({
      outcome: 'unchanged',
      new_revision: false,
      message: 'enqueued by a former leader (fencing token 3, current 4); dropped, nothing sent',
      notRun: 'former_leader',
    });
    expect(wasNotRun(result)).toBe(true);
    expect(wasNotRun({ outcome: 'unchanged', new_revision: false })).toBe(false);
    // The field says it, never the wording: a message that reads like one is a job that ran.
    expect(
      wasNotRun({
        outcome: 'unchanged',
        new_revision: false,
        message: 'enqueued by a former leader (fencing token 3, current 4)',
      }),
    ).toBe(false);
    expect(
      wasNotRun({
        outcome: 'unchanged',
        new_revision: false,
        message: 'superseded by a newer desired state enqueued since; nothing sent',
      }),
    ).toBe(false);
    expect(lines).toEqual([
      {
        fields: { key: 'Deployment/web', jobId: 'j1', seq: 7, fence: 3 },
        msg: 'job not run: enqueued by a former leader (fencing token 3, current 4); dropped, nothing sent',
      },
    ]);
  });

  it("a former leader's job sends nothing when the resource's pending write is another job's", async () => {
    const lines: Array<{ fields: object; msg: string }> = [];
    const sentAt = '2026-01-01T00:00:00.000Z';
    const another: PendingWrite = { op: 'patch', secrets: {}, sentAt, startsRevision: true, jobId: 'j2' };
    const dropped = 'enqueued by a former leader (fencing token 3, current 4); dropped, nothing sent';
    const process = createProcessor(context({ code: 'former_leader', message: dropped }, lines, another));
    const result = await process({ id: 'j1', data, attemptsMade: 0 } as unknown as Job);
    expect(result).toMatchObject({ outcome: 'unchanged', notRun: 'former_leader' });
    expect(lines.map((l) => l.msg)).toEqual([`job not run: ${dropped}`]);
  });
});
