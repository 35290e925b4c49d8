// The signed upload URLs the emulator hands out (POST .../upload-url): one PUT of a source tarball each, bytes discarded.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestLogEntry } from './request-log.js';
import type { EmulatorStore } from './store.js';

/** The path of the signed upload URLs the emulator serves itself (one PUT each). */
export const UPLOAD_PATH_PREFIX = '/uploads/';

/** The largest tarball a signed URL takes: the range the official tool declares (X-Goog-Content-Length-Range 0,209715200). */
const MAX_UPLOAD_BYTES = 209_715_200;

/** Whether a request is a PUT to a signed upload URL (served here, without API key or JSON). */
export function isUpload(method: string, url: string): boolean {
  return method === 'PUT' && url.startsWith(UPLOAD_PATH_PREFIX);
}

function answer(res: ServerResponse, entry: RequestLogEntry, status: number, text: string): void {
  entry.status = status;
  entry.outcome = status < 400 ? 'ok' : 'error';
  if (res.destroyed || res.writableEnded) return;
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * Serves one PUT to a signed URL: the token is spent by its first complete upload (a second PUT, or an unknown token,
 * answers 403 as an expired signature does); the bytes are counted and dropped.
 */
export function handleUpload(
  req: IncomingMessage,
  res: ServerResponse,
  store: EmulatorStore,
  entry: RequestLogEntry,
): Promise<void> {
  const url = req.url ?? '';
  const token = url.slice(UPLOAD_PATH_PREFIX.length).split('?')[0]!;
  entry.path = `${UPLOAD_PATH_PREFIX}(token)`;
  entry.route = `${UPLOAD_PATH_PREFIX}{token}`;
  return new Promise((resolve) => {
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_UPLOAD_BYTES) tooLarge = true;
    });
    req.on('error', () => resolve());
    req.on('end', () => {
      if (tooLarge) answer(res, entry, 413, `upload larger than ${MAX_UPLOAD_BYTES} bytes`);
      else if (store.receiveUpload(token) === undefined)
        answer(res, entry, 403, 'signature invalid or already used: request a new upload URL');
      else answer(res, entry, 200, '');
      resolve();
    });
  });
}
