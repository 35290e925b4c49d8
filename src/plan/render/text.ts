// Terraform-like text rendering of a plan: notes, + create, ~ update, ! blocked, per-field lines, one orphan line, summary.
import type { FieldChange, Plan, PlanChange, PlanDiagnostic } from '../../core/model.js';
import {
  fieldKind,
  formatValue,
  healthNoteLine,
  sourceChangeLine,
  listedChanges,
  markers,
  notedUnchanged,
  orphanNames,
  orphanSentence,
  releasedChanges,
  releasedLine,
  summarySentence,
  SYMBOL,
  waveHeadings,
} from './format.js';

export interface TextOptions {
  /** ANSI colour; the caller decides (stdout is a TTY and NO_COLOR is unset). */
  color: boolean;
  /** List every orphan (live deployment in no manifest) instead of one summary line. */
  showOrphans?: boolean;
}

const CODES = { reset: 0, bold: 1, dim: 2, red: 31, green: 32, yellow: 33, magenta: 35, cyan: 36 } as const;
type Style = keyof typeof CODES;

type Paint = (text: string, ...styles: Style[]) => string;

function painter(color: boolean): Paint {
  if (!color) return (text) => text;
  return (text, ...styles) => `${styles.map((s) => `\x1b[${CODES[s]}m`).join('')}${text}\x1b[0m`;
}

const ACTION_STYLE: Record<PlanChange['action'], Style> = {
  create: 'green',
  update: 'yellow',
  adopt: 'magenta',
  delete: 'red',
  blocked: 'red',
  orphan: 'cyan',
  noop: 'dim',
};

/** One field as the plan shows it: `+ path: value`, `- path: value`, `~ path: before -> after`. */
export function fieldLine(field: FieldChange, paint: Paint = (text) => text): string {
  const kind = fieldKind(field);
  const before = formatValue(field.before, field.sensitive);
  const after = formatValue(field.after, field.sensitive);
  if (kind === 'add') return `${paint('+', 'green')} ${field.path}: ${after}`;
  if (kind === 'remove') return `${paint('-', 'red')} ${field.path}: ${before}`;
  return `${paint('~', 'yellow')} ${field.path}: ${before} -> ${after}`;
}

function changeBlock(change: PlanChange, paint: Paint): string[] {
  const style = ACTION_STYLE[change.action];
  const title = `${paint(`${SYMBOL[change.action]} ${change.action}`, style, 'bold')} ${change.kind}/${change.name}`;
  const marks = markers(change).map((m) => paint(`(${m})`, m.startsWith('forces') ? 'magenta' : 'cyan'));
  const lines = [`  ${[title, ...marks].join(' ')}`];
  for (const field of change.fields) {
    lines.push(`      ${fieldLine(field, paint)}`);
    // a secret moved to another source: the names, under its line (never a value)
    if (field.source) lines.push(`          ${paint(sourceChangeLine(field.source), 'dim')}`);
  }
  // A delete's reason is its marker: "- delete Deployment/x (owned by converge, no longer declared)".
  if (change.reason && change.action !== 'delete') lines.push(`      ${paint(`# ${change.reason}`, 'dim')}`);
  return lines;
}

function diagnosticLine(d: PlanDiagnostic, paint: Paint): string {
  const severity = paint(d.severity, d.severity === 'error' ? 'red' : 'yellow', 'bold');
  return `  ${d.file}:${d.line}:${d.column}: ${severity}: ${d.message}`;
}

function orphanSection(plan: Plan, paint: Paint, showAll: boolean): string[] {
  const names = orphanNames(plan);
  if (names.length === 0) return [];
  const line = paint(`${SYMBOL.orphan} ${orphanSentence(names, showAll)}`, 'cyan');
  if (!showAll) return [`  ${line}`];
  return [`  ${line}`, ...names.map((name) => `      Deployment/${name}`)];
}

/** The whole plan as text, ending with a newline. */
export function renderText(plan: Plan, options: TextOptions): string {
  const paint = painter(options.color);
  const sections: string[][] = [];
  for (const note of plan.notes ?? []) sections.push([paint(`Note: ${note}`, 'yellow', 'bold')]);
  const listed = listedChanges(plan);
  const headings = waveHeadings(plan, listed);
  listed.forEach((change, i) => {
    const heading = headings.get(i);
    // Several waves: each wave's changes under its heading ("wave 1: 3 to update, after wave 0 is healthy").
    sections.push(
      heading
        ? [paint(`${heading.charAt(0).toUpperCase()}${heading.slice(1)}:`, 'bold'), ...changeBlock(change, paint)]
        : changeBlock(change, paint),
    );
  });
  const noted = notedUnchanged(plan);
  if (noted.length > 0) {
    sections.push([
      paint('Notes (unchanged):', 'bold'),
      ...noted.map((c) => `  ${c.kind}/${c.name}: ${paint(c.reason ?? '', 'dim')}`),
    ]);
  }
  const health = plan.health ?? [];
  if (health.length > 0) {
    sections.push([
      paint('Health:', 'bold'),
      ...health.map((h) => `  ${paint(healthNoteLine(h), h.status === 'degraded' ? 'red' : 'dim')}`),
    ]);
  }
  const released = releasedChanges(plan).map(
    (change) => `  ${paint(`${SYMBOL.orphan} ${releasedLine(change)}`, 'cyan')}`,
  );
  const orphans = [...released, ...orphanSection(plan, paint, options.showOrphans === true)];
  if (orphans.length > 0) sections.push(orphans);
  if (plan.diagnostics.length > 0) {
    sections.push([paint('Diagnostics:', 'bold'), ...plan.diagnostics.map((d) => diagnosticLine(d, paint))]);
  }
  const sentence = summarySentence(plan);
  sections.push([
    sentence.startsWith('Plan:')
      ? `${paint('Plan:', 'bold')}${sentence.slice('Plan:'.length)}`
      : paint(sentence, 'green'),
  ]);
  return `${sections.map((lines) => lines.join('\n')).join('\n\n')}\n`;
}
