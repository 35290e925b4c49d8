// Markdown rendering of a plan for pull-request comments: summary table, changes table, <details> with ```diff blocks.
import type { FieldChange, Plan, PlanChange } from '../../core/model.js';
import { fieldKind, formatValue, listedChanges, markers, notedUnchanged, summarySentence, SYMBOL } from './format.js';

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
  return [
    '| create | update | blocked | orphan | unchanged |',
    '|---:|---:|---:|---:|---:|',
    `| ${s.create} | ${s.update} | ${s.blocked} | ${s.orphan} | ${s.noop} |`,
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

/** The whole plan as GitHub-flavoured markdown, ending with a newline. */
export function renderMarkdown(plan: Plan): string {
  const listed = listedChanges(plan);
  const blocks: string[][] = [['### converge plan'], summaryTable(plan), [escapeMarkdown(summarySentence(plan))]];
  if (listed.length > 0) blocks.push(['#### Changes'], changesTable(listed));
  for (const change of listed) {
    if (change.fields.length > 0) blocks.push(details(change));
  }
  const noted = notedUnchanged(plan);
  if (noted.length > 0) {
    blocks.push(['#### Notes (unchanged)'], noted.map((c) => `- ${code(`${c.kind}/${c.name}`)}: ${escapeMarkdown(c.reason ?? '')}`));
  }
  if (plan.diagnostics.length > 0) {
    const items = plan.diagnostics.map(
      (d) => `- **${d.severity}** ${code(`${d.file}:${d.line}:${d.column}`)}: ${escapeMarkdown(d.message)}`,
    );
    blocks.push(['#### Diagnostics'], items);
  }
  if (plan.notes?.length) blocks.push(['#### Notes'], plan.notes.map((note) => `- ${escapeMarkdown(note)}`));
  return `${blocks.map((lines) => lines.join('\n')).join('\n\n')}\n`;
}
