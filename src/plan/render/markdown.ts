// Markdown rendering of a plan for pull-request comments: notes, summary table, changes table, <details> with ```diff
// blocks, orphans in one collapsed section; never longer than a pull-request comment takes.
import type { FieldChange, Plan, PlanChange } from '../../core/model.js';
import {
  fieldKind,
  formatValue,
  healthNoteLine,
  sourceSide,
  listedChanges,
  markers,
  notedUnchanged,
  orphanHeading,
  orphanKeys,
  releasedChanges,
  releasedLine,
  summarySentence,
  SYMBOL,
  waveHeadings,
} from './format.js';

/** Escapes text for a table cell or a paragraph: markdown punctuation, pipes, and newlines (a cell is one line). */
export function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_[\]<>|#~]/g, (c) => `\\${c}`).replace(/\r?\n/g, ' ');
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** An inline code span that survives a table: pipes escaped, backticks handled by a longer delimiter. */
function code(text: string): string {
  const cell = text.replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
  const longest = Math.max(0, ...(cell.match(/`+/g) ?? []).map((run) => run.length));
  const tick = '`'.repeat(longest + 1);
  const pad = longest > 0 ? ' ' : '';
  return `${tick}${pad}${cell}${pad}${tick}`;
}

function fence(body: string): string {
  const longest = Math.max(0, ...(body.match(/`+/g) ?? []).map((run) => run.length));
  return '`'.repeat(Math.max(3, longest + 1));
}

/** A field as ```diff lines: `+` for values sent, `-` for values replaced or removed. */
function diffLines(field: FieldChange): string[] {
  const before = formatValue(field.before, field.sensitive);
  const after = formatValue(field.after, field.sensitive);
  const kind = fieldKind(field);
  if (kind === 'add') return [`+ ${field.path}: ${after}`];
  if (kind === 'remove') return [`- ${field.path}: ${before}`];
  // a secret moved to another source: each side names its source (never a value)
  const [was, now] = field.source
    ? [` (${sourceSide(field.source.before)})`, ` (${sourceSide(field.source.after)})`]
    : ['', ''];
  return [`- ${field.path}: ${before}${was}`, `+ ${field.path}: ${after}${now}`];
}

function summaryTable(plan: Plan): string[] {
  const s = plan.summary;
  // adopt and delete get their columns when the plan holds one (a plan without either reads as it always did).
  const columns: Array<[string, number]> = [
    ['create', s.create],
    ['update', s.update],
  ];
  if (s.adopt + s.delete > 0) columns.push(['adopt', s.adopt], ['delete', s.delete]);
  columns.push(['suspended', s.suspended], ['blocked', s.blocked], ['orphan', s.orphan], ['unchanged', s.noop]);
  return [
    `| ${columns.map(([name]) => name).join(' | ')} |`,
    `|${columns.map(() => '---:').join('|')}|`,
    `| ${columns.map(([, count]) => count).join(' | ')} |`,
  ];
}

/** A note at most this long stays in its rows even when several share it ("owned by converge, no longer declared"). */
const SHORT_NOTE = 48;

/**
 * The changes table, one row per change. A longer note that several rows share (the adoption note) is written once under the table and each of its rows points at it, so a long note is not repeated on every row.
 */
function changesTable(changes: PlanChange[], waved: boolean): string[] {
  if (waved) return wavedTable(changes);
  const rows = ['| | resource | action | new revision | note |', '|:-:|---|---|:-:|---|'];
  const counts = reasonCounts(changes);
  const shared = new Map(
    [...counts]
      .filter(([reason, count]) => count > 1 && reason.length > SHORT_NOTE)
      .map(([reason], i) => [reason, i + 1]),
  );
  for (const change of changes) {
    const revision = change.new_revision && change.action !== 'blocked' ? 'yes' : 'no';
    const action = change.suspended ? `${change.action} (suspended)` : change.action;
    const index = change.reason ? shared.get(change.reason) : undefined;
    const note = index !== undefined ? `see note ${index}` : change.reason ? escapeMarkdown(change.reason) : '';
    rows.push(
      `| ${code(SYMBOL[change.action])} | ${code(`${change.kind}/${change.name}`)} | ${action} | ${revision} | ${note} |`,
    );
  }
  if (shared.size === 0) return rows;
  const notes = [...shared].map(
    ([reason, index]) =>
      `- **Note ${index}** (${plural(counts.get(reason) ?? 0, 'resource')}): ${escapeMarkdown(reason)}`,
  );
  return [...rows, '', ...notes];
}

/** The changes table of a plan whose writes span several waves: a wave column first ("after" for the deletes). */
function wavedTable(changes: PlanChange[]): string[] {
  const rows = ['| wave | | resource | action | new revision | note |', '|---:|:-:|---|---|:-:|---|'];
  for (const change of changes) {
    const revision = change.new_revision && change.action !== 'blocked' ? 'yes' : 'no';
    const action = change.suspended ? `${change.action} (suspended)` : change.action;
    const note = change.reason ? escapeMarkdown(change.reason) : '';
    rows.push(
      `| ${change.wave ?? 'after'} | ${code(SYMBOL[change.action])} | ${code(`${change.kind}/${change.name}`)} | ${action} | ${revision} | ${note} |`,
    );
  }
  return rows;
}

/** How many changes carry each reason, in the order each reason first appears. */
function reasonCounts(changes: PlanChange[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const change of changes) if (change.reason) counts.set(change.reason, (counts.get(change.reason) ?? 0) + 1);
  return counts;
}

function details(change: PlanChange): string[] {
  const marks = markers(change)
    .map((m) => ` (${m})`)
    .join('');
  const title = `<code>${escapeHtml(`${SYMBOL[change.action]} ${change.action} ${change.kind}/${change.name}`)}</code>${escapeHtml(marks)}`;
  const body = change.fields.flatMap(diffLines).join('\n');
  const delimiter = fence(body);
  return [`<details><summary>${title}</summary>`, '', `${delimiter}diff`, body, delimiter, '', '</details>'];
}

/** The collapsed list of orphans (by resource key): one `<details>` whose summary counts them. */
function orphanDetails(keys: string[], total: number): string[] {
  return [
    `<details><summary>${escapeHtml(orphanHeading(total))}</summary>`,
    '',
    ...keys.map((key) => `- ${code(key)}`),
    '',
    '</details>',
  ];
}

/** A pull-request comment takes at most 65,536 characters: the markdown plan stays under this. */
export const MARKDOWN_LIMIT = 60_000;

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/**
 * How much of the plan a rendering keeps: the first `items` of the listed changes, released, diagnostics and orphans
 * (in that order), and the field details of the first `details` listed changes that have fields.
 */
interface Keep {
  items: number;
  details: number;
}

/** The plan with only what `keep` keeps, and a line saying what was left out. */
function compose(plan: Plan, keep: Keep, limit: number): string {
  const listed = listedChanges(plan);
  const released = releasedChanges(plan);
  const orphans = orphanKeys(plan);
  let budget = keep.items;
  const take = <T>(items: T[]): T[] => {
    const kept = items.slice(0, Math.max(0, budget));
    budget -= kept.length;
    return kept;
  };
  const keptListed = take(listed);
  const keptReleased = take(released);
  const keptDiagnostics = take(plan.diagnostics);
  const keptOrphans = take(orphans);
  const withFields = keptListed.filter((change) => change.fields.length > 0);
  const keptDetails = withFields.slice(0, Math.max(0, keep.details));

  const blocks: string[][] = [['### converge plan']];
  for (const note of plan.notes ?? []) blocks.push([`> **Note:** ${escapeMarkdown(note)}`]);
  blocks.push(summaryTable(plan), [escapeMarkdown(summarySentence(plan))]);
  // Several waves: each in one line ("wave 1: 3 to update, after wave 0 is healthy"), and a wave column in the table.
  if (plan.waves)
    blocks.push(
      ['#### Waves'],
      [...waveHeadings(plan, listed).values()].map((line) => `- ${escapeMarkdown(line)}`),
    );
  if (keptListed.length > 0) blocks.push(['#### Changes'], changesTable(keptListed, plan.waves !== undefined));
  for (const change of keptDetails) blocks.push(details(change));
  const noted = notedUnchanged(plan);
  if (noted.length > 0) {
    blocks.push(
      ['#### Notes (unchanged)'],
      noted.map((c) => `- ${code(`${c.kind}/${c.name}`)}: ${escapeMarkdown(c.reason ?? '')}`),
    );
  }
  const health = plan.health ?? [];
  if (health.length > 0)
    blocks.push(
      ['#### Health'],
      health.map((h) => `- ${escapeMarkdown(healthNoteLine(h))}`),
    );
  if (keptReleased.length > 0) blocks.push(keptReleased.map((change) => `- ${escapeMarkdown(releasedLine(change))}`));
  if (keptOrphans.length > 0) blocks.push(orphanDetails(keptOrphans, orphans.length));
  if (keptDiagnostics.length > 0) {
    const items = keptDiagnostics.map(
      (d) => `- **${d.severity}** ${code(`${d.file}:${d.line}:${d.column}`)}: ${escapeMarkdown(d.message)}`,
    );
    blocks.push(['#### Diagnostics'], items);
  }
  const resourcesOut =
    listed.length + released.length + orphans.length - keptListed.length - keptReleased.length - keptOrphans.length;
  const diagnosticsOut = plan.diagnostics.length - keptDiagnostics.length;
  const detailsOut = withFields.length - keptDetails.length;
  const parts = [
    detailsOut > 0 ? `the field details of ${plural(detailsOut, 'resource')}` : '',
    resourcesOut > 0 ? plural(resourcesOut, 'resource') : '',
    diagnosticsOut > 0 ? plural(diagnosticsOut, 'diagnostic') : '',
  ].filter(Boolean);
  if (parts.length > 0) {
    const head = parts.join(' and ');
    blocks.push([
      `**${head.charAt(0).toUpperCase()}${head.slice(1)} left out** to keep this plan under ${limit.toLocaleString('en-US')} characters; \`converge plan --output json\` holds them all.`,
    ]);
  }
  return `${blocks.map((lines) => lines.join('\n')).join('\n\n')}\n`;
}

/** The largest n in [0, high] for which `fits(n)` holds, given that it holds for 0 and that fitting shrinks as n grows. */
function largestFitting(high: number, fits: (n: number) => boolean): number {
  let low = 0;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (fits(middle)) low = middle;
    else high = middle - 1;
  }
  return low;
}

/**
 * The whole plan as GitHub-flavoured markdown, ending with a newline, at most `limit` characters. Beyond it, the
 * field details are cut first (of the last resources first), keeping one table row per resource; only when the rows
 * alone do not fit are the last resources (then diagnostics, then orphans) left out. Either way a line says how many.
 */
export function renderMarkdown(plan: Plan, limit = MARKDOWN_LIMIT): string {
  const items =
    listedChanges(plan).length + releasedChanges(plan).length + plan.diagnostics.length + orphanKeys(plan).length;
  const details = listedChanges(plan).filter((change) => change.fields.length > 0).length;
  const full = compose(plan, { items, details }, limit);
  if (full.length <= limit) return full;
  if (compose(plan, { items, details: 0 }, limit).length <= limit) {
    const kept = largestFitting(details, (n) => compose(plan, { items, details: n }, limit).length <= limit);
    return compose(plan, { items, details: kept }, limit);
  }
  const kept = largestFitting(items, (n) => compose(plan, { items: n, details: 0 }, limit).length <= limit);
  return compose(plan, { items: kept, details: 0 }, limit);
}
