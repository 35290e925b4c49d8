// The bearer-token check of the status server's guarded endpoints (POST /reconcile, GET /applied-state).
import { createHash, timingSafeEqual } from 'node:crypto';

/** Whether the request carries `Authorization: Bearer <token>` (compared in constant time, on digests of equal length). */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const given = /^Bearer\s+(.+)$/i.exec(header ?? '')?.[1]?.trim() ?? '';
  const digest = (text: string): Buffer => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(given), digest(token)) && given.length > 0;
}
