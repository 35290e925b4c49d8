// The JSON text of /status' values, kept by the object: an unchanged poll serializes no row, hashes no large field.
import { createHash } from 'node:crypto';

/** A value's compact JSON and its hash; its pretty form (two spaces, nested one level) made when first asked. */
interface Text {
  compact: string;
  hash: string;
  pretty?: string;
}

/** A body to send and its strong ETag; the body is joined only when it is sent (a 304 joins nothing). */
export interface TaggedBody {
  etag: string;
  body(): string;
}

function hashOf(text: string): string {
  return createHash('sha256').update(text).digest('base64url').slice(0, 22);
}

/**
 * The texts of the values of the /status document, by the value's identity. The document's builder hands the same
 * object while its content is the same (the rows while the projection's version stands,
 * src/daemon/status/projection.ts;
 * the plan while its hash stands, src/store/reconcile-record.ts) and never changes an object it handed out, so a kept
 * text is the text of that object. A new object (a change, or a value built at each request) is serialized again.
 */
export class FieldTexts {
  private readonly texts = new WeakMap<object, Text>();

  /** The value's compact JSON text and its hash; undefined for what JSON leaves out (undefined, a function). */
  of(value: unknown): Text | undefined {
    const keyed = typeof value === 'object' && value !== null;
    const kept = keyed ? this.texts.get(value) : undefined;
    if (kept) return kept;
    const compact = JSON.stringify(value) as string | undefined;
    if (compact === undefined) return undefined;
    const text: Text = { compact, hash: hashOf(compact) };
    if (keyed) this.texts.set(value, text);
    return text;
  }

  /** The value as `JSON.stringify(document, null, 2)` writes it under a top-level key (indented once more). */
  private prettyOf(value: unknown): string | undefined {
    const text = this.of(value);
    if (text === undefined) return undefined;
    text.pretty ??= JSON.stringify(value, null, 2).replaceAll('\n', '\n  ');
    return text.pretty;
  }

  /** Each field's text as one compare key (the change sequence's, src/daemon/server/status-view.ts). */
  compareText(value: unknown): string {
    return this.of(value)?.compact ?? 'undefined';
  }

  /**
   * A document (a JSON object) as the body JSON.stringify gives (`pretty`: with two spaces, as `JSON.stringify(doc,
   * null, 2)`, and a newline), with an ETag made of its fields' hashes, so that an unchanged document is tagged without
   * serializing or hashing any field kept.
   */
  document(document: Readonly<Record<string, unknown>>, pretty: boolean): TaggedBody {
    const fields: Array<[string, Text]> = [];
    for (const [name, value] of Object.entries(document)) {
      const text = this.of(value);
      if (text !== undefined) fields.push([name, text]);
    }
    const hashes = fields.map(([name, text]) => `${JSON.stringify(name)}:${text.hash}`).join(',');
    const etag = `"${hashOf(`${pretty ? 'p' : 'c'}${hashes}`)}"`;
    const body = (): string => {
      if (!pretty) return `{${fields.map(([name, text]) => `${JSON.stringify(name)}:${text.compact}`).join(',')}}\n`;
      if (fields.length === 0) return '{}\n';
      const lines = fields.map(([name]) => `  ${JSON.stringify(name)}: ${this.prettyOf(document[name])!}`);
      return `{\n${lines.join(',\n')}\n}\n`;
    };
    return { etag, body };
  }
}
