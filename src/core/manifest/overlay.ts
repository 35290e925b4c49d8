// Overlays (pure): JSON merge patch (RFC 7386) of a document's data, keeping for each path the position of the file that set it.
import type { SourceLocation } from '../model.js';

/** Where a data path of a document is written: its value, or the key naming it. */
export type Locate = (path: ReadonlyArray<PropertyKey>, at: 'key' | 'value') => SourceLocation;

/** The annotation that makes an overlay document a new resource instead of a patch of one in the base. */
export const OVERLAY_ANNOTATION = 'converge/overlay';

/** One layer of a document: its data and where each of its paths is written. */
export interface Layer {
  data: unknown;
  locate: Locate;
  /** By location (file:line:column) of a value a variables file set: which variables, set where. */
  sources?: ReadonlyMap<string, string>;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** RFC 7386: a patch that is not a mapping replaces the target; in a mapping, null removes a key and mappings merge. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const out: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

/**
 * Whether a layer's data writes `path`: the path is in it, or a value the layer sets (a list, a scalar) holds it.
 * A key set to null (removed) writes nothing.
 */
function writes(data: unknown, path: ReadonlyArray<PropertyKey>): boolean {
  let current = data;
  for (const segment of path) {
    if (Array.isArray(current)) {
      if (typeof segment !== 'number') return true;
      current = current[segment];
    } else if (isObject(current)) {
      if (!Object.prototype.hasOwnProperty.call(current, String(segment))) return false;
      current = current[String(segment)];
    } else return current !== null && current !== undefined;
    if (current === null || current === undefined) return false;
  }
  return true;
}

/**
 * The base merged with its patches in order, and a locator that answers for each path from the layer that set it: the
 * deepest part of the path any layer writes, the newest layer first, so a value set by an overlay points at the overlay.
 */
export function mergeLayers(base: Layer, patches: readonly Layer[]): Layer {
  const data = patches.reduce((merged, patch) => mergePatch(merged, patch.data), base.data);
  const layers = [...patches].reverse();
  const locate: Locate = (path, at) => {
    for (let length = path.length; length > 0; length--) {
      const prefix = path.slice(0, length);
      const layer = layers.find((candidate) => writes(candidate.data, prefix));
      if (layer) return layer.locate(path, at);
      if (writes(base.data, prefix)) return base.locate(path, at);
    }
    return base.locate(path, at);
  };
  return { data, locate };
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((item, i) => sameValue(item, b[i]));
  if (!isObject(a) || !isObject(b)) return false;
  const keys = Object.keys(a);
  return (
    keys.length === Object.keys(b).length &&
    keys.every((key) => Object.prototype.hasOwnProperty.call(b, key) && sameValue(a[key], b[key]))
  );
}

/**
 * The merge patch that turns `base` into `target` (the inverse of mergePatch): changed and new keys with their target
 * value (mappings recursively), a key `target` lacks as null; undefined when the two are equal.
 */
export function diffPatch(base: unknown, target: unknown): unknown {
  if (sameValue(base, target)) return undefined;
  if (!isObject(base) || !isObject(target)) return target;
  const patch: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(target)) {
    const inner = Object.prototype.hasOwnProperty.call(base, key) ? diffPatch(base[key], value) : value;
    if (inner !== undefined) patch[key] = inner;
  }
  for (const key of Object.keys(base)) if (!Object.prototype.hasOwnProperty.call(target, key)) patch[key] = null;
  return patch;
}
