// Unit tests of the changes diffed ahead of plan(): one is used only where it is the diff plan() would make itself.
import { describe, expect, it } from 'vitest';
import { plan, type PlanInput } from './plan.js';
import { PreparedChanges } from './prepared.js';
import { renderJson } from './render/json.js';
import { desiredDocker as desired, liveDocker as live } from '../../test/helpers/docker-deployments.js';

const [web, api, job] = [desired('web', 2), desired('api', 1), desired('job', 1)];
const deployments = [live('web', 1), live('api', 1), live('job', 1)];
const hashes = { web: {}, api: {}, job: {} };
const input: PlanInput = {
  resources: [web, api, job],
  blocked: [],
  diagnostics: [],
  live: { deployments },
  applied: new Map(),
  secretHashes: new Map(Object.entries(hashes).map(([name, h]) => [`Deployment/${name}`, h])),
};

describe('PreparedChanges', () => {
  it('plan() takes a change prepared against the same live deployment and context, and leaves none behind', () => {
    const prepared = new PreparedChanges();
    prepared.prepare(web, deployments[0], { secretHashes: hashes.web });
    prepared.prepare(api, deployments[1], { secretHashes: hashes.api });
    expect(renderJson(plan(input, prepared))).toBe(renderJson(plan(input)));
    expect(prepared.size).toBe(0);
  });

  it('a change prepared against another live deployment or another context (an applied record, secret errors) is diffed again', () => {
    const prepared = new PreparedChanges();
    // Each of these, used as is, would make web a noop, api an update and job blocked: the plan must not show them.
    prepared.prepare(web, live('web', 2), { secretHashes: hashes.web });
    prepared.prepare(api, deployments[1], {
      secretHashes: hashes.api,
      applied: { secrets: {}, appliedAt: '2026-01-01T00:00:00Z' },
    });
    prepared.prepare(job, deployments[2], { secretHashes: {}, secretErrors: ['environment variable X is not set'] });
    const whole = plan(input);
    expect(whole.changes.map((c) => [c.name, c.action])).toEqual([
      ['api', 'noop'],
      ['job', 'noop'],
      ['web', 'update'],
    ]);
    expect(renderJson(plan(input, prepared))).toBe(renderJson(whole));
    expect(prepared.size).toBe(0);
  });
});
