// JSON rendering of a plan: exactly the documented keys of docs/contracts.md §3, in a stable order, 2-space indent.
import type { Plan } from '../../core/model.js';

/**
 * `plan --output json`. Only documented keys; every change and orphan, however many (the markdown plan is
 * capped, this never is); `notes` (about the plan as a whole) always, `[]` when there is none. Ends with a newline.
 */
export function renderJson(plan: Plan): string {
  const document = {
    format_version: plan.format_version,
    ...(plan.targets ? { targets: plan.targets } : {}),
    summary: {
      create: plan.summary.create,
      update: plan.summary.update,
      adopt: plan.summary.adopt,
      delete: plan.summary.delete,
      noop: plan.summary.noop,
      orphan: plan.summary.orphan,
      blocked: plan.summary.blocked,
      suspended: plan.summary.suspended,
    },
    // Several waves only (docs/rollouts.md): a plan in one wave has neither `waves` nor a change's `wave`.
    ...(plan.waves
      ? { waves: plan.waves.map((w) => ({ wave: w.wave, create: w.create, update: w.update, adopt: w.adopt })) }
      : {}),
    changes: plan.changes.map((change) => ({
      kind: change.kind,
      name: change.name,
      action: change.action,
      new_revision: change.new_revision,
      suspended: change.suspended === true,
      released: change.released === true,
      ...(change.wave !== undefined ? { wave: change.wave } : {}),
      ...(change.id !== undefined ? { id: change.id } : {}),
      fields: change.fields.map((field) => ({
        path: field.path,
        before: field.before ?? null,
        after: field.after ?? null,
        sensitive: field.sensitive,
        // a secret moved to another source since its last write: names only (a variable, a file path), never a value
        ...(field.source ? { source: field.source } : {}),
      })),
      reason: change.reason ?? null,
    })),
    notes: plan.notes ?? [],
    health: plan.health ?? [],
    diagnostics: plan.diagnostics.map((d) => ({
      severity: d.severity,
      file: d.file,
      line: d.line,
      column: d.column,
      message: d.message,
    })),
  };
  return `${JSON.stringify(document, null, 2)}\n`;
}
