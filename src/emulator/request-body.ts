// A request's body in the emulator: the size-limited read, the JSON content-type test, where a parse failed, and
// the redacted copy the request log keeps.
import type { IncomingMessage } from 'node:http';
import { redactedValue } from './records.js';

/** Bodies are drained (to let the 413 reach the client) up to this size; past it the connection is dropped. */
const MAX_DRAIN_BYTES = 64 * 1024 * 1024;

type BodyRead = { kind: 'ok'; data: Buffer } | { kind: 'too-large' } | { kind: 'aborted' };

export function readBody(req: IncomingMessage, maxBytes: number): Promise<BodyRead> {
  return new Promise((resolve) => {
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > MAX_DRAIN_BYTES) {
      resolve({ kind: 'too-large' });
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = declared > maxBytes;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) tooLarge = true;
      if (size > MAX_DRAIN_BYTES) {
        req.destroy();
        return;
      }
      if (!tooLarge) chunks.push(chunk);
    });
    req.on('end', () => resolve(tooLarge ? { kind: 'too-large' } : { kind: 'ok', data: Buffer.concat(chunks) }));
    req.on('error', () => resolve({ kind: 'aborted' }));
    req.on('close', () => {
      if (!req.complete) resolve(tooLarge ? { kind: 'too-large' } : { kind: 'aborted' });
    });
  });
}

/** Copies a request body with every secret value and client_secret replaced by a short hash. */
export function redactBody(value: unknown, key?: string): unknown {
  if (Array.isArray(value)) {
    return value.map((item) => {
      if (key === 'secrets' && item && typeof item === 'object' && !Array.isArray(item)) {
        const secret = { ...(item as Record<string, unknown>) };
        if (typeof secret.value === 'string') secret.value = redactedValue(secret.value);
        return redactBody(secret);
      }
      return redactBody(item);
    });
  }
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      out[k] = k === 'client_secret' && typeof v === 'string' ? redactedValue(v) : redactBody(v, k);
    }
    return out;
  }
  return value;
}

export function isJson(contentType: string | undefined): boolean {
  if (!contentType) return false;
  const mime = contentType.split(';')[0]!.trim().toLowerCase();
  return mime === 'application/json' || /^application\/[a-z0-9.+-]+\+json$/.test(mime);
}

/** Where JSON.parse failed, without echoing any of the input (it may hold a secret). */
export function jsonErrorPlace(error: unknown, text: string): string {
  const match = /position (\d+)/.exec((error as Error).message);
  if (!match) return text.trim() === '' ? 'the body is empty' : 'the body is not valid JSON';
  const position = Number(match[1]);
  const before = text.slice(0, position);
  const line = before.split('\n').length;
  const column = position - before.lastIndexOf('\n');
  return `invalid JSON at line ${line}, column ${column}`;
}
