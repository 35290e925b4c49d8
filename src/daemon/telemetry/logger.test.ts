// The logger never writes the API key or a secret value, whatever shape the logged object has.
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, literalCensor, REDACTED, scrub } from './logger.js';

const API_KEY = 'lsv2_pt_planted_api_key_1234567890';
const SECRET_A = 'sk-planted-secret-value-AAAA';
const SECRET_B = 'planted-client-secret-BBBB';
const SECRET_C = 'planted-deep-secret-CCCC';
const PLANTED = [API_KEY, SECRET_A, SECRET_B, SECRET_C];

function capture(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c));
  return { stream, text: () => Buffer.concat(chunks).toString('utf8') };
}

function logEverything(pretty: boolean): string {
  const out = capture();
  const log = createLogger({ level: 'trace', destination: out.stream, pretty, sensitive: [API_KEY] });
  log.info({ apiKey: API_KEY }, 'settings');
  log.info({ settings: { apiKey: API_KEY, redisUrl: 'redis://x' } }, 'nested settings');
  log.debug({ headers: { 'x-api-key': API_KEY, accept: 'application/json' } }, 'request headers');
  log.debug({ request: { headers: { 'x-api-key': API_KEY } } }, 'request');
  log.info({ secrets: [{ name: 'OPENAI_API_KEY', value: SECRET_A }] }, 'secrets');
  log.info({ body: { name: 'd', secrets: [{ name: 'A', value: SECRET_A }] } }, 'body');
  log.info({ job: { data: { body: { secrets: [{ name: 'A', value: SECRET_A }] } } } }, 'deep body');
  log.info({ client_secret: SECRET_B }, 'provider');
  log.info({ provider: { spec: { client_secret: SECRET_B } } }, 'provider nested');
  log.info({ a: { b: { c: { d: { e: { password: SECRET_C, token: SECRET_C } } } } } }, 'very deep');
  log.info({ value: SECRET_C }, 'a value');
  log.warn(`request failed with key ${API_KEY} in the message`);
  log.warn({ note: `quoted "${API_KEY}" inside` }, 'quoted');
  log.error({ detail: 'no secrets here', key: 'Deployment/a' }, 'plain line');
  return out.text();
}

describe('createLogger', () => {
  it.each([false, true])('pretty=%s: planted secret values and the API key are absent from the output', (pretty) => {
    const text = logEverything(pretty);
    expect(text.length).toBeGreaterThan(200);
    for (const planted of PLANTED) expect(text).not.toContain(planted);
    expect(text).toContain(REDACTED);
    // What is not secret still reaches the log.
    expect(text).toContain('Deployment/a');
    expect(text).toContain('OPENAI_API_KEY');
    expect(text).toContain('redis://x');
  });

  it('writes JSON lines by default, with level, time and message', () => {
    const out = capture();
    const log = createLogger({ level: 'info', destination: out.stream });
    log.info({ created: 1 }, 'reconciled');
    log.debug('hidden below the level');
    const lines = out.text().trim().split('\n');
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0]!);
    expect(line).toMatchObject({ level: 30, msg: 'reconciled', created: 1, name: 'converge' });
    expect(typeof line.time).toBe('string');
  });

  it('writes human lines in pretty mode', () => {
    const out = capture();
    const log = createLogger({ level: 'info', destination: out.stream, pretty: true });
    log.info({ created: 1 }, 'reconciled');
    const text = out.text();
    expect(text).toContain('INFO');
    expect(text).toContain('reconciled');
    expect(() => JSON.parse(text)).toThrow();
  });
});

describe('scrub', () => {
  it('returns the same object when there is nothing to censor', () => {
    const value = { a: 1, b: [{ c: 'x' }] };
    expect(scrub(value)).toBe(value);
  });

  it('censors sensitive keys at any depth without touching the original', () => {
    const value = { l1: { l2: [{ l3: { apiKey: API_KEY, secrets: [{ name: 'n', value: SECRET_A }] } }] } };
    const out = scrub(value) as typeof value;
    expect(JSON.stringify(out)).not.toContain(API_KEY);
    expect(JSON.stringify(out)).not.toContain(SECRET_A);
    expect(JSON.stringify(value)).toContain(API_KEY);
  });
});

describe('literalCensor', () => {
  it('replaces the literal and its JSON-escaped form, and ignores empty or tiny literals', () => {
    const odd = 'key"with\\quote';
    const censor = literalCensor([odd, '', 'ab'])!;
    expect(censor(`{"msg":${JSON.stringify(`x ${odd} y`)}}`)).toBe(`{"msg":"x ${REDACTED} y"}`);
    expect(literalCensor(['', 'ab'])).toBeUndefined();
  });

  it('masks a short literal only where it stands as a value, a long one anywhere', () => {
    const censor = literalCensor(['tokn', 'long-secret-1234'])!;
    expect(censor('{"msg":"retokned tokn xlong-secret-1234"}')).toBe(`{"msg":"retokned ${REDACTED} x${REDACTED}"}`);
  });
});
