// The body of POST /reconcile: what an operator asks of a reconcile, checked field by field (a 400's message otherwise).

/**
 * The body of POST /reconcile. `{}`: reconcile now. `writeSecrets`: also write the secrets that cannot be compared
 * (SecretsUnknown) of every held resource (`true`) or of the named ones (metadata.name or Kind/name).
 */
export interface ReconcileRequest {
  writeSecrets?: true | string[];
  /** Release the holds (a failed revision of the current desired state) of these resources, or of every one. */
  retryFailed?: true | string[];
  /** Confirm the pending deletes of these resources (prune_mode confirm); names only, never "all". */
  confirmDelete?: string[];
  /** Write although a change window blocks (its manual: false), as `converge reconcile --override-window` asks. */
  overrideWindow?: true;
}

/** The checked body of POST /reconcile, or the message of a 400. */
export function parseReconcileBody(
  text: string,
): { ok: true; request: ReconcileRequest } | { ok: false; error: string } {
  let value: unknown;
  try {
    value = text.trim() === '' ? {} : JSON.parse(text);
  } catch {
    return {
      ok: false,
      error: 'the body is not JSON; send {} to reconcile now, or {"writeSecrets": true | ["name", ...]}',
    };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { ok: false, error: 'the body must be a JSON object such as {} or {"writeSecrets": ["name"]}' };
  const unknown = Object.keys(value).filter(
    (k) => !['writeSecrets', 'retryFailed', 'confirmDelete', 'overrideWindow'].includes(k),
  );
  if (unknown.length > 0)
    return {
      ok: false,
      error: `unknown field ${unknown.map((k) => JSON.stringify(k)).join(', ')}; the fields are: writeSecrets, retryFailed, confirmDelete, overrideWindow`,
    };
  const request: ReconcileRequest = {};
  for (const field of ['writeSecrets', 'retryFailed'] as const) {
    const names = namesOrAll((value as Record<string, unknown>)[field]);
    if (names === 'bad') return { ok: false, error: `${field} must be true or a non-empty list of resource names` };
    if (names !== undefined) request[field] = names;
  }
  // A delete is final: each one is confirmed by name, never all at once.
  const confirm = namesOrAll((value as Record<string, unknown>).confirmDelete);
  if (confirm === 'bad' || confirm === true)
    return {
      ok: false,
      error: 'confirmDelete must be a non-empty list of resource names (each delete is confirmed by name)',
    };
  if (confirm !== undefined) request.confirmDelete = confirm;
  const override = (value as Record<string, unknown>).overrideWindow;
  if (override !== undefined && typeof override !== 'boolean')
    return { ok: false, error: 'overrideWindow must be true or false' };
  if (override === true) request.overrideWindow = true;
  return { ok: true, request };
}

/** A field of POST /reconcile: true (all), a non-empty list of names, absent/false (none), or bad. */
function namesOrAll(field: unknown): true | string[] | undefined | 'bad' {
  if (field === undefined || field === false) return undefined;
  if (field === true) return true;
  if (
    Array.isArray(field) &&
    field.length > 0 &&
    field.every((n) => typeof n === 'string' && n.length > 0 && n.length <= 300)
  )
    return [...new Set(field as string[])];
  return 'bad';
}
