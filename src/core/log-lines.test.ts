// The log line formatter: the official tool's shape, every secret value masked (longest first), the tail's order.
import { describe, expect, it } from 'vitest';
import { formatLogEntry, logTimestamp, MASKED, MAX_LOG_LINE_CHARS, tailLines } from './log-lines.js';
import { maskValues } from './mask.js';

describe('log lines', () => {
  it('masks every value, a value inside another included, and leaves empty values alone', () => {
    expect(maskValues('token=abc123 url=https://u:abc123xyz@host', ['abc123', 'abc123xyz', ''], MASKED)).toBe(
      `token=${MASKED} url=https://u:${MASKED}@host`,
    );
    expect(maskValues('nothing here', [], MASKED)).toBe('nothing here');
  });

  it('formats [time] [LEVEL] message from ms or text, and makes control characters spaces', () => {
    expect(logTimestamp(Date.UTC(2026, 10, 26, 14, 5, 9))).toBe('2026-11-26 14:05:09');
    expect(logTimestamp('2026-11-26T14:05:09Z')).toBe('2026-11-26T14:05:09Z');
    expect(logTimestamp(null)).toBe('');
    expect(
      formatLogEntry(
        { timestamp: Date.UTC(2026, 0, 2, 3, 4, 5), level: 'ERROR', message: 'pip failed\u001b[31m with KEY=s3cret' },
        ['s3cret'],
      ),
    ).toBe(`[2026-01-02 03:04:05] [ERROR] pip failed [31m with KEY=${MASKED}`);
    expect(formatLogEntry({ message: 'bare' }, [])).toBe('bare');
  });

  it('the tail of a newest-first page is at most max lines, oldest first', () => {
    const page = Array.from({ length: 30 }, (_, i) => ({
      id: String(29 - i),
      timestamp: null,
      level: 'INFO',
      message: `line ${29 - i}`,
    }));
    const lines = tailLines(page, [], 20);
    expect(lines).toHaveLength(20);
    expect(lines[0]).toBe('[INFO] line 10');
    expect(lines.at(-1)).toBe('[INFO] line 29');
  });

  it('cuts a line longer than 4 KiB with a marker, after masking (a secret across the cut is never half shown)', () => {
    const secret = 'S3CRET-VALUE';
    const message = 'x'.repeat(MAX_LOG_LINE_CHARS - 4) + secret + 'y'.repeat(600_000);
    const [line] = tailLines([{ id: '1', timestamp: null, level: 'ERROR', message }], [secret]);
    expect(line!.length).toBeLessThan(MAX_LOG_LINE_CHARS + 100);
    expect(line).not.toContain('S3CR');
    // "[ERROR] " (8), 4,092 x, the mask (8) and 600,000 y.
    expect(line).toMatch(/ … \[line cut: 604,108 characters, the first 4,096 kept\]$/);
    const [short] = tailLines([{ id: '2', timestamp: null, level: 'INFO', message: 'short' }], []);
    expect(short).toBe('[INFO] short');
  });
});
