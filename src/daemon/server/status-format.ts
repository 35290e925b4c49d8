// /status answers in format 2 (src/core/status-compact.ts), the encoding kept while rows and plan are the same.
import { encodeStatus, REFERENCING_FIELDS } from '../../core/status-compact.js';

type Answer = Readonly<Record<string, unknown>>;

interface Encoded {
  /** What the encoding was made of besides the rows: the answer's plan and planDelta. */
  from: readonly unknown[];
  /** The encoded rows, plan and planDelta, and the strings they reference. */
  fields: Record<string, unknown>;
}

/**
 * Encodes answers in format 2. A whole answer hands the same rows and plan while nothing changed (status-view.ts
 * selectRows, src/daemon/server/daemon-status.ts), so its encoding, and the texts kept of it (field-texts.ts), stand:
 * kept by the answer's list of rows, while its plan and planDelta are the same objects.
 */
export class FormatTwo {
  private readonly kept = new WeakMap<object, Encoded>();

  encode(answer: Answer): Record<string, unknown> {
    const rows = Array.isArray(answer.resources) ? answer.resources : undefined;
    const from = REFERENCING_FIELDS.filter((name) => name !== 'resources').map((name) => answer[name]);
    const held = rows ? this.kept.get(rows) : undefined;
    let fields = held && held.from.every((value, i) => value === from[i]) ? held.fields : undefined;
    if (!fields) {
      const referencing = Object.fromEntries(
        REFERENCING_FIELDS.filter((name) => answer[name] !== undefined).map((name) => [name, answer[name]]),
      );
      fields = encodeStatus(referencing);
      if (rows) this.kept.set(rows, { from, fields });
    }
    const out: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(answer))
      out[name] = name === 'format_version' ? '2' : name in fields ? fields[name] : value;
    out.strings = fields.strings;
    return out;
  }
}
