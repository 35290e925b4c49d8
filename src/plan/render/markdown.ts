// Markdown rendering of a plan for pull-request comments: notes, summary table, changes table, <details> with ```diff
// blocks, orphans in one collapsed section; never longer than a pull-request comment takes.
import type { FieldChange, Plan, PlanChange } from '../../core/model.js';
import { fieldKind, formatValue, healthNoteLine, listedChanges, markers, notedUnchanged, orphanHeading, orphanNames, releasedChanges, releasedLine, summarySentence, SYMBOL } from './format.js';

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
  return [`- ${field.path}: ${before}`, `+ ${field.path}: ${after}`];
}

function summaryTable(plan: Plan): string[] {
  const s = plan.summary;
  // adopt and delete get their columns when the plan holds one (a plan without either reads as it always did).
  const columns: Array<[string, number]> = [['create', s.create], ['update', s.update]];
  if (s.adopt + s.delete > 0) columns.push(['adopt', s.adopt], ['delete', s.delete]);
  columns.push(['suspended', s.suspended], ['blocked', s.blocked], ['orphan', s.orphan], ['unchanged', s.noop]);
  return [
    `| ${columns.map(([name]) => name).join(' | ')} |`,
    `|${columns.map(() => '---:').join('|')}|`,
    `| ${columns.map(([, count]) => count).join(' | ')} |`,
  ];
}

function changesTable(changes: PlanChange[]): string[] {
  const rows = ['| | resource | action | new revision | note |', '|:-:|---|---|:-:|---|'];
  for (const change of changes) {
    const revision = change.new_revision && change.action !== 'blocked' ? 'yes' : 'no';
    const action = change.suspended ? `${change.action} (suspended)` : change.action;
    const note = change.reason ? escapeMarkdown(change.reason) : '';
    rows.push(`| ${code(SYMBOL[change.action])} | ${code(`${change.kind}/${change.name}`)} | ${action} | ${revision} | ${note} |`);
  }
  return rows;
}

function details(change: PlanChange): string[] {
  const marks = markers(change).map((m) => ` (${m})`).join('');
  const title = `<code>${escapeHtml(`${SYMBOL[change.action]} ${change.action} ${change.kind}/${change.name}`)}</code>${escapeHtml(marks)}`;
  const body = change.fields.flatMap(diffLines).join('\n');
  const delimiter = fence(body);
  return [`<details><summary>${title}</summary>`, '', `${delimiter}diff`, body, delimiter, '', '</details>'];
}

/** The collapsed list of orphans: one `<details>` whose summary counts them. */
function orphanDetails(names: string[], total: number): string[] {
  return [`<details><summary>${escapeHtml(orphanHeading(total))}</summary>`, '', ...names.map((name) => `- ${code(`Deployment/${name}`)}`), '', '</details>'];
}

/** A pull-request comment takes at most 65,536 characters: the markdown plan stays under this. */
export const MARKDOWN_LIMIT = 60_000;

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** The plan with only the first `keep` items (listed changes, released, diagnostics, orphans, in that order). */
function compose(plan: Plan, keep: number, limit: number): string {
  const listed = listedChanges(plan);
  const released = releasedChanges(plan);
  const orphans = orphanNames(plan);
  let budget = keep;
  const take = <T>(items: T[]): T[] => {
    const kept = items.slice(0, Math.max(0, budget));
    budget -= kept.length;
    return kept;
  };
  const keptListed = take(listed);
  const keptReleased = take(released);
  const keptDiagnostics = take(plan.diagnostics);
  const keptOrphans = take(orphans);

  const blocks: string[][] = [['### converge plan']];
  for (const note of plan.notes ?? []) blocks.push([`> **Note:** ${escapeMarkdown(note)}`]);
  blocks.push(summaryTable(plan), [escapeMarkdown(summarySentence(plan))]);
  if (keptListed.length > 0) blocks.push(['#### Changes'], changesTable(keptListed));
  for (const change of keptListed) {
    if (change.fields.length > 0) blocks.push(details(change));
  }
  const noted = notedUnchanged(plan);
  if (noted.length > 0) {
    blocks.push(['#### Notes (unchanged)'], noted.map((c) => `- ${code(`${c.kind}/${c.name}`)}: ${escapeMarkdown(c.reason ?? '')}`));
  }
  const health = plan.health ?? [];
  if (health.length > 0) blocks.push(['#### Health'], health.map((h) => `- ${escapeMarkdown(healthNoteLine(h))}`));
  if (keptReleased.length > 0) blocks.push(keptReleased.map((change) => `- ${escapeMarkdown(releasedLine(change))}`));
  if (keptOrphans.length > 0) blocks.push(orphanDetails(keptOrphans, orphans.length));
  if (keptDiagnostics.length > 0) {
    const items = keptDiagnostics.map(
      (d) => `- **${d.severity}** ${code(`${d.file}:${d.line}:${d.column}`)}: ${escapeMarkdown(d.message)}`,
    );
    blocks.push(['#### Diagnostics'], items);
  }
  const resourcesOut = listed.length + released.length + orphans.length - keptListed.length - keptReleased.length - keptOrphans.length;
  const diagnosticsOut = plan.diagnostics.length - keptDiagnostics.length;
  if (resourcesOut + diagnosticsOut > 0) {
    const parts = [resourcesOut > 0 ? plural(resourcesOut, 'resource') : '', diagnosticsOut > 0 ? plural(diagnosticsOut, 'diagnostic') : ''].filter(Boolean);
    blocks.push([
      `**${parts.join(' and ')} left out** to keep this plan under ${limit.toLocaleString('en-US')} characters; \`converge plan --output json\` holds them all.`,
    ]);
  }
  return `${blocks.map((lines) => lines.join('\n')).join('\n\n')}\n`;
}

/**
 * The whole plan as GitHub-flavoured markdown, ending with a newline, at most `limit` characters: beyond it,
 * the details of the last resources (then diagnostics, then orphans) are cut, with a line saying how many.
 */
export function renderMarkdown(plan: Plan, limit = MARKDOWN_LIMIT): string {
  const total = listedChanges(plan).length + releasedChanges(plan).length + plan.diagnostics.length + orphanNames(plan).length;
  const full = compose(plan, total, limit);
  if (full.length <= limit) return full;
  // The largest number of items that fits (the length grows with each item kept).
  let low = 0;
  let high = total - 1;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (compose(plan, middle, limit).length <= limit) low = middle;
    else high = middle - 1;
  }
  return compose(plan, low, limit);
}
