// The page's decoder of format 2 (script-format.ts) makes every answer whole as src/core/status-compact.ts does.
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { decodeStatus, encodeStatus } from '../../../core/status-compact.js';
import { SCRIPT_FORMAT } from './script-format.js';

const pageDecode = runInNewContext(`${SCRIPT_FORMAT}\ndecodeStatus`) as (answer: unknown) => unknown;

function row(i: number): Record<string, unknown> {
  const name = `app-${String(i).padStart(4, '0')}`;
  const revisionId = `rev-${String(i).padStart(8, '0')}-aaaa`;
  return {
    key: `Deployment/${name}`,
    kind: 'Deployment',
    name,
    file: `teams/t${i % 2}/${name}.yaml`,
    action: 'update',
    state: 'ok',
    sync: { status: 'synced', reason: 'Synced', message: `${name} matches its manifest, nothing to write` },
    health: {
      status: 'degraded',
      reason: 'RevisionFailed',
      message: `revision ${revisionId} failed to build`,
      revisionId,
    },
    reason: i % 3 === 0 ? null : 'a {name} literal placeholder that is long enough',
    error: null,
    drift: i % 4 === 0 ? { policy: 'report', fields: ['a.b'] } : null,
    heldAtLastGood: i % 5 === 0,
    job: null,
    conflict: { t: 1 },
    deploymentId: `d-${i}`,
    desired: 'ff',
  };
}

describe("the page's decoder of format 2", () => {
  it('gives what the TypeScript decoder gives, for a whole answer and a delta', () => {
    const whole = {
      format_version: '1',
      resources: Array.from({ length: 40 }, (_, i) => row(i)),
      plan: {
        changes: [
          { reason: 'the same long reason of a change' },
          { reason: 'the same long reason of a change' },
          { before: { $: 2 } },
        ],
      },
      view: { delta: false },
    };
    const delta = {
      format_version: '1',
      resources: [row(3), row(4)],
      planDelta: {
        changes: {
          changed: [
            {
              key: 'k',
              after: null,
              entries: [{ reason: 'the same long reason of a change' }, { reason: 'the same long reason of a change' }],
            },
          ],
          removed: [],
        },
      },
    };
    for (const answer of [whole, delta]) {
      const encoded = JSON.parse(JSON.stringify(encodeStatus(answer))) as Record<string, unknown>;
      expect(encoded.strings).not.toEqual([]);
      expect(JSON.parse(JSON.stringify(pageDecode(encoded)))).toEqual(decodeStatus(encoded));
    }
    const one = { format_version: '1', resources: [row(1)] };
    expect(pageDecode(one)).toBe(one);
  });
});
