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

/** An object JSON.stringify encodes by its own keys alone (no toJSON, no class), whose JSON may be kept. */
function plainObject(value: unknown): value is object {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return (proto === Object.prototype || proto === null) && !('toJSON' in value);
}

/** Where an item's JSON is: bytes `start` to `end` of `buffer`, whose items are separated by one comma each. */
interface Located {
  buffer: Buffer;
  start: number;
  end: number;
}

/**
 * Encodes plans as JSON.stringify does, byte for byte. The items of a plan's arrays (its changes, its diagnostics) are
 * encoded once each and kept by identity: a targeted reconcile's plan keeps the last one's items that it did not decide
 * again (src/daemon/cycle/targeted.ts), so only its new ones are encoded, and the runs of items encoded side by side
 * are copied whole. An item is never changed once in a plan that was reconciled (plans and jobs copy).
 */
export class PlanTexts {
  private readonly items = new WeakMap<object, Located>();

  /** The plan's hash and text, undefined for none (null or undefined). */
  text(plan: unknown): PlanText | undefined {
    if (plan === null || plan === undefined) return undefined;
    const pieces = plainObject(plan) ? this.objectPieces(plan) : [Buffer.from(JSON.stringify(plan))];
    const hashing = createHash('sha256');
    for (const piece of pieces) hashing.update(piece);
    const hash = hashing.digest('hex').slice(0, 32);
    return { hash, text: Buffer.concat([Buffer.from(`${hash}\n`), ...pieces]) };
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

  /** `[item,...]`: each plain object from where its JSON is kept (items kept side by side: one piece), the rest encoded. */
  private arrayPieces(array: readonly unknown[]): Buffer[] {
    const located = this.locate(array);
    const pieces: Buffer[] = [OPEN];
    let run: Located | undefined;
    const flush = (): void => {
      if (run) pieces.push(run.buffer.subarray(run.start, run.end));
      run = undefined;
    };
    array.forEach((item, index) => {
      const at = located[index];
      // The next item kept after a comma in the same buffer: the run goes on over both.
      if (at && run && at.buffer === run.buffer && at.start === run.end + 1) return void (run.end = at.end);
      flush();
      if (index > 0) pieces.push(COMMA);
      if (at) run = { ...at };
      else pieces.push(Buffer.from((JSON.stringify(item) as string | undefined) ?? 'null'));
    });
    flush();
    pieces.push(CLOSE);
    return pieces;
  }

  /**
   * Where each item's JSON is kept (undefined: not a plain object, encoded where it is written). The plain objects not
   * kept yet are encoded side by side in one buffer first, and kept.
   */
  private locate(array: readonly unknown[]): Array<Located | undefined> {
    // Only plain objects are kept: any other item is looked up once and found nowhere.
    const kept = (item: unknown): Located | undefined =>
      typeof item === 'object' && item !== null ? this.items.get(item) : undefined;
    const located = array.map(kept);
    const fresh = [...new Set(array.filter((item, i) => located[i] === undefined && plainObject(item)))] as object[];
    if (fresh.length === 0) return located;
    const texts = fresh.map((item) => JSON.stringify(item));
    const buffer = Buffer.from(texts.join(','));
    let start = 0;
    fresh.forEach((item, i) => {
      const end = start + Buffer.byteLength(texts[i]!);
      this.items.set(item, { buffer, start, end });
      start = end + 1;
    });
    return array.map((item, i) => located[i] ?? kept(item));
  }
}
