// The job runner's first step: a job of a former leader (older fencing token) or a superseded one is completed unsent.
import type { Job } from 'bullmq';
import { describe, expect, it } from 'vitest';
import type { ServiceClient } from '../../service/client.js';
import { buildJobData } from '../queue/jobs.js';
import { createProcessor, type ProcessorContext } from './processor.js';
import { wasNotRun, type StaleJob } from './stale-job.js';
import type { AppliedStateStore } from '../../store/applied-state.js';

const data = {
  ...buildJobData(
    {
      kind: 'Deployment',
      name: 'web',
      location: { file: 'web.yaml', line: 1, column: 1 },
      suspend: false,
      spec: { source: 'external_docker', source_config: { resource_spec: { max_scale: 2 } }, source_revision_config: { image_uri: 'docker.io/web:1' } },
    },
    'patch-deployment',
    { origin: 'daemon', write: { op: 'update', fields: ['source_config.resource_spec.max_scale'] }, now: new Date('2026-01-01T00:00:00Z') },
  ),
  fence: 3,
  seq: 7,
};

function context(stale: StaleJob | undefined, lines: Array<{ fields: object; msg: string }>): ProcessorContext {
  const untouchable = new Proxy({}, { get: (_, name) => { throw new Error(`${String(name)} must not be called for a stale job`); } });
  const log = { info: (fields: object, msg: string) => lines.push({ fields, msg }), debug: () => undefined, warn: () => undefined, error: () => undefined };
  return {
    client: untouchable as ServiceClient,
    store: untouchable as AppliedStateStore,
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
    const process = createProcessor(context({ code: 'former_leader', message: 'enqueued by a former leader (fencing token 3, current 4); dropped, nothing sent' }, lines));
    const result = await process({ id: 'j1', data, attemptsMade: 0 } as unknown as Job);
    // An outcome, with its code: the daemon tells a job not run by it, not by the wording.
    expect(result).toEqual({ outcome: 'unchanged', new_revision: false, message: 'enqueued by a former leader (fencing token 3, current 4); dropped, nothing sent', notRun: 'former_leader' });
    expect(wasNotRun(result)).toBe(true);
    expect(wasNotRun({ outcome: 'unchanged', new_revision: false })).toBe(false);
    // The field says it, never the wording: a message that reads like one is a job that ran.
    expect(wasNotRun({ outcome: 'unchanged', new_revision: false, message: 'enqueued by a former leader (fencing token 3, current 4)' })).toBe(false);
    expect(wasNotRun({ outcome: 'unchanged', new_revision: false, message: 'superseded by a newer desired state enqueued since; nothing sent' })).toBe(false);
    expect(lines).toEqual([{ fields: { key: 'Deployment/web', jobId: 'j1', seq: 7, fence: 3 }, msg: 'job not run: enqueued by a former leader (fencing token 3, current 4); dropped, nothing sent' }]);
  });
});
