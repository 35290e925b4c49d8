// Part of /status on request (docs/contracts.md "/status queries"): rows filtered by kind, sync, health and name, a page after a cursor, or only the rows changed since a sequence token. Pure over a list of status rows.

/** What this module reads of a status row (the shape of `statusRow(state)` in src/daemon/status/status-row.ts). */
export interface ViewRow {
  key: string;
  kind: string;
  name: string;
  sync: { status: string };
  health: { status: string };
}

/** A checked /status query. Every field is optional; none given is the whole list. */
export interface StatusQuery {
  kind?: string[];
  sync?: string[];
  health?: string[];
  /** Rows whose name (or key) holds this text, case-insensitive. */
  name?: string;
  limit?: number;
  /** The key of the last row of the previous page: rows after it (by key) follow. */
  cursor?: string;
  /** A sequence token of an earlier answer: only the rows changed since, and the keys removed since. */
  since?: string;
}

/** The most rows one page may hold. */
export const MAX_LIMIT = 10_000;

const LIST_FIELDS = ['kind', 'sync', 'health'] as const;
const FIELDS = [...LIST_FIELDS, 'name', 'limit', 'cursor', 'since'] as const;

/** The query of a /status URL, or the message of a 400 (what, and how to fix). No parameter at all is `undefined`: the body of today. */
export function parseStatusQuery(params: URLSearchParams): { ok: true; query: StatusQuery | undefined } | { ok: false; error: string } {
  const names = [...new Set(params.keys())];
  if (names.length === 0) return { ok: true, query: undefined };
  const unknown = names.filter((n) => !(FIELDS as readonly string[]).includes(n));
  if (unknown.length > 0) return { ok: false, error: `unknown /status parameter ${unknown.map((n) => JSON.stringify(n)).join(', ')}; the parameters are: ${FIELDS.join(', ')}` };
  const query: StatusQuery = {};
  for (const field of LIST_FIELDS) {
    const values = params.getAll(field).flatMap((v) => v.split(',')).map((v) => v.trim()).filter(Boolean);
    if (values.length > 0) query[field] = values;
  }
  const name = params.get('name')?.trim();
  if (name) query.name = name.toLowerCase();
  const limit = params.get('limit');
  if (limit !== null) {
    const n = Number(limit);
    if (!/^\d+$/.test(limit) || n < 1 || n > MAX_LIMIT) return { ok: false, error: `limit must be a whole number from 1 to ${MAX_LIMIT}, not ${JSON.stringify(limit)}` };
    query.limit = n;
  }
  const cursor = params.get('cursor');
  if (cursor) query.cursor = cursor;
  const since = params.get('since');
  if (since !== null) query.since = since;
  return { ok: true, query };
}

/**
 * A change sequence per row: `observe` bumps the sequence of each row whose serialized content differs from the last
 * one seen, and keeps a tombstone for each key that went away. Rows changed between two observations count once.
 * The token carries an epoch so that a token of another daemon (or of before a restart) is never taken as a delta.
 */
export class RowSequence {
  private seq = 0;
  private readonly rows = new Map<string, { text: string; seq: number }>();
  private readonly removed = new Map<string, number>();
  /** The document's other top-level fields, by name: their JSON text and the sequence at which each last changed. */
  private readonly fields = new Map<string, { text: string; seq: number }>();
  private readonly removedFields = new Map<string, number>();
  /** The oldest sequence a delta can start from (tombstones before it were dropped). */
  private floor = 0;

  constructor(
    private readonly epoch: string,
    private readonly maxTombstones = 50_000,
  ) {}

  /** Takes the current rows in; answers the current token. */
  observe(rows: readonly ViewRow[]): string {
    const seen = new Set<string>();
    for (const row of rows) {
      seen.add(row.key);
      const text = JSON.stringify(row);
      const known = this.rows.get(row.key);
      if (known?.text === text) continue;
      this.seq += 1;
      this.rows.set(row.key, { text, seq: this.seq });
      this.removed.delete(row.key);
    }
    for (const key of this.rows.keys()) {
      if (seen.has(key)) continue;
      this.seq += 1;
      this.rows.delete(key);
      this.removed.set(key, this.seq);
    }
    while (this.removed.size > this.maxTombstones) {
      const [oldest, at] = this.removed.entries().next().value as [string, number];
      this.removed.delete(oldest);
      this.floor = Math.max(this.floor, at);
    }
    return this.token();
  }

  /**
   * Takes the document's top-level fields other than `resources` in (the same sequence as the rows), so that a delta
   * can carry only the fields changed since its token.
   */
  observeFields(document: Readonly<Record<string, unknown>>): void {
    for (const [name, value] of Object.entries(document)) {
      if (name === 'resources') continue;
      const text = JSON.stringify(value) ?? 'undefined';
      if (this.fields.get(name)?.text === text) continue;
      this.seq += 1;
      this.fields.set(name, { text, seq: this.seq });
      this.removedFields.delete(name);
    }
    for (const name of this.fields.keys()) {
      if (name in document && name !== 'resources') continue;
      this.seq += 1;
      this.fields.delete(name);
      this.removedFields.set(name, this.seq);
    }
  }

  /** The top-level fields changed after sequence `n`, and those gone since (a field never observed counts as changed). */
  fieldsSince(n: number, document: Readonly<Record<string, unknown>>): { changed: string[]; removed: string[] } {
    const changed = Object.keys(document).filter((name) => name !== 'resources' && (this.fields.get(name)?.seq ?? Infinity) > n);
    const removed = [...this.removedFields].filter(([, at]) => at > n).map(([name]) => name);
    return { changed, removed };
  }

  token(): string {
    return `${this.epoch}.${this.seq}`;
  }

  /** The sequence number a token stands for, or undefined when it is not one of this sequence or too old for a delta. */
  since(token: string): number | undefined {
    const match = /^(.+)\.(\d+)$/.exec(token);
    if (!match || match[1] !== this.epoch) return undefined;
    const n = Number(match[2]);
    if (n > this.seq || n < this.floor) return undefined;
    return n;
  }

  /** The sequence at which the row last changed (0 when unknown). */
  seqOf(key: string): number {
    return this.rows.get(key)?.seq ?? 0;
  }

  /** Keys removed after sequence `n`. */
  removedSince(n: number): string[] {
    return [...this.removed].filter(([, at]) => at > n).map(([key]) => key);
  }
}

/** What a query answers besides the rows. */
export interface StatusView<R> {
  rows: R[];
  view: {
    /** The token to send as `since` next time. */
    sequence: string;
    /** True when `rows` are only those changed since the token sent; false when they are all that match. */
    delta: boolean;
    /** Keys gone since the token sent (only in a delta). */
    removed: string[];
    /** Rows in the daemon, and how many match the filter (before the limit). */
    total: number;
    matched: number;
    /** The cursor of the next page, or null on the last. */
    nextCursor: string | null;
  };
}

function matches(row: ViewRow, query: StatusQuery): boolean {
  if (query.kind && !query.kind.includes(row.kind)) return false;
  if (query.sync && !query.sync.includes(row.sync.status)) return false;
  if (query.health && !query.health.includes(row.health.status)) return false;
  if (query.name && !row.name.toLowerCase().includes(query.name) && !row.key.toLowerCase().includes(query.name)) return false;
  return true;
}

/**
 * The rows a query selects. The sequence must have observed `rows` (the answer's token is the current one). With
 * `since` a known token, only changed rows are answered (and the keys removed, which a filtered client also drops: a
 * row that no longer matches the filter is answered too, so the client can tell). With `limit` or `cursor`, rows come
 * ordered by key; without, in the order given.
 */
export function selectRows<R extends ViewRow>(rows: readonly R[], query: StatusQuery, sequence: RowSequence): StatusView<R> {
  const sinceSeq = query.since !== undefined ? sequence.since(query.since) : undefined;
  const delta = sinceSeq !== undefined;
  let selected = delta ? rows.filter((row) => sequence.seqOf(row.key) > sinceSeq) : rows.filter((row) => matches(row, query));
  const matched = delta ? rows.reduce((n, row) => n + (matches(row, query) ? 1 : 0), 0) : selected.length;
  let nextCursor: string | null = null;
  if (query.limit !== undefined || query.cursor !== undefined) {
    selected = [...selected].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    if (query.cursor !== undefined) {
      const after = query.cursor;
      selected = selected.filter((row) => row.key > after);
    }
    if (query.limit !== undefined && selected.length > query.limit) {
      selected = selected.slice(0, query.limit);
      nextCursor = selected[selected.length - 1]!.key;
    }
  }
  return {
    rows: selected,
    view: { sequence: sequence.token(), delta, removed: delta ? sequence.removedSince(sinceSeq) : [], total: rows.length, matched, nextCursor },
  };
}

/**
 * The answer to a /status query: the document with `resources` cut to the rows the query selects and a `view` beside
 * them. A delta (a `since` the sequence knows) carries only the top-level fields changed since the token, with
 * `format_version` always; `view.removedFields` names those gone since.
 */
export function statusAnswer<R extends ViewRow>(document: Readonly<Record<string, unknown>>, rows: readonly R[], query: StatusQuery, sequence: RowSequence): Record<string, unknown> {
  sequence.observe(rows);
  sequence.observeFields(document);
  const sinceSeq = query.since !== undefined ? sequence.since(query.since) : undefined;
  const selected = selectRows(rows, query, sequence);
  if (sinceSeq === undefined) return { ...document, resources: selected.rows, view: { ...selected.view, removedFields: [] } };
  const fields = sequence.fieldsSince(sinceSeq, document);
  const changed = new Set(['format_version', ...fields.changed]);
  const kept = Object.entries(document).filter(([name]) => changed.has(name));
  return { ...Object.fromEntries(kept), resources: selected.rows, view: { ...selected.view, removedFields: fields.removed } };
}
