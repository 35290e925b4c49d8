// The operator's pending requests in Redis (`{prefix}:record:requests`): each POST /reconcile kept until served.
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { parseStoredHash } from './schema.js';

/** Requests kept at most: one more is refused (a 503), counted and logged, never dropped in silence. */
export const MAX_PENDING_REQUESTS = 100;

/** `{prefix}:record:requests`: one hash, request id -> JSON of a StoredRequest (names only, never a secret). */
export function requestsKey(prefix: string): string {
  return `${prefix}:record:requests`;
}

const Names = z.union([z.literal(true), z.array(z.string().min(1).max(300)).min(1).max(10_000)]);

/** One operator request as kept: what it asks, when and on which replica it arrived, and what its serving began. */
export const StoredRequest = z.object({
  at: z.string(),
  by: z.string(),
  writeSecrets: Names.optional(),
  retryFailed: Names.optional(),
  confirmDelete: z.array(z.string().min(1).max(300)).min(1).max(10_000).optional(),
  /** Write although a change window blocks (`converge reconcile --override-window`). */
  overrideWindow: z.literal(true).optional(),
  /** The released holds to rebuild, noted before they were released (a leader that dies after leaves them to the next). */
  rebuild: z.array(z.string()).optional(),
});
export type StoredRequest = z.infer<typeof StoredRequest>;

// KEYS: requests. ARGV: id, JSON, max. Adds the request unless MAX are kept already.
const ADD = `
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
`;

/** The pending requests of a prefix, shared by every replica. */
export class OperatorRequestStore {
  private readonly key: string;

  constructor(
    private readonly redis: Redis,
    prefix: string,
  ) {
    this.key = requestsKey(prefix);
  }

  /** Keeps a request; false when MAX_PENDING_REQUESTS are kept already (nothing kept). */
  async add(id: string, request: StoredRequest): Promise<boolean> {
    return (await this.redis.eval(ADD, 1, this.key, id, JSON.stringify(request), String(MAX_PENDING_REQUESTS))) === 1;
  }

  /** Notes the rebuilds a request's release found, on each request that is still kept. */
  async noteRebuild(ids: readonly string[], rebuild: readonly string[]): Promise<void> {
    if (ids.length === 0 || rebuild.length === 0) return;
    const kept = await this.all();
    const pairs = ids.flatMap((id) => {
      const request = kept.get(id);
      if (!request) return [];
      return [id, JSON.stringify({ ...request, rebuild: [...new Set([...(request.rebuild ?? []), ...rebuild])] })];
    });
    if (pairs.length > 0) await this.redis.hset(this.key, ...pairs);
  }

  /** Ends the served requests. */
  async remove(ids: readonly string[]): Promise<void> {
    if (ids.length > 0) await this.redis.hdel(this.key, ...ids);
  }

  /** Every pending request by id, oldest first (an entry this converge cannot read is left out). */
  async all(): Promise<Map<string, StoredRequest>> {
    const stored = parseStoredHash(StoredRequest, await this.redis.hgetall(this.key));
    return new Map([...stored].sort(([, a], [, b]) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0)));
  }
}
