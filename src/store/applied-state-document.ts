// The applied state a plan reads, as one JSON document: what the daemon serves at GET /applied-state and `plan --applied-state-url` parses (hashes, never a value).
import { z } from 'zod';
import type { AppliedRecord } from '../core/model.js';
import type { ResourceHold } from '../core/holds.js';
import { StoredHold } from './holds-store.js';
import { StoredAppliedRecord } from './schema.js';

/** The environment variable that turns the daemon's GET /applied-state on and holds its read-only bearer token (never the webhook's). */
export const STATE_TOKEN_ENV = 'CONVERGE_STATE_TOKEN';

/** The environment variable of `converge plan --applied-state-url`. */
export const APPLIED_STATE_URL_ENV = 'CONVERGE_APPLIED_STATE_URL';

export const APPLIED_STATE_FORMAT = 'converge-applied-state';
export const APPLIED_STATE_VERSION = 1;

/**
 * A record as AppliedStateStore.getAll() reads it: the stored record with its keep mark, the file and wave that
 * declared it; without the job that wrote it and what that write's answer said (a worker's own, which no plan reads:
 * the document stays what format_version 1 is).
 */
const DocumentRecord = StoredAppliedRecord.omit({ jobId: true, answer: true }).extend({
  keep: z.literal(true).optional(),
  file: z.string().min(1).optional(),
  wave: z.number().int().optional(),
});

const AppliedStateDocument = z.strictObject({
  format: z.literal(APPLIED_STATE_FORMAT),
  format_version: z.literal(APPLIED_STATE_VERSION),
  /** resourceKey -> the applied record (salted SHA-256 hashes of secrets and fields, ownership, the desired state's fingerprint). */
  records: z.record(z.string(), DocumentRecord),
  /** resourceKey -> the daemon's hold (src/core/holds.ts). */
  holds: z.record(z.string(), StoredHold),
});
export type AppliedStateDocument = z.infer<typeof AppliedStateDocument>;

/** What `plan` reads of the applied state: the records (src/store/applied-state.ts getAll) and the daemon's holds. */
export interface AppliedStateRead {
  records: Map<string, AppliedRecord>;
  holds: Map<string, ResourceHold>;
}

/** The document of what a plan reads; each record and hold passes its stored schema again, so nothing else can be served. */
export function appliedStateDocument(read: AppliedStateRead): AppliedStateDocument {
  return AppliedStateDocument.parse({
    format: APPLIED_STATE_FORMAT,
    format_version: APPLIED_STATE_VERSION,
    records: Object.fromEntries(
      [...read.records].map(([key, { jobId: _job, answer: _answer, ...record }]) => [key, record]),
    ),
    holds: Object.fromEntries(read.holds),
  });
}

/** The records and holds of a document, or the one-line reason it is not one (another format, version or shape). */
export function parseAppliedStateDocument(
  value: unknown,
): { ok: true; read: AppliedStateRead } | { ok: false; error: string } {
  const parsed = AppliedStateDocument.safeParse(value);
  if (!parsed.success) {
    const format = (value as { format?: unknown; format_version?: unknown } | null)?.format;
    if (format !== APPLIED_STATE_FORMAT)
      return {
        ok: false,
        error: `it is not a converge applied-state document (format ${JSON.stringify(format ?? null)})`,
      };
    const issue = parsed.error.issues[0];
    return {
      ok: false,
      error: `it is not an applied-state document this converge reads (${issue ? `${issue.path.join('.') || 'document'}: ${issue.message}` : 'invalid'}); are the daemon and this converge the same version?`,
    };
  }
  const records = new Map<string, AppliedRecord>(Object.entries(parsed.data.records));
  const holds = new Map<string, ResourceHold>(Object.entries(parsed.data.holds));
  return { ok: true, read: { records, holds } };
}
