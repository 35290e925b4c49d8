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

/** The flag by which a command reads a signed plan with no key set, its signature unchecked (docs/saved-plans.md). */
export const SKIP_SIGNATURE_FLAG = 'skip-signature-check';

/**
 * Why a plan's signature does not hold under `key`, or undefined: it holds, or neither the plan nor the command has a
 * key to check. With a key, an unsigned plan and one signed under another key (or edited since) are refused alike.
 * Without one, a signed plan is refused too (its signature cannot be checked), unless `skipCheck` (the command's
 * --skip-signature-check) says so explicitly; a key that is set is checked whatever that flag says. Pure.
 */
export function signatureProblem(
  plan: { signature?: string | undefined; checksum: string },
  key: string | undefined,
  skipCheck = false,
): string | undefined {
  const { signature, checksum: _checksum, ...content } = plan;
  if (key === undefined) {
    if (signature === undefined || skipCheck) return undefined;
    return `it is signed, and ${PLAN_KEY_ENV} is not set: its signature cannot be checked; set ${PLAN_KEY_ENV} to the key it was signed with, or give --${SKIP_SIGNATURE_FLAG} to read it unchecked`;
  }
  if (signature === undefined)
    return `it is not signed, and ${PLAN_KEY_ENV} is set: apply --plan applies only plans signed with that key; make it with "converge plan DIR --out FILE" where ${PLAN_KEY_ENV} holds the same key`;
  const expected = Buffer.from(planSignature(content, key));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
    return `its signature does not match under ${PLAN_KEY_ENV}: it was edited after plan --out signed it, or signed with another key; make a new one with "converge plan DIR --out FILE"`;
  }
  return undefined;
}

/**
 * Why the key as the environment gives it (`raw`: unset, or its text) cannot be used, or undefined. Set but empty or
 * only whitespace (a CI secret that is missing expands to "") is an error, never "no key": it fails closed. Pure; the
 * message names the variable, never the value.
 */
export function planKeyProblem(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  if (raw.trim() === '') {
    return `${PLAN_KEY_ENV} is set but empty: no plan is signed or checked with an empty key; set it to the key plans are signed with (at least ${MIN_PLAN_KEY_LENGTH} characters; a CI secret that is missing expands to ""), or unset it`;
  }
  if (raw.length < MIN_PLAN_KEY_LENGTH) {
    return `${PLAN_KEY_ENV} is shorter than ${MIN_PLAN_KEY_LENGTH} characters: give it a random key (e.g. the output of "openssl rand -hex 32"), the same in the plan and the apply jobs`;
  }
  return undefined;
}
