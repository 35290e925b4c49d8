// throttledErrors: background errors are logged, one line per source and kind of error per interval, never swallowed.
import { describe, expect, it } from 'vitest';
import { throttledErrors, type QueueLogger } from './log.js';

function recorder(): { log: QueueLogger; lines: Array<{ obj: object; msg: string }> } {
  const lines: Array<{ obj: object; msg: string }> = [];
  const push = (obj: object, msg: string): void => void lines.push({ obj, msg });
  return { log: { debug: push, info: push, warn: push, error: push }, lines };
}

describe('throttledErrors', () => {
  it('logs the first error of each source and kind, then at most one per interval, with the count left out', () => {
    const { log, lines } = recorder();
    let now = 0;
    const report = throttledErrors(log, 30_000, () => now);
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379\n    at stack line'), {
      code: 'ECONNREFUSED',
    });
    report('worker', refused);
    report('worker', refused);
    report('queue', refused);
    report('worker', new Error('NOSCRIPT something else'));
    expect(lines).toEqual([
      { obj: { source: 'worker', error: 'connect ECONNREFUSED 127.0.0.1:6379' }, msg: 'background error' },
      { obj: { source: 'queue', error: 'connect ECONNREFUSED 127.0.0.1:6379' }, msg: 'background error' },
      { obj: { source: 'worker', error: 'NOSCRIPT something else' }, msg: 'background error' },
    ]);
    now = 29_999;
    report('worker', refused);
    expect(lines).toHaveLength(3);
    now = 30_000;
    report('worker', refused);
    expect(lines.at(-1)).toEqual({
      obj: { source: 'worker', error: 'connect ECONNREFUSED 127.0.0.1:6379', repeated: 2 },
      msg: 'background error',
    });
  });
});
