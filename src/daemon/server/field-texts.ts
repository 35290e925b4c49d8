// The JSON text of /status' values, kept by the object: an unchanged poll serializes no row, hashes no large field.
import { textHash } from '../../core/hash.js';

/**
 * A value's text is kept up to this length: a larger one (the plan, the rows at thousands of resources: megabytes) keeps
 * its hash only and is serialized again when a body carries it, which an unchanged poll (a 304) and a delta never do.
 */
const KEEP_TEXT_UP_TO = 64 * 1024;

/** A value's hash; its compact JSON kept when short, its pretty form (two spaces, nested one level) made when asked. */
interface Text {
  hash: string;
  compact?: string;
  pretty?: string;
}

/** A body to send and its strong ETag; the body is joined only when it is sent (a 304 joins nothing). */
export interface TaggedBody {
  etag: string;
  body(): string;
}

/**
 * The texts of the values of the /status document, by the value's identity. The document's builder hands the same
 * object while its content is the same (the rows while the projection's version stands,
 * src/daemon/status/projection.ts;
 * the plan while its hash stands, src/store/reconcile-record.ts) and never changes an object it handed out, so a kept
 * text or hash is that of the object. A new object (a change, or a value built at each request) is serialized again.
 */
export class FieldTexts {
  private readonly texts = new WeakMap<object, Text>();

  /** The value's hash, and its compact JSON when short; undefined for what JSON leaves out (undefined, a function). */
  private of(value: unknown): { text: Text; compact: string } | undefined {
    const keyed = typeof value === 'object' && value !== null;
    const kept = keyed ? this.texts.get(value) : undefined;
    if (kept?.compact !== undefined) return { text: kept, compact: kept.compact };
    const compact = JSON.stringify(value) as string | undefined;
    if (compact === undefined) return undefined;
    if (kept) return { text: kept, compact };
    const text: Text = { hash: textHash(compact) };
    if (compact.length <= KEEP_TEXT_UP_TO) text.compact = compact;
    if (keyed) this.texts.set(value, text);
    return { text, compact };
  }

  /** The value's hash (serializing it only when it is not kept); undefined for what JSON leaves out. */
  private hashOf(value: unknown): string | undefined {
    const kept = typeof value === 'object' && value !== null ? this.texts.get(value) : undefined;
    return kept?.hash ?? this.of(value)?.text.hash;
  }

  /** The value as `JSON.stringify(document, null, 2)` writes it under a top-level key (indented once more). */
  private prettyOf(value: unknown): string | undefined {
    const kept = typeof value === 'object' && value !== null ? this.texts.get(value) : undefined;
    if (kept?.pretty !== undefined) return kept.pretty;
    const pretty = JSON.stringify(value, null, 2)?.replaceAll('\n', '\n  ');
    if (kept && pretty !== undefined && pretty.length <= KEEP_TEXT_UP_TO) kept.pretty = pretty;
    return pretty;
  }

  /** Each field's compare key (the change sequence's, src/daemon/server/status-view.ts): its text's hash. */
  compareText(value: unknown): string {
    return this.hashOf(value) ?? 'undefined';
  }

  /**
   * A document (a JSON object) as the body JSON.stringify gives (`pretty`: with two spaces, as `JSON.stringify(doc,
   * null, 2)`, and a newline), with an ETag made of its fields' hashes, so that an unchanged document is tagged without
   * serializing or hashing any field kept.
   */
  document(document: Readonly<Record<string, unknown>>, pretty: boolean): TaggedBody {
    const fields: Array<[string, string]> = [];
    for (const [name, value] of Object.entries(document)) {
      const hash = this.hashOf(value);
      if (hash !== undefined) fields.push([name, hash]);
    }
    const hashes = fields.map(([name, hash]) => `${JSON.stringify(name)}:${hash}`).join(',');
    const etag = `"${textHash(`${pretty ? 'p' : 'c'}${hashes}`)}"`;
    const body = (): string => {
      if (!pretty) {
        const texts = fields.map(([name]) => `${JSON.stringify(name)}:${this.of(document[name])!.compact}`);
        return `{${texts.join(',')}}\n`;
      }
      if (fields.length === 0) return '{}\n';
      const lines = fields.map(([name]) => `  ${JSON.stringify(name)}: ${this.prettyOf(document[name])!}`);
      return `{\n${lines.join(',\n')}\n}\n`;
    };
    return { etag, body };
  }
}
