// GET /history/KIND/NAME: one resource's recorded events, newest first, as `converge history --output json` prints them; read from Redis only (the event log), for the status page's detail.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { KIND_NAMES } from '../../core/kinds/index.js';
import { historyDocument, type RecordedEvent } from '../../core/resource-record.js';
import { sendJson, sendTagged } from './status-page/serve.js';

/** Events one answer holds at most, and by default (the page shows the newest; `converge history` reads them all). */
export const HISTORY_PAGE_LIMIT = 50;
const HISTORY_MAX_LIMIT = 200;

/** Reads a resource's entries, newest first, at most `limit` (the event log's history, src/store/event-log.ts). */
export type HistoryReader = (key: string, limit: number) => Promise<readonly RecordedEvent[]>;

/** A path segment decoded, or undefined when it is not valid percent-encoding (`%E0%A4%A`). */
function decoded(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/** The resource key of a /history path (`/history/Deployment/web`), or the message of a 400 (malformed) or 404. */
export function historyKey(path: string): { key: string } | { status: 400 | 404; error: string } {
  const rest = path.slice('/history/'.length);
  const slash = rest.indexOf('/');
  const kind = slash < 0 ? '' : decoded(rest.slice(0, slash));
  const name = slash < 0 ? '' : decoded(rest.slice(slash + 1));
  const how = `ask /history/KIND/NAME with a kind of ${KIND_NAMES.join(', ')}, e.g. /history/Deployment/web`;
  if (kind === undefined || name === undefined) {
    const error = `${JSON.stringify(rest)} is not valid percent-encoding (RFC 3986); ${how}, each part encoded with encodeURIComponent`;
    return { status: 400, error };
  }
  const known = KIND_NAMES.find((k) => k === kind);
  if (!known || !name || name.includes('/'))
    return { status: 404, error: `no resource ${JSON.stringify(rest)}; ${how}` };
  return { key: `${known}/${name}` };
}

/** Answers GET /history/KIND/NAME[?limit=N] (404: not a resource path or no reader; 400: a bad limit). */
export async function historyRoute(
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  params: URLSearchParams,
  reader: HistoryReader | undefined,
  head: boolean,
): Promise<void> {
  const json = (status: number, value: unknown): void => sendJson(res, status, value, head);
  const named = historyKey(path);
  if ('error' in named) return json(named.status, { error: named.error });
  if (!reader) return json(404, { error: 'this daemon keeps no event log; `converge history` reads Redis directly' });
  const text = params.get('limit');
  const limit = text === null ? HISTORY_PAGE_LIMIT : Number(text);
  if (!Number.isInteger(limit) || limit < 1 || limit > HISTORY_MAX_LIMIT)
    return json(400, { error: `limit ${JSON.stringify(text)} is not a whole number from 1 to ${HISTORY_MAX_LIMIT}` });
  const events = await reader(named.key, limit);
  // The page asks again when the row changes: an unchanged history answers 304.
  sendTagged(
    req,
    res,
    'application/json; charset=utf-8',
    JSON.stringify(historyDocument(named.key, events)) + '\n',
    head,
  );
}
