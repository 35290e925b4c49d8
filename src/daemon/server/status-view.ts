// Part of /status on request (docs/contracts.md "/status queries"): rows filtered by kind, sync, health and name, a page after a cursor, or only the rows changed since a sequence token. Pure over a list of status rows.
import { FieldTexts } from './field-texts.js';
import { KeyedSequence } from './keyed-sequence.js';
import { KEY_LISTS, keyOfKey, PlanSequence, RunSequence, type ListDelta } from './plan-sequence.js';
import { textHash } from '../../core/hash.js';

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
  /** `delta`: a delta carries a changed plan by run, as `planDelta` (plan-sequence.ts), instead of whole as `plan`. */
  plan?: 'delta';
  /** `delta`: a delta carries a changed top-level list of keys (KEY_LISTS) by run, in `keysDelta`, instead of whole. */
  keys?: 'delta';
  /** `2`: the answer in format 2 (src/core/status-compact.ts); `1`, or none, format 1. */
  format?: '1' | '2';
  /** A first window: the first this many rows in the document's order, and no plan (the page's first draw). */
  first?: number;
}

/** The most rows one page may hold. */
export const MAX_LIMIT = 10_000;

const LIST_FIELDS = ['kind', 'sync', 'health'] as const;
const FIELDS = [...LIST_FIELDS, 'name', 'limit', 'cursor', 'since', 'plan', 'keys', 'format', 'first'] as const;

/** The query of a /status URL, or the message of a 400 (what, and how to fix). No parameter at all is `undefined`: the body of today. */
export function parseStatusQuery(
  params: URLSearchParams,
): { ok: true; query: StatusQuery | undefined } | { ok: false; error: string } {
  const names = [...new Set(params.keys())];
  if (names.length === 0) return { ok: true, query: undefined };
  const unknown = names.filter((n) => !(FIELDS as readonly string[]).includes(n));
  if (unknown.length > 0)
    return {
      ok: false,
      error: `unknown /status parameter ${unknown.map((n) => JSON.stringify(n)).join(', ')}; the parameters are: ${FIELDS.join(', ')}`,
    };
  const query: StatusQuery = {};
  for (const field of LIST_FIELDS) {
    const values = params
      .getAll(field)
      .flatMap((v) => v.split(','))
      .map((v) => v.trim())
      .filter(Boolean);
    if (values.length > 0) query[field] = values;
  }
  const name = params.get('name')?.trim();
  if (name) query.name = name.toLowerCase();
  const limit = params.get('limit');
  if (limit !== null) {
    const n = Number(limit);
    if (!/^\d+$/.test(limit) || n < 1 || n > MAX_LIMIT)
      return { ok: false, error: `limit must be a whole number from 1 to ${MAX_LIMIT}, not ${JSON.stringify(limit)}` };
    query.limit = n;
  }
  const cursor = params.get('cursor');
  if (cursor) query.cursor = cursor;
  const since = params.get('since');
  if (since !== null) query.since = since;
  const plan = params.get('plan');
  if (plan !== null && plan !== 'delta')
    return {
      ok: false,
      error: `plan must be "delta" (a delta then carries the plan's changed entries as planDelta), not ${JSON.stringify(plan)}`,
    };
  if (plan === 'delta') query.plan = plan;
  const keys = params.get('keys');
  if (keys !== null && keys !== 'delta')
    return {
      ok: false,
      error: `keys must be "delta" (a delta then carries the keys added to and removed from ${KEY_LISTS.join(', ')} as keysDelta), not ${JSON.stringify(keys)}`,
    };
  if (keys === 'delta') query.keys = keys;
  const format = params.get('format');
  if (format !== null && format !== '1' && format !== '2') {
    const what = '2: rows without their defaults, long strings by reference; docs/contracts.md §5';
    return { ok: false, error: `format must be 1 or 2 (${what}), not ${JSON.stringify(format)}` };
  }
  if (format !== null) query.format = format;
  const first = params.get('first');
  if (first !== null) {
    const n = Number(first);
    if (!/^\d+$/.test(first) || n < 1 || n > MAX_LIMIT) {
      const error = `first must be a whole number from 1 to ${MAX_LIMIT} (the rows of a first window)`;
      return { ok: false, error: `${error}, not ${JSON.stringify(first)}` };
    }
    const others = (['since', 'limit', 'cursor'] as const).filter((name) => params.has(name));
    const without = others.join(', ');
    if (others.length > 0)
      return { ok: false, error: `first asks for a first window of the whole document; send it without ${without}` };
    query.first = n;
  }
  return { ok: true, query };
}

/**
 * A change sequence per row: `observe` bumps the sequence of each row whose serialized content differs from the last
 * one seen, and keeps a tombstone for each key that went away. Rows changed between two observations count once.
 * The token carries an epoch so that a token of another daemon (or of before a restart) is never taken as a delta.
 * The document's other top-level fields, the runs of its plan and of its lists of keys (plan-sequence.ts), share the
 * same sequence.
 */
export class RowSequence {
  private seq = 0;
  private readonly clock = (): number => ++this.seq;
  private readonly rows: KeyedSequence;
  /** The document's other top-level fields, by name. */
  private readonly fields = new KeyedSequence();
  /** The runs of the document's `plan`, for a delta of the plan (`plan=delta`). */
  private readonly plan: PlanSequence;
  /** The runs of the document's top-level lists of keys (KEY_LISTS), for a delta of them (`keys=delta`). */
  private readonly keyLists: Map<string, RunSequence>;
  /** The rows observed last: the same list again (the projection's version did not move) is not compared again. */
  private observedRows: readonly ViewRow[] | undefined;
  /** Each row object's text hash, while the row is held. */
  private readonly rowHashes = new WeakMap<ViewRow, string>();

  constructor(
    private readonly epoch: string,
    maxTombstones = 50_000,
    /** The fields' texts, kept while a field is the same object (field-texts.ts). */
    private readonly texts = new FieldTexts(),
  ) {
    this.rows = new KeyedSequence(maxTombstones);
    this.plan = new PlanSequence(maxTombstones);
    this.keyLists = new Map(KEY_LISTS.map((name) => [name, new RunSequence(keyOfKey, maxTombstones)]));
  }

  /**
   * Takes the current rows in; answers the current token. The list observed last, given again, is not serialized: the
   * document's builder hands the same list only while no row changed (field-texts.ts).
   */
  observe(rows: readonly ViewRow[]): string {
    if (rows === this.observedRows) return this.token();
    this.rows.observeHashes(
      rows.map((row) => [row.key, this.hashOf(row)] as const),
      this.clock,
    );
    this.observedRows = rows;
    return this.token();
  }

  /**
   * A row's serialized text as its hash, taken once per row object: a row is built once per state object
   * (daemon-status.ts), and a state the projection's version did not move is the same object at the next read
   * (src/store/resource-folds.ts), so after one edit at 10,000 rows one row is serialized, not 10,000.
   */
  private hashOf(row: ViewRow): string {
    const kept = this.rowHashes.get(row);
    if (kept !== undefined) return kept;
    const hash = textHash(JSON.stringify(row));
    this.rowHashes.set(row, hash);
    return hash;
  }

  /**
   * Takes the document's top-level fields other than `resources` in (the same sequence as the rows), so that a delta
   * can carry only the fields changed since its token; and, when `plan` or a list of keys changed, its runs.
   */
  observeFields(document: Readonly<Record<string, unknown>>): void {
    const planSeq = this.fields.seqOf('plan');
    const keySeqs = [...this.keyLists.keys()].map((name) => this.fields.seqOf(name));
    const fields = Object.entries(document).filter(([name]) => name !== 'resources');
    this.fields.observe(
      fields.map(([name, value]) => [name, this.texts.compareText(value)] as const),
      this.clock,
    );
    if (this.fields.seqOf('plan') !== planSeq) this.plan.observe(document.plan, this.clock);
    [...this.keyLists].forEach(([name, sequence], i) => {
      if (this.fields.seqOf(name) !== keySeqs[i]) sequence.observe(document[name], this.clock);
    });
  }

  /** The top-level fields changed after sequence `n`, and those gone since (a field never observed counts as changed). */
  fieldsSince(n: number, document: Readonly<Record<string, unknown>>): { changed: string[]; removed: string[] } {
    const changed = Object.keys(document).filter(
      (name) => name !== 'resources' && (this.fields.seqOf(name) ?? Infinity) > n,
    );
    return { changed, removed: this.fields.removedSince(n) };
  }

  /** The document's plan as a delta since sequence `n` (plan-sequence.ts), or undefined when it is to be sent whole. */
  planSince(n: number, plan: unknown): Record<string, unknown> | undefined {
    return this.plan.deltaSince(n, plan);
  }

  /** A top-level list of keys as a delta since sequence `n` (plan-sequence.ts); undefined when it is not one or is to be sent whole. */
  keysSince(n: number, name: string, value: unknown): ListDelta | undefined {
    return this.keyLists.get(name)?.deltaSince(n, value);
  }

  token(): string {
    return `${this.epoch}.${this.seq}`;
  }

  /** The sequence number a token stands for, or undefined when it is not one of this sequence or too old for a delta. */
  since(token: string): number | undefined {
    const match = /^(.+)\.(\d+)$/.exec(token);
    if (!match || match[1] !== this.epoch) return undefined;
    const n = Number(match[2]);
    const floors = [this.rows.floor, this.plan.floor, ...[...this.keyLists.values()].map((sequence) => sequence.floor)];
    if (n > this.seq || n < Math.max(...floors)) return undefined;
    return n;
  }

  /** The sequence at which the row last changed (0 when unknown). */
  seqOf(key: string): number {
    return this.rows.seqOf(key) ?? 0;
  }

  /** Keys removed after sequence `n`. */
  removedSince(n: number): string[] {
    return this.rows.removedSince(n);
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

/** The rows that match the query's filters: the list itself when it filters nothing (its text is kept, field-texts.ts). */
function filtered<R extends ViewRow>(rows: readonly R[], query: StatusQuery): R[] {
  const filters = query.kind ?? query.sync ?? query.health ?? query.name;
  return filters === undefined ? (rows as R[]) : rows.filter((row) => matches(row, query));
}

function matches(row: ViewRow, query: StatusQuery): boolean {
  if (query.kind && !query.kind.includes(row.kind)) return false;
  if (query.sync && !query.sync.includes(row.sync.status)) return false;
  if (query.health && !query.health.includes(row.health.status)) return false;
  if (query.name && !row.name.toLowerCase().includes(query.name) && !row.key.toLowerCase().includes(query.name))
    return false;
  return true;
}

/**
 * The rows a query selects. The sequence must have observed `rows` (the answer's token is the current one). With
 * `since` a known token, only changed rows are answered (and the keys removed, which a filtered client also drops: a
 * row that no longer matches the filter is answered too, so the client can tell). With `limit` or `cursor`, rows come
 * ordered by key; without, in the order given.
 */
export function selectRows<R extends ViewRow>(
  rows: readonly R[],
  query: StatusQuery,
  sequence: RowSequence,
): StatusView<R> {
  const sinceSeq = query.since !== undefined ? sequence.since(query.since) : undefined;
  const delta = sinceSeq !== undefined;
  let selected = delta ? rows.filter((row) => sequence.seqOf(row.key) > sinceSeq) : filtered(rows, query);
  const matched = delta ? rows.reduce((n, row) => n + (matches(row, query) ? 1 : 0), 0) : selected.length;
  let nextCursor: string | null = null;
  if (query.first !== undefined) selected = selected.slice(0, query.first);
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
    view: {
      sequence: sequence.token(),
      delta,
      removed: delta ? sequence.removedSince(sinceSeq) : [],
      total: rows.length,
      matched,
      nextCursor,
    },
  };
}

/**
 * The answer to a /status query: the document with `resources` cut to the rows the query selects and a `view` beside
 * them. A delta (a `since` the sequence knows) carries only the top-level fields changed since the token, with
 * `format_version` always; `view.removedFields` names those gone since. With `plan=delta`, a changed plan comes as
 * `planDelta` in its place (only its runs changed since the token) when the sequence can say what changed; with
 * `keys=delta`, a changed list of keys (KEY_LISTS) comes alike in `keysDelta`, by name.
 */
export function statusAnswer<R extends ViewRow>(
  document: Readonly<Record<string, unknown>>,
  rows: readonly R[],
  query: StatusQuery,
  sequence: RowSequence,
): Record<string, unknown> {
  sequence.observe(rows);
  sequence.observeFields(document);
  const sinceSeq = query.since !== undefined ? sequence.since(query.since) : undefined;
  const selected = selectRows(rows, query, sequence);
  if (query.first !== undefined) {
    // A first window: its rows without the plan, which the whole answer after it brings.
    const { plan: _plan, ...rest } = document;
    return { ...rest, resources: selected.rows, view: { ...selected.view, removedFields: [] } };
  }
  if (sinceSeq === undefined)
    return { ...document, resources: selected.rows, view: { ...selected.view, removedFields: [] } };
  const fields = sequence.fieldsSince(sinceSeq, document);
  const changed = new Set(['format_version', ...fields.changed]);
  const kept = Object.entries(document).filter(([name]) => changed.has(name));
  const planDelta =
    query.plan === 'delta' && changed.has('plan') ? sequence.planSince(sinceSeq, document.plan) : undefined;
  const keysDelta: Record<string, ListDelta> = {};
  const carried: Array<[string, unknown]> = [];
  for (const [name, value] of kept) {
    const keys = query.keys === 'delta' ? sequence.keysSince(sinceSeq, name, value) : undefined;
    if (keys) keysDelta[name] = keys;
    else carried.push(name === 'plan' && planDelta ? ['planDelta', planDelta] : [name, value]);
  }
  if (Object.keys(keysDelta).length > 0) carried.push(['keysDelta', keysDelta]);
  return {
    ...Object.fromEntries(carried),
    resources: selected.rows,
    view: { ...selected.view, removedFields: fields.removed },
  };
}
