// /status format 2 (docs/contracts.md §5): rows without what they repeat, long strings by reference; pure codec.

/** Strings shorter than this are written as they are: a reference would save little or nothing. */
export const MIN_REFERENCED = 24;

/** Row fields format 2 leaves out when their value is this default (the decoder puts them back). */
export const ROW_DEFAULTS: Readonly<Record<string, null | false>> = {
  file: null,
  reason: null,
  error: null,
  drift: null,
  job: null,
  heldAtLastGood: false,
};

/** Row fields format 2 leaves out: fingerprints of desired states the daemon keeps for its own decisions. */
export const ROW_OMITTED: readonly string[] = ['desired', 'revisionDesired', 'releasedRevision'];

/** The top-level fields whose strings may be written by reference. */
export const REFERENCING_FIELDS: readonly string[] = ['resources', 'plan', 'planDelta'];

type Json = unknown;
type Row = Record<string, Json>;

/** A row's name: its key is `KIND/NAME`. */
function nameOf(key: string): string {
  return key.slice(key.indexOf('/') + 1);
}

/** What a template of a row stands for: its name and its latest revision's id. */
interface RowWords {
  name: string;
  revisionId: string | undefined;
}

function wordsOf(row: Row): RowWords {
  const health = row.health as { revisionId?: unknown } | undefined;
  return {
    name: nameOf(String(row.key)),
    revisionId: typeof health?.revisionId === 'string' ? health.revisionId : undefined,
  };
}

/** A template's words filled in, in one pass (a word's value is never read again as a placeholder). */
export function expandTemplate(template: string, words: RowWords): string {
  return template.replace(/\{(name|revisionId)\}/g, (whole, word: string) =>
    word === 'name' ? words.name : (words.revisionId ?? whole),
  );
}

/** The string as a template of the row's words, when it holds one and the template gives the string back exactly. */
function templateOf(text: string, words: RowWords): string | undefined {
  if (text.includes('{name}') || text.includes('{revisionId}')) return undefined;
  let template = text;
  if (words.revisionId && words.revisionId.length >= 8)
    template = template.split(words.revisionId).join('{revisionId}');
  if (words.name.length >= 3) template = template.split(words.name).join('{name}');
  return template !== text && expandTemplate(template, words) === text ? template : undefined;
}

/** The keys of an object that is a reference (`$`, `t`) or a literal kept as it is (`=`), when it is the only key. */
const MARKERS = ['$', 't', '='];

function isMarker(value: object): boolean {
  const keys = Object.keys(value);
  return keys.length === 1 && MARKERS.includes(keys[0]!);
}

/**
 * Maps every string of a JSON value (object values and array items; never keys). An object of the data that looks
 * like a reference (its one key `$`, `t` or `=`) is written `{"=": OBJECT}`, as it is, so it is never read as one.
 */
function mapStrings(value: Json, map: (text: string) => Json): Json {
  if (typeof value === 'string') return map(value);
  if (Array.isArray(value)) return value.map((item) => mapStrings(item, map));
  if (typeof value === 'object' && value !== null && isMarker(value)) return { '=': value };
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, Json> = {};
    for (const [key, item] of Object.entries(value)) out[key] = mapStrings(item, map);
    return out;
  }
  return value;
}

/** A row without its kind and name (its key has them), the defaults and the omitted fields. */
function slimRow(row: Row): Row {
  const out: Row = {};
  for (const [field, value] of Object.entries(row)) {
    if (field === 'kind' || field === 'name' || ROW_OMITTED.includes(field)) continue;
    if (field in ROW_DEFAULTS && value === ROW_DEFAULTS[field]) continue;
    out[field] = value;
  }
  return out;
}

/** Each part of a row the encoder may reference: everything but its key and its revision id, the templates' words. */
function eachRowPart(row: Row, visit: (field: string, value: Json) => Json): Row {
  const out: Row = {};
  for (const [field, value] of Object.entries(row)) {
    if (field === 'key') out[field] = value;
    else if (field === 'health' && typeof value === 'object' && value !== null) {
      const { revisionId, ...rest } = value as Row;
      out[field] = { ...(visit(field, rest) as Row), ...(revisionId !== undefined ? { revisionId } : {}) };
    } else out[field] = visit(field, value);
  }
  return out;
}

/**
 * A /status answer in format 2: each row slimmed, and every string of at least MIN_REFERENCED characters that occurs
 * more than once in its rows, plan or planDelta written as `{"$": i}` (`strings[i]`), or in a row as `{"t": i}` when
 * it is the same template of its row's name and revision id as another's. The other fields are as in format 1.
 */
export function encodeStatus(answer: Readonly<Record<string, Json>>): Record<string, Json> {
  const rows = Array.isArray(answer.resources) ? (answer.resources as Row[]).map(slimRow) : undefined;
  const seen = new Map<string, number>();
  const count = (text: string): string => (seen.set(text, (seen.get(text) ?? 0) + 1), text);
  for (const row of rows ?? []) {
    const words = wordsOf(row);
    eachRowPart(row, (_, value) =>
      mapStrings(value, (text) => (text.length >= MIN_REFERENCED ? count(templateOf(text, words) ?? text) : text)),
    );
  }
  const others = REFERENCING_FIELDS.filter((name) => name !== 'resources' && answer[name] !== undefined);
  for (const name of others) mapStrings(answer[name], (text) => (text.length >= MIN_REFERENCED ? count(text) : text));
  const strings: string[] = [];
  const index = new Map<string, number>();
  const ref = (text: string): number => index.get(text) ?? (index.set(text, strings.length), strings.push(text) - 1);
  // Only strings of MIN_REFERENCED characters or more were counted (a template of one may be shorter).
  const shared = (text: string): boolean => (seen.get(text) ?? 0) > 1;
  const encodedRows = rows?.map((row) => {
    const words = wordsOf(row);
    return eachRowPart(row, (_, value) =>
      mapStrings(value, (text) => {
        const template = text.length >= MIN_REFERENCED ? templateOf(text, words) : undefined;
        if (template !== undefined && shared(template)) return { t: ref(template) };
        return text.length >= MIN_REFERENCED && shared(text) ? { $: ref(text) } : text;
      }),
    );
  });
  const out: Record<string, Json> = {};
  for (const [name, value] of Object.entries(answer)) {
    if (name === 'format_version') out[name] = '2';
    else if (name === 'resources' && encodedRows) out[name] = encodedRows;
    else if (others.includes(name))
      out[name] = mapStrings(value, (text) =>
        text.length >= MIN_REFERENCED && shared(text) ? { $: ref(text) } : text,
      );
    else out[name] = value;
  }
  out.strings = strings;
  return out;
}

/** A reference's string: `{"$": i}` as it is, `{"t": i}` filled with the row's words, `{"=": X}` X as it is. */
function resolved(value: Json, strings: readonly string[], words: RowWords | undefined): Json {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map((item) => resolved(item, strings, words));
  const keys = Object.keys(value);
  const only = keys.length === 1 ? keys[0] : undefined;
  const at = only !== undefined ? (value as Row)[only] : undefined;
  if (only === '$' && typeof at === 'number') return strings[at];
  if (only === 't' && typeof at === 'number' && words) return expandTemplate(strings[at] ?? '', words);
  if (only === '=') return at;
  const out: Row = {};
  for (const [key, item] of Object.entries(value)) out[key] = resolved(item, strings, words);
  return out;
}

/** A row of format 2 as format 1 writes it, less ROW_OMITTED: its kind and name, its defaults, its strings. */
function expandRow(row: Row, strings: readonly string[]): Row {
  const key = String(row.key);
  const words = wordsOf(row);
  const filled = resolved(row, strings, words) as Row;
  const out: Row = { key, kind: key.slice(0, key.indexOf('/')), name: nameOf(key) };
  for (const [field, value] of Object.entries(filled)) if (field !== 'key') out[field] = value;
  for (const [field, value] of Object.entries(ROW_DEFAULTS)) if (!(field in out)) out[field] = value;
  return out;
}

/**
 * A /status answer of format 2 with its references resolved and its rows whole again (their fields in format 1's
 * order is not promised: compare rows by content). Format 1 is given back as it is.
 */
export function decodeStatus<T extends Record<string, Json>>(answer: T): T {
  if (answer.format_version !== '2') return answer;
  const strings = Array.isArray(answer.strings) ? (answer.strings as string[]) : [];
  const out: Record<string, Json> = {};
  for (const [name, value] of Object.entries(answer)) {
    if (name === 'strings') continue;
    if (name === 'resources' && Array.isArray(value))
      out[name] = (value as Row[]).map((row) => expandRow(row, strings));
    else if (REFERENCING_FIELDS.includes(name)) out[name] = resolved(value, strings, undefined);
    else out[name] = value;
  }
  return out as T;
}
