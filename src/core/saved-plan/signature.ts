// A saved plan's signature: HMAC-SHA256 under a key only the plan and apply jobs hold, over the canonical JSON of the plan (docs/saved-plans.md, "Signed plans").
import { createHmac, timingSafeEqual } from 'node:crypto';
import { canonicalJson } from '../hash.js';

/** The environment variable that holds the key; never a setting in a file, never in a log, an error or the plan. */
export const PLAN_KEY_ENV = 'CONVERGE_PLAN_KEY';

/** A key shorter than this is refused: a guessable key signs nothing. */
export const MIN_PLAN_KEY_LENGTH = 32;

/** `hmac-sha256:HEX` over the canonical JSON (keys sorted at every depth) of the plan without its signature and checksum. */
export function planSignature(content: object, key: string): string {
  return `hmac-sha256:${createHmac('sha256', key).update(canonicalJson(content)).digest('hex')}`;
}

/**
 * Why a plan's signature does not hold under `key`, or undefined: it holds, or no key is set (nothing to check). With a
 * key, an unsigned plan and one signed under another key (or edited since) are refused alike. Pure.
 */
export function signatureProblem(plan: { signature?: string | undefined; checksum: string }, key: string | undefined): string | undefined {
  if (key === undefined) return undefined;
  const { signature, checksum: _checksum, ...content } = plan;
  if (signature === undefined) return `it is not signed, and ${PLAN_KEY_ENV} is set: apply --plan applies only plans signed with that key; make it with "converge plan DIR --out FILE" where ${PLAN_KEY_ENV} holds the same key`;
  const expected = Buffer.from(planSignature(content, key));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
    return `its signature does not match under ${PLAN_KEY_ENV}: it was edited after plan --out signed it, or signed with another key; make a new one with "converge plan DIR --out FILE"`;
  }
  return undefined;
}
