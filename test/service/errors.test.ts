// classifyFailure and the small parsers of the HTTP layer, as tables.
import { describe, expect, it } from 'vitest';
import {
  BadResponseError,
  classifyFailure,
  NetworkError,
  networkFailureOf,
  ServiceError,
} from '../../src/service/errors.js';
import { backoffDelay } from '../../src/service/backoff.js';
import { detailText, parseRetryAfter } from '../../src/service/answers.js';
import { ConvergeError } from '../../src/core/errors.js';

function service(status: number, retryAfterMs?: number): ServiceError {
  return new ServiceError({
    status,
    detail: 'd',
    method: 'GET',
    route: '/r',
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
  });
}

function coded(code: string): Error {
  return Object.assign(new Error('boom'), { code });
}

describe('classifyFailure', () => {
  it.each([
    [
      'network error',
      new NetworkError({ reason: 'reset', method: 'GET', route: '/r', text: 'reset' }),
      'retry',
      undefined,
    ],
    ['500', service(500), 'retry', undefined],
    ['502', service(502), 'retry', undefined],
    ['503 with Retry-After', service(503, 2000), 'retry', 2000],
    ['504', service(504), 'retry', undefined],
    ['408', service(408), 'retry', undefined],
    ['429 with Retry-After', service(429, 1500), 'rate_limited', 1500],
    ['429 without Retry-After', service(429), 'rate_limited', undefined],
    ['400', service(400), 'fatal', undefined],
    ['401', service(401), 'fatal', undefined],
    ['403', service(403), 'fatal', undefined],
    ['404', service(404), 'fatal', undefined],
    ['409', service(409), 'fatal', undefined],
    ['422', service(422), 'fatal', undefined],
    [
      'truncated body',
      new BadResponseError({ method: 'GET', route: '/r', text: 't', truncated: true }),
      'retry',
      undefined,
    ],
    ['wrong shape', new BadResponseError({ method: 'GET', route: '/r', text: 't' }), 'fatal', undefined],
    ['too large', new ConvergeError('E_RESPONSE_TOO_LARGE', 'big'), 'fatal', undefined],
    ['paging', new ConvergeError('E_PAGING', 'loop'), 'fatal', undefined],
    ['raw ECONNRESET', coded('ECONNRESET'), 'retry', undefined],
    ['raw undici socket error', coded('UND_ERR_SOCKET'), 'retry', undefined],
    ['programming error', new TypeError('x is undefined'), 'fatal', undefined],
    ['a thrown string', 'weird', 'fatal', undefined],
  ] as const)('%s → %s', (_label, error, kind, retryAfterMs) => {
    const result = classifyFailure(error);
    expect(result.kind).toBe(kind);
    expect(result.retryAfterMs).toBe(retryAfterMs);
    expect(result.message.length).toBeGreaterThan(0);
  });

  it('passes the error message through as the one-line message', () => {
    expect(classifyFailure(service(404)).message).toBe('GET /r answered 404: d');
    expect(classifyFailure(new TypeError('bad\nsecond line')).message).toBe('TypeError: bad');
  });
});

describe('networkFailureOf', () => {
  it.each([
    ['UND_ERR_CONNECT_TIMEOUT', 'connect_timeout'],
    ['UND_ERR_HEADERS_TIMEOUT', 'headers_timeout'],
    ['UND_ERR_BODY_TIMEOUT', 'body_timeout'],
    ['ECONNREFUSED', 'refused'],
    ['ENOTFOUND', 'dns'],
    ['HPE_INVALID_CONSTANT', 'protocol'],
    ['UND_ERR_INVALID_ARG', undefined],
  ])('%s → %s', (code, reason) => {
    expect(networkFailureOf(coded(code))).toBe(reason);
  });

  it('looks inside an AggregateError of connection attempts', () => {
    expect(networkFailureOf(new AggregateError([coded('ECONNREFUSED'), coded('ECONNREFUSED')]))).toBe('refused');
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2024-05-01T12:00:00Z');
  it.each([
    ['1', 1000],
    ['0', 0],
    ['2.5', 2500],
    [' 30 ', 30_000],
    ['Wed, 01 May 2024 12:00:05 GMT', 5000],
    ['Wed, 01 May 2024 11:59:00 GMT', 0],
    ['soon', undefined],
    ['', undefined],
    [undefined, undefined],
  ])('%j → %j', (value, expected) => {
    expect(parseRetryAfter(value, now)).toBe(expected);
  });

  it('takes the first of repeated headers', () => {
    expect(parseRetryAfter(['3', '9'], now)).toBe(3000);
  });
});

describe('backoffDelay', () => {
  const backoff = { baseMs: 200, capMs: 1000 };
  it.each([
    [1, 0.999, 199],
    [2, 0.999, 399],
    [3, 0.5, 400],
    [4, 0.999, 999],
    [9, 0.999, 999],
    [3, 0, 0],
  ])(
    'attempt %i with random %f waits %i ms (full jitter under a doubling, capped ceiling)',
    (attempt, random, expected) => {
      expect(backoffDelay(attempt, backoff, undefined, () => random)).toBe(expected);
    },
  );

  it('never waits less than a Retry-After, and adds no jitter above it', () => {
    expect(backoffDelay(1, backoff, 3_000, () => 0)).toBe(3_000);
    expect(backoffDelay(1, backoff, 3_000, () => 0.999)).toBe(3_000);
    expect(backoffDelay(4, backoff, 500, () => 0.999)).toBe(999);
    expect(backoffDelay(1, backoff, 0, () => 0.5)).toBe(100);
  });
});

describe('detailText', () => {
  it.each([
    [404, { detail: 'Deployment not found' }, 'Deployment not found'],
    [
      422,
      { detail: [{ loc: ['body', 'source_config', 'repo_url'], msg: 'Field required', type: 'missing' }] },
      'body.source_config.repo_url: Field required',
    ],
    [422, { detail: [] }, 'Unprocessable Entity'],
    [400, { detail: '' }, 'Bad Request'],
    [500, { message: 'internal' }, 'internal'],
    [503, 'text', 'Service Unavailable'],
    [599, undefined, 'HTTP 599'],
  ])('%i %j → %s', (status, body, expected) => {
    expect(detailText(status, body)).toBe(expected);
  });
});
