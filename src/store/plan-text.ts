// The reconcile record's plan as kept: the bytes of JSON.stringify(plan), each item of its arrays encoded once by identity.
import { createHash } from 'node:crypto';

/** The plan as kept: its hash and the text `hash\nJSON` (src/store/reconcile-record.ts). */
export interface PlanText {
  hash: string;
  text: Buffer;
}

const COMMA = Buffer.from(',');
const OPEN = Buffer.from('[');
const CLOSE = Buffer.from(']');
const NULL = Buffer.from('null');

/** An object JSON.stringify encodes by its own keys alone (no toJSON, no class), whose JSON may be kept. */
function plainObject(value: unknown): value is object {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return (proto === Object.prototype || proto === null) && !('toJSON' in value);
}

/**
 * Encodes plans as JSON.stringify does, byte for byte. The items of a plan's arrays (its changes, its diagnostics) are
 * encoded once each and kept by identity: a targeted reconcile's plan keeps the last one's items that it did not decide
 * again (src/daemon/cycle/targeted.ts), so only its new ones are encoded. An item is never changed once in a plan that
 * was reconciled (plans and jobs copy).
 */
export class PlanTexts {
  private readonly items = new WeakMap<object, Buffer>();

  /** The plan's hash and text, undefined for none (null or undefined). */
  text(plan: unknown): PlanText | undefined {
    if (plan === null || plan === undefined) return undefined;
    const json = plainObject(plan) ? Buffer.concat(this.objectPieces(plan)) : Buffer.from(JSON.stringify(plan));
    const hash = createHash('sha256').update(json).digest('hex').slice(0, 32);
    return { hash, text: Buffer.concat([Buffer.from(`${hash}\n`), json]) };
  }

  /** `{"key":value,...}` of a plain object, in its keys' order, keys whose value JSON omits left out. */
  private objectPieces(object: object): Buffer[] {
    const pieces: Buffer[] = [];
    for (const [key, value] of Object.entries(object)) {
      const json =
        Array.isArray(value) && !('toJSON' in value)
          ? this.arrayPieces(value)
          : (JSON.stringify(value) as string | undefined);
      if (json === undefined) continue;
      pieces.push(Buffer.from(`${pieces.length === 0 ? '{' : ','}${JSON.stringify(key)}:`));
      if (typeof json === 'string') pieces.push(Buffer.from(json));
      else pieces.push(...json);
    }
    if (pieces.length === 0) pieces.push(Buffer.from('{'));
    pieces.push(Buffer.from('}'));
    return pieces;
  }

  /** `[item,...]`, each plain object's JSON taken from (or kept in) the items' cache. */
  private arrayPieces(array: readonly unknown[]): Buffer[] {
    const pieces: Buffer[] = [OPEN];
    array.forEach((item, index) => {
      if (index > 0) pieces.push(COMMA);
      pieces.push(this.item(item));
    });
    pieces.push(CLOSE);
    return pieces;
  }

  private item(item: unknown): Buffer {
    if (!plainObject(item)) {
      const json = JSON.stringify(item) as string | undefined;
      return json === undefined ? NULL : Buffer.from(json);
    }
    let json = this.items.get(item);
    if (!json) {
      json = Buffer.from(JSON.stringify(item));
      this.items.set(item, json);
    }
    return json;
  }
}
