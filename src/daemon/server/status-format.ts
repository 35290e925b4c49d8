// /status in format 2 (`format=2`, docs/contracts.md §5): an answer encoded by src/core/status-compact.ts, the encoding of its rows and plan kept while they are the same objects.
import { encodeStatus, REFERENCING_FIELDS } from '../../core/status-compact.js';

type Answer = Readonly<Record<string, unknown>>;

interface Encoded {
  /** What the encoding was made of: the answer's rows list, plan and planDelta. */
  from: readonly unknown[];
  /** The encoded rows, plan and planDelta, and the strings they reference. */
  fields: Record<string, unknown>;
}

/**
 * Encodes answers in format 2. A whole answer hands the same rows and plan while nothing changed (status-view.ts
 * selectRows, src/daemon/server/daemon-status.ts), so its encoding, and the texts kept of it (field-texts.ts), stand.
 */
export class FormatTwo {
  private kept: Encoded | undefined;

  encode(answer: Answer): Record<string, unknown> {
    const from = REFERENCING_FIELDS.map((name) => answer[name]);
    let fields = this.kept && this.kept.from.every((value, i) => value === from[i]) ? this.kept.fields : undefined;
    if (!fields) {
      const referencing = Object.fromEntries(REFERENCING_FIELDS.filter((name) => answer[name] !== undefined).map((name) => [name, answer[name]]));
      fields = encodeStatus(referencing);
      // Only a whole answer's encoding is worth keeping: a delta's is small and different each time.
      if (Array.isArray(answer.resources) && answer.resources.length > 100) this.kept = { from, fields };
    }
    const out: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(answer)) out[name] = name === 'format_version' ? '2' : name in fields ? fields[name] : value;
    out.strings = fields.strings;
    return out;
  }
}
