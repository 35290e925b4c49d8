// A reader's position in the prefix's event log (`{prefix}:record:cursor:notify`): the stream id of the last entry it handled, kept in Redis so the next leader resumes there, and never moved back.
import type { Redis } from 'ioredis';
import { redisNow } from './clock.js';

/** Sets the cursor to ARGV[1] unless it already stands at or past it (stream ids compare as ms, then sequence). */
const ADVANCE = `
local current = redis.call('GET', KEYS[1])
if current then
  local cms, cseq = string.match(current, '^(%d+)-(%d+)$')
  local nms, nseq = string.match(ARGV[1], '^(%d+)-(%d+)$')
  if cms and nms then
    cms, cseq, nms, nseq = tonumber(cms), tonumber(cseq), tonumber(nms), tonumber(nseq)
    if cms > nms or (cms == nms and cseq >= nseq) then return 0 end
  end
end
redis.call('SET', KEYS[1], ARGV[1])
return 1
`;

export class LogCursor {
  constructor(
    private readonly redis: Redis,
    private readonly log: string,
    private readonly key: string,
  ) {}

  /**
   * Where reading goes on: the kept position, but no further back than `maxAgeMs` (entries older than that are
   * skipped); when none is kept (the first reader of the prefix, or a Redis that lost it), the log's newest entry now
   * (`0-0` for an empty log), kept from then on. The age is on Redis' clock (`now` by default), the stream ids' clock.
   */
  async start(maxAgeMs: number, at?: number): Promise<string> {
    const [kept, now] = await Promise.all([this.redis.get(this.key), at ?? redisNow(this.redis)]);
    const oldest = `${Math.max(0, now - maxAgeMs)}-0`;
    if (kept) return Number(kept.split('-')[0]) < now - maxAgeMs ? oldest : kept;
    const newest = (await this.redis.xrevrange(this.log, '+', '-', 'COUNT', 1))[0]?.[0] ?? '0-0';
    await this.redis.set(this.key, newest, 'NX');
    return (await this.redis.get(this.key)) ?? newest;
  }

  /** Moves the position to `id` (the last entry handled); a position already past it (another reader's) stays. */
  async advance(id: string): Promise<void> {
    await this.redis.eval(ADVANCE, 1, this.key, id);
  }
}
