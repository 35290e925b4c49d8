// The metric and label names a PromQL expression reads, by a small tokenizer over its identifiers, and the check of
// them against what a daemon's /metrics exports (docs/monitoring.md#what-the-tests-check).
import type { Sample } from './prometheus.js';

/** What an expression reads: each metric with the label names its matchers use, and the labels it groups or joins by. */
export interface PromqlNames {
  metrics: Map<string, Set<string>>;
  grouping: Set<string>;
}

/** Aggregation operators: an identifier followed by `by`, `without` or `(`, never a metric. */
const AGGREGATIONS = new Set([
  'sum',
  'min',
  'max',
  'avg',
  'group',
  'stddev',
  'stdvar',
  'count',
  'count_values',
  'bottomk',
  'topk',
  'quantile',
  'limitk',
  'limit_ratio',
]);
/** Keywords followed by a parenthesised list of label names (group_left and group_right may have none). */
const LABEL_LISTS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
/** Other keywords and literals that are no metric. */
const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'atan2', 'inf', 'nan', 'start', 'end']);
/** Grafana's interval variables, read as a duration. */
const GRAFANA_INTERVALS = /\$__(rate_interval|interval|range)\b/g;
const IDENT = /[a-zA-Z_:][a-zA-Z0-9_:]*/y;
const LABEL = /[a-zA-Z_][a-zA-Z0-9_]*/y;

function readAt(re: RegExp, text: string, at: number): string | undefined {
  re.lastIndex = at;
  return re.exec(text)?.[0];
}

function skipSpace(text: string, at: number): number {
  while (at < text.length && /\s/.test(text[at]!)) at += 1;
  return at;
}

/** The end (after the closing quote) of the string literal opening at `at`. */
function stringEnd(text: string, at: number): number {
  const quote = text[at]!;
  for (let i = at + 1; i < text.length; i += 1) {
    if (text[i] === '\\' && quote !== '`') i += 1;
    else if (text[i] === quote) return i + 1;
  }
  throw new Error(`unterminated string in: ${text}`);
}

/** Reads `{name op "value", ...}` from `at` (the brace): the label names, and where it ends. */
function matchers(text: string, at: number): { labels: string[]; end: number } {
  const labels: string[] = [];
  let i = skipSpace(text, at + 1);
  while (text[i] !== '}') {
    const name = readAt(LABEL, text, i);
    if (!name) throw new Error(`a label name expected at ${i} in: ${text}`);
    labels.push(name);
    i = skipSpace(text, i + name.length);
    const op = /^(=~|!~|!=|=)/.exec(text.slice(i))?.[0];
    if (!op) throw new Error(`a matcher operator expected at ${i} in: ${text}`);
    i = skipSpace(text, i + op.length);
    if (!`"'\``.includes(text[i] ?? '')) throw new Error(`a quoted value expected at ${i} in: ${text}`);
    i = skipSpace(text, stringEnd(text, i));
    if (text[i] === ',') i = skipSpace(text, i + 1);
  }
  return { labels, end: i + 1 };
}

/** Reads `(a, b)` from `at`: the label names, and where it ends. */
function labelList(text: string, at: number): { labels: string[]; end: number } {
  const close = text.indexOf(')', at);
  if (close < 0) throw new Error(`unclosed label list in: ${text}`);
  const labels = text
    .slice(at + 1, close)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const label of labels)
    if (readAt(LABEL, label, 0) !== label) throw new Error(`not a label name: ${label} in: ${text}`);
  return { labels, end: close + 1 };
}

/**
 * The metric and label names of a PromQL expression. An identifier is a function when a `(` follows it, an
 * aggregation or keyword when it is one of PromQL's, a label when it stands in a `{...}` matcher or in the list after
 * by/without/on/ignoring/group_left/group_right; every other identifier is a metric name. Strings, numbers, durations
 * and ranges (`[5m]`, `[10m:1m]`) are skipped, and Grafana's `$__rate_interval` reads as a duration. A `$` anywhere else
 * (a Grafana variable outside a string) is refused.
 */
export function promqlNames(expression: string): PromqlNames {
  const text = expression.replace(GRAFANA_INTERVALS, '5m');
  const metrics = new Map<string, Set<string>>();
  const grouping = new Set<string>();
  let last: string | undefined;
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (/\s/.test(c)) i += 1;
    else if (c === '#') i = text.includes('\n', i) ? text.indexOf('\n', i) : text.length;
    else if (`"'\``.includes(c)) i = stringEnd(text, i);
    else if (c === '[') i = text.indexOf(']', i) + 1 || text.length;
    else if (c === '{') {
      const read = matchers(text, i);
      if (!last) throw new Error(`a matcher without a metric name in: ${expression}`);
      for (const label of read.labels) metrics.get(last)!.add(label);
      i = read.end;
    } else if (/[0-9.]/.test(c)) i += /^[0-9.][0-9a-zA-Z_.]*/.exec(text.slice(i))![0].length;
    else if (c === '$') throw new Error(`a Grafana variable outside a string in: ${expression}`);
    else if (/[a-zA-Z_:]/.test(c)) {
      const word = readAt(IDENT, text, i)!;
      i += word.length;
      const next = skipSpace(text, i);
      last = undefined;
      if (LABEL_LISTS.has(word)) {
        if (text[next] === '(') {
          const read = labelList(text, next);
          for (const label of read.labels) grouping.add(label);
          i = read.end;
        }
      } else if (AGGREGATIONS.has(word) || KEYWORDS.has(word) || text[next] === '(') {
        // an operator, a keyword or a function
      } else {
        if (!metrics.has(word)) metrics.set(word, new Set());
        last = word;
        continue;
      }
    } else i += 1;
    // Only a `{` right after a metric name is its matcher.
    if (text[i] !== '{' && !/\s/.test(text[i] ?? '')) last = undefined;
  }
  return { metrics, grouping };
}

/** Each exported metric name (sample names, so a histogram's _bucket, _sum and _count) with its label names. */
export function exportedNames(samples: readonly Sample[]): Map<string, Set<string>> {
  const names = new Map<string, Set<string>>();
  for (const sample of samples) {
    let labels = names.get(sample.name);
    if (!labels) names.set(sample.name, (labels = new Set()));
    for (const label of Object.keys(sample.labels)) labels.add(label);
  }
  return names;
}

/** Labels Prometheus adds to every scraped series. */
const TARGET_LABELS = ['job', 'instance'];

/**
 * What `expression` reads that `known` (exported metrics, and the recording rules' names with their labels) does not
 * have: an unknown metric, a matcher's label the metric does not carry, a grouping label none of its metrics carries.
 * Empty when every name is known.
 */
export function unknownNames(expression: string, known: ReadonlyMap<string, ReadonlySet<string>>): string[] {
  const { metrics, grouping } = promqlNames(expression);
  const problems: string[] = [];
  const carried = new Set(TARGET_LABELS);
  for (const [metric, labels] of metrics) {
    const has = known.get(metric);
    if (!has) {
      problems.push(`metric ${metric} is not exported`);
      continue;
    }
    for (const label of has) carried.add(label);
    for (const label of labels)
      if (!has.has(label) && !TARGET_LABELS.includes(label)) problems.push(`${metric} has no label ${label}`);
  }
  for (const label of grouping)
    if (!carried.has(label)) problems.push(`no metric of the expression has the label ${label} it groups by`);
  return problems;
}
