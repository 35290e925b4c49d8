// GET /applied-state: what a plan reads of the applied state (src/store/applied-state-document.ts), behind a read-only bearer token of its own (docs/saved-plans.md).
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  appliedStateDocument,
  STATE_TOKEN_ENV,
  type AppliedStateDocument,
} from '../../store/applied-state-document.js';
import type { Jobs } from '../../jobs/open-jobs.js';
import { bearerMatches } from './bearer.js';
import { send, sendJson } from './status-page/serve.js';

/** Reads the applied-state document from Redis (hashes only); undefined while the daemon has no Redis handle yet. */
export type AppliedStateReader = () => Promise<unknown>;

/** The document of the prefix's applied records and holds, read as `converge plan` reads them from Redis (src/store/applied-state.ts). */
export async function readAppliedStateDocument(jobs: Pick<Jobs, 'applied' | 'holds'>): Promise<AppliedStateDocument> {
  const [records, holds] = await Promise.all([jobs.applied.getAll(), jobs.holds.getAll()]);
  return appliedStateDocument({ records, holds });
}

/** Answers GET /applied-state: 404 when no token is set, 401 without the token, 503 before Redis is open, else 200. */
export async function appliedStateRoute(
  req: IncomingMessage,
  res: ServerResponse,
  reader: AppliedStateReader | undefined,
  token: string | undefined,
  head: boolean,
): Promise<void> {
  if (!token) {
    sendJson(
      res,
      404,
      {
        error: `GET /applied-state is not enabled; set ${STATE_TOKEN_ENV} in the daemon's environment to turn it on, and send it as "Authorization: Bearer TOKEN"`,
      },
      head,
    );
    return;
  }
  if (!bearerMatches(req.headers.authorization, token)) {
    res.setHeader('www-authenticate', 'Bearer');
    sendJson(
      res,
      401,
      { error: `missing or wrong token; send the daemon's ${STATE_TOKEN_ENV} as "Authorization: Bearer TOKEN"` },
      head,
    );
    return;
  }
  const document = reader ? await reader() : undefined;
  if (document === undefined) {
    sendJson(res, 503, { error: 'the daemon has not opened Redis yet; ask again in a moment' }, head);
    return;
  }
  res.setHeader('cache-control', 'no-store');
  // Compact: about 1 KB per resource (docs/saved-plans.md), read by `converge plan`, not by eye.
  send(res, 200, 'application/json; charset=utf-8', JSON.stringify(document) + '\n', head);
}
