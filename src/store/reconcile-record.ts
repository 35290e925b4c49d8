// The leader's reconciles in Redis (`{prefix}:record:reconciles`, `{prefix}:record:plan`), fenced by its token, read by every /status.
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { PlanTexts } from './plan-text.js';
import { parseStored } from './schema.js';

/** Reconciles the record keeps (the newest last). */
export const RECONCILE_HISTORY = 50;

/** The keys of the reconcile record under `prefix`: names, counts and the plan (hashes and ids only, never a secret). */
export function reconcileKeys(prefix: string): { reconciles: string; plan: string } {
  return { reconciles: `${prefix}:record:reconciles`, plan: `${prefix}:record:plan` };
}

/** One reconcile as /status shows it: the fields every reader relies on are checked, the rest kept as written. */
const StoredReconcile = z
  .object({
    id: z.number(),
    trigger: z.string(),
    startedAt: z.string(),
    finishedAt: z.string(),
    durationMs: z.number(),
    ok: z.boolean(),
  })
  .passthrough();

/** What the leader keeps of its reconciles besides the plan. */
export const StoredReconciles = z.object({
  /** The replica that wrote it (the leader at the time). */
  by: z.string(),
  history: z.array(StoredReconcile).max(RECONCILE_HISTORY),
  lastSuccessfulReconcileAt: z.string().nullable(),
  reconciles: z.object({ total: z.number(), failed: z.number(), byTrigger: z.record(z.string(), z.number()) }),
  manifests: z.object({ loaded: z.boolean(), everLoaded: z.boolean(), error: z.string().nullable() }),
  orphans: z.array(z.string()),
  /** The hash of the plan kept in `{prefix}:record:plan`, or null when no reconcile planned yet. */
  planHash: z.string().nullable(),
});
export type StoredReconciles = z.infer<typeof StoredReconciles>;

/** What one write holds: the record, and the plan (any JSON value) it goes with. */
export interface ReconcilesWrite {
  record: Omit<StoredReconciles, 'planHash' | 'history'> & { history: readonly object[] };
  plan: unknown;
  /** The writer's fencing token: refused once a newer one was handed out; undefined for a daemon without a lease. */
  fence: number | undefined;
}

// KEYS: fence counter, record, plan. ARGV: token ('' unfenced), record JSON, plan hash ('' none), plan text ('' kept).
// Refused ('fenced') when a newer token was handed out; 'plan' when the plan kept is not the one hashed (send it).
const WRITE = `
if ARGV[1] ~= '' then
  local newest = tonumber(redis.call('GET', KEYS[1]) or '0')
  if newest > tonumber(ARGV[1]) then return 'fenced' end
end
if ARGV[3] ~= '' then
  if ARGV[4] ~= '' then
    redis.call('SET', KEYS[3], ARGV[4])
  elseif redis.call('GETRANGE', KEYS[3], 0, string.len(ARGV[3])) ~= ARGV[3] .. '\\n' then
    return 'plan'
  end
end
redis.call('SET', KEYS[2], ARGV[2])
return 'ok'
`;

/**
 * The record of the leader's reconciles. A write is one script: refused when a newer leader took the lease since (its
 * record stands), the plan sent only when it changed. A read costs one GET, and the plan is read again only when its
 * hash moved.
 */
export class ReconcileRecordStore {
  private readonly keys: ReturnType<typeof reconcileKeys>;
  private cachedPlan: { hash: string; plan: unknown } | undefined;
  /** The plan's text as kept: its hash, a newline, its JSON (the hash is checked without reading the plan). */
  private readonly planTexts = new PlanTexts();

  constructor(
    private readonly redis: Redis,
    prefix: string,
    /** The lease's fencing counter (src/leader/lease.ts `fenceKey`). */
    private readonly fenceKey: string,
  ) {
    this.keys = reconcileKeys(prefix);
  }

  /** Writes the record; false when a newer leader's fencing token refused it (nothing written). */
  async write(write: ReconcilesWrite): Promise<boolean> {
    const plan = this.planTexts.text(write.plan);
    const record = JSON.stringify({ ...write.record, planHash: plan?.hash ?? null });
    const fence = write.fence === undefined ? '' : String(write.fence);
    const { reconciles, plan: planKey } = this.keys;
    const send = (text: string | Buffer): Promise<unknown> =>
      this.redis.eval(WRITE, 3, this.fenceKey, reconciles, planKey, fence, record, plan?.hash ?? '', text);
    let answer = await send('');
    if (answer === 'plan') answer = await send(plan!.text);
    // The writer's own plan is what a read of that hash gives: one copy in memory, not two.
    if (answer === 'ok' && plan) this.cachedPlan = { hash: plan.hash, plan: write.plan };
    return answer === 'ok';
  }

  /** The record and its plan, or undefined when none is kept (or this converge cannot read it). */
  async read(): Promise<{ record: StoredReconciles; plan: unknown } | undefined> {
    const record = parseStored(StoredReconciles, await this.redis.get(this.keys.reconciles));
    if (!record) return undefined;
    if (record.planHash === null) return { record, plan: null };
    if (this.cachedPlan?.hash !== record.planHash) {
      const text = (await this.redis.get(this.keys.plan)) ?? '';
      const newline = text.indexOf('\n');
      if (text.slice(0, newline) !== record.planHash) return { record, plan: null };
      this.cachedPlan = { hash: record.planHash, plan: JSON.parse(text.slice(newline + 1)) as unknown };
    }
    return { record, plan: this.cachedPlan.plan };
  }
}
