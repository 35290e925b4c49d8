// The saved plan (`converge plan --out FILE`): its versioned JSON format, its checksum, and the reading of a file that claims to be one (docs/saved-plans.md).
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { canonicalJson } from '../hash.js';
import { kinds, SecretSourceChange } from '../kinds/index.js';
import { ManifestVersion } from '../manifest-version.js';
import { planDisagreement } from './agree.js';
import { planSignature } from './signature.js';
import type { Plan, ResourceKind } from '../model.js';

/** The `format` every saved plan names, and the one format version this converge reads and writes. */
export const SAVED_PLAN_FORMAT = 'converge-plan';
export const SAVED_PLAN_VERSION = 1;

const KINDS = Object.keys(kinds) as [ResourceKind, ...ResourceKind[]];
const ACTIONS = ['create', 'update', 'adopt', 'delete', 'noop', 'orphan', 'blocked'] as const;

const FieldChange = z.strictObject({
  path: z.string(),
  before: z.unknown(),
  after: z.unknown(),
  sensitive: z.boolean(),
  uncompared: z.literal(true).optional(),
  /** A secret's source change (src/core/model.ts FieldChange.source): names only. */
  source: SecretSourceChange.optional(),
});

const PlanChange = z.strictObject({
  kind: z.enum(KINDS),
  name: z.string(),
  action: z.enum(ACTIONS),
  new_revision: z.boolean(),
  fields: z.array(FieldChange),
  reason: z.string().nullable(),
  suspended: z.boolean().optional(),
  released: z.boolean().optional(),
  id: z.string().optional(),
  wave: z.number().int().optional(),
});

const Count = z.number().int().nonnegative();

/** The plan as `plan` printed it (src/core/model.ts `Plan`): what `plan --show` renders. */
const PlanData = z.strictObject({
  format_version: z.literal('1'),
  summary: z.strictObject({
    create: Count,
    update: Count,
    adopt: Count,
    delete: Count,
    noop: Count,
    orphan: Count,
    blocked: Count,
    suspended: Count,
  }),
  changes: z.array(PlanChange),
  diagnostics: z.array(
    z.strictObject({
      severity: z.enum(['error', 'warning']),
      file: z.string(),
      line: z.number().int(),
      column: z.number().int(),
      message: z.string(),
    }),
  ),
  notes: z.array(z.string()).optional(),
  prune_refused: z.string().optional(),
  targets: z.array(z.string()).optional(),
  waves: z.array(z.strictObject({ wave: z.number().int(), create: Count, update: Count, adopt: Count })).optional(),
  health: z
    .array(
      z.strictObject({
        kind: z.enum(KINDS),
        name: z.string(),
        status: z.enum(['healthy', 'progressing', 'degraded', 'unknown']),
        reason: z.string(),
        message: z.string(),
        revisionId: z.string().optional(),
        revisionStatus: z.string().optional(),
        revisionCreatedAt: z.string().optional(),
        revisionUpdatedAt: z.string().optional(),
      }),
    )
    .optional(),
});

/** The live resource a write was decided against, as the service gave it: its id, when it last changed, its revisions. */
export const SeenLive = z.strictObject({
  id: z.string(),
  updated_at: z.string().nullable(),
  latest_revision_id: z.string().nullable(),
  active_revision_id: z.string().nullable(),
});
export type SeenLive = z.infer<typeof SeenLive>;

const SHA256 = z.string().regex(/^[0-9a-f]{64}$/);

/**
 * One decided write (src/core/decide.ts) as the job of `apply` carries it, and what it was decided against: the live
 * resource (null: none), converge's last write to it (its applied record's time; null: none), the change's fields (in
 * `plan`). `secrets`: each declared secret's salted hash (src/core/hash.ts secretHash), never a value.
 */
export const PlannedWrite = z.strictObject({
  kind: z.enum(KINDS),
  name: z.string(),
  action: z.enum(['create', 'update', 'adopt', 'delete']),
  op: z.enum(['create', 'update', 'rebuild', 'delete']),
  fields: z.array(z.string()),
  deployment_id: z.string().optional(),
  desired: SHA256.optional(),
  /** Its rollout wave (converge/wave) when not 0: apply --plan sends the writes in this order (docs/rollouts.md). */
  wave: z.number().int().optional(),
  secrets: z.record(z.string(), SHA256),
  seen: z.strictObject({ live: SeenLive.nullable(), applied_at: z.string().nullable() }),
});
export type PlannedWrite = z.infer<typeof PlannedWrite>;

/** The whole file. `checksum` is sha256 over the canonical JSON of every other key (the signature included). */
export const SavedPlan = z.strictObject({
  format: z.literal(SAVED_PLAN_FORMAT),
  format_version: z.literal(SAVED_PLAN_VERSION),
  created_at: z.string(),
  service: z.strictObject({ api_url: z.string(), tenant_id: z.string().nullable() }),
  manifests: z.strictObject({
    dir: z.string(),
    vars: z.array(z.string()),
    overlays: z.array(z.string()),
    version: ManifestVersion,
    content_id: z.string().regex(/^[0-9a-f]{7,64}$/),
  }),
  options: z.strictObject({
    prune: z.boolean(),
    max_deletes: z.number().int().nonnegative(),
    adopt: z.enum(['auto', 'explicit']),
    name_prefix: z.string().nullable(),
    targets: z.array(z.string()).optional(),
  }),
  plan: PlanData,
  writes: z.array(PlannedWrite),
  /** With CONVERGE_PLAN_KEY set at plan --out: HMAC-SHA256 of every other key but the checksum (src/core/saved-plan/signature.ts). */
  signature: z
    .string()
    .regex(/^hmac-sha256:[0-9a-f]{64}$/)
    .optional(),
  checksum: z.string().regex(/^sha256:[0-9a-f]{64}$/),
});
export type SavedPlan = Omit<z.infer<typeof SavedPlan>, 'plan'> & { plan: Plan };
export type SavedPlanContent = Omit<SavedPlan, 'checksum'>;

/** sha256 over the canonical JSON (keys sorted at every depth) of the plan without its checksum. */
export function planChecksum(content: SavedPlanContent): string {
  return `sha256:${createHash('sha256').update(canonicalJson(content)).digest('hex')}`;
}

/** The file's text: the content, signed under `key` when one is given, with its checksum; 2-space JSON, a final newline. */
export function savedPlanText(content: SavedPlanContent, key?: string): string {
  // Through JSON first, so that the checksum is over exactly what a reader parses (no undefined, no class instance).
  const { signature: _unsigned, ...plain } = JSON.parse(JSON.stringify(content)) as SavedPlanContent;
  const signed: SavedPlanContent = key === undefined ? plain : { ...plain, signature: planSignature(plain, key) };
  const plan: SavedPlan = { ...signed, checksum: planChecksum(signed) };
  // A plan this converge could not read back is never written (a key the schema lacks would be a bug here, not the user's).
  SavedPlan.parse(plan);
  return `${JSON.stringify(plan, null, 2)}\n`;
}

/** A file read as a saved plan: the plan, or why it is not one (one line, without the file's name). */
export type SavedPlanRead = { ok: true; plan: SavedPlan } | { ok: false; problem: string };

const RUN_PLAN = 'make a new one with "converge plan DIR --out FILE"';

/** Reads a saved plan's text: JSON, this format and version, the schema, then the checksum. Pure. */
export function readSavedPlan(text: string): SavedPlanRead {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    const why = text.trim() === '' ? 'it is empty' : 'it is not JSON (truncated or damaged?)';
    return { ok: false, problem: `not a converge plan: ${why}; ${RUN_PLAN}` };
  }
  const head = data && typeof data === 'object' && !Array.isArray(data) ? (data as Record<string, unknown>) : {};
  if (head.format !== SAVED_PLAN_FORMAT)
    return {
      ok: false,
      problem: `not a converge plan: it has no "format": "${SAVED_PLAN_FORMAT}" (is it the output of plan --output json? apply --plan takes the file plan --out writes)`,
    };
  if (head.format_version !== SAVED_PLAN_VERSION) {
    return {
      ok: false,
      problem: `a converge plan of format version ${JSON.stringify(head.format_version)}; this converge reads version ${SAVED_PLAN_VERSION}: ${RUN_PLAN} with this converge`,
    };
  }
  const parsed = SavedPlan.safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return {
      ok: false,
      problem: `a damaged converge plan: ${issue.path.join('.') || 'the document'}: ${issue.message} (edited by hand?); ${RUN_PLAN}`,
    };
  }
  const { checksum, ...content } = data as SavedPlan;
  if (planChecksum(content) !== checksum) {
    return {
      ok: false,
      problem: `a converge plan whose checksum does not match its content: it was edited or damaged after plan --out wrote it; ${RUN_PLAN}`,
    };
  }
  const plan = parsed.data as SavedPlan;
  const disagreement = planDisagreement(plan);
  if (disagreement)
    return {
      ok: false,
      problem: `a converge plan whose plan disagrees with its writes (${disagreement}): it was edited after plan --out wrote it; ${RUN_PLAN}`,
    };
  return { ok: true, plan };
}
