// The status page's script, the format part (browser JavaScript as text): an answer of /status in format 2 made whole
// again, as src/core/status-compact.ts decodes it (docs/contracts.md §5, "Format 2"); the page asks in format 2.

/** Browser JavaScript; joined with the other parts into one IIFE by page-script.ts. */
export const SCRIPT_FORMAT = String.raw`
/** The row fields format 2 leaves out when they hold their default. */
const ROW_DEFAULTS = { file: null, reason: null, error: null, drift: null, job: null, heldAtLastGood: false };
/** The top-level fields whose strings may be references. */
const REFERENCING_FIELDS = ['resources', 'plan', 'planDelta'];

/** A template's words filled in, in one pass. */
function expandTemplate(template, words) {
  const fill = (whole, word) => (word === 'name' ? words.name : (words.revisionId ?? whole));
  return template.replace(/\{(name|revisionId)\}/g, fill);
}

/** A value with its references resolved: {"$": i} is strings[i], {"t": i} the template filled, {"=": X} X. */
function resolvedValue(value, strings, words) {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map((item) => resolvedValue(item, strings, words));
  const keys = Object.keys(value);
  if (keys.length === 1) {
    const at = value[keys[0]];
    if (keys[0] === '$' && typeof at === 'number') return strings[at];
    if (keys[0] === 't' && typeof at === 'number' && words) return expandTemplate(strings[at] ?? '', words);
    if (keys[0] === '=') return at;
  }
  const out = {};
  for (const key of keys) out[key] = resolvedValue(value[key], strings, words);
  return out;
}

/** A row of format 2 whole again: its kind and name from its key, its defaults, its strings. */
function expandRow(row, strings) {
  const key = String(row.key);
  const slash = key.indexOf('/');
  const revisionId = row.health && typeof row.health.revisionId === 'string' ? row.health.revisionId : undefined;
  const filled = resolvedValue(row, strings, { name: key.slice(slash + 1), revisionId });
  const out = { key, kind: key.slice(0, slash), name: key.slice(slash + 1) };
  for (const field of Object.keys(filled)) if (field !== 'key') out[field] = filled[field];
  for (const field of Object.keys(ROW_DEFAULTS)) if (!(field in out)) out[field] = ROW_DEFAULTS[field];
  return out;
}

/** An answer of /status whole again (format 2); an answer of format 1 as it is. */
function decodeStatus(answer) {
  if (answer.format_version !== '2') return answer;
  const strings = Array.isArray(answer.strings) ? answer.strings : [];
  const out = {};
  for (const name of Object.keys(answer)) {
    if (name === 'strings') continue;
    const value = answer[name];
    if (name === 'resources' && Array.isArray(value)) out[name] = value.map((row) => expandRow(row, strings));
    else if (REFERENCING_FIELDS.includes(name)) out[name] = resolvedValue(value, strings, undefined);
    else out[name] = value;
  }
  return out;
}
`;
