// The masker of secret values: whole values where they stand as a value; long ones wherever they appear.
import { describe, expect, it } from 'vitest';
import { maskValues } from './mask.js';

const R = '[redacted]';

describe('maskValues', () => {
  it('leaves a short value inside a word alone: "already exists" stays whole with the secret "x"', () => {
    expect(maskValues('deployment already exists', ['x'], R)).toBe('deployment already exists');
    expect(maskValues('value x is too short', ['x'], R)).toBe(`value ${R} is too short`);
    expect(maskValues('x', ['x'], R)).toBe(R);
    expect(maskValues('key=x; other=x.', ['x'], R)).toBe(`key=${R}; other=${R}.`);
  });

  it('masks a short value between punctuation, and one that begins or ends with punctuation next to a word', () => {
    expect(maskValues('"demo" (demo) demo-agent demos', ['demo'], R)).toBe(`"${R}" (${R}) ${R}-agent demos`);
    expect(maskValues('token:-ab', ['-ab'], R)).toBe(`token:${R}`);
    expect(maskValues('ümlautxß x', ['x'], R)).toBe(`ümlautxß ${R}`);
  });

  it('masks a value of 8 characters or more wherever it appears, also glued to other text', () => {
    expect(maskValues('Bearersk-live-123456 and ?key=sk-live-123456&', ['sk-live-123456'], R)).toBe(
      `Bearer${R} and ?key=${R}&`,
    );
  });

  it('masks the longer of two overlapping values first, skips empty and undefined ones, and every occurrence', () => {
    expect(maskValues('abc abcdef abc', ['abc', 'abcdef', '', undefined], R)).toBe(`${R} ${R} ${R}`);
    expect(maskValues('nothing here', [], R)).toBe('nothing here');
  });
});
