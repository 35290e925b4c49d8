// Fault knobs for tests and demos: latency with jitter, 503s, 429s with Retry-After, dropped connections, lost responses, an outage of DELETE.
import { UsageError } from '../core/errors.js';

export interface FaultKnobs {
  latencyMs: number;
  jitterMs: number;
  /** Share of requests answered 503 before they are handled. */
  failRate: number;
  /** Share answered 429 with Retry-After before they are handled. */
  rateLimitRate: number;
  /** Share whose connection is destroyed before they are handled. */
  resetRate: number;
  /** Share handled (the write lands) whose connection is then destroyed instead of answered. */
  lostResponseRate: number;
  retryAfterSeconds: number;
  /** Every DELETE is answered 503 before it is handled until this time (ms, the emulator's clock); 0: none. */
  deletesFailUntil: number;
  /** The number in [0, 1) that decides one draw at the named site. */
  random: (site: FaultSite) => number;
}

/** Where a fault knob draws a random number; one stream per site keeps each knob's sequence independent of request interleaving. */
export type FaultSite = 'jitter' | 'reset' | 'fail' | 'rateLimit' | 'lost';

export type Fault = 'reset' | 'unavailable' | 'rate-limited';

function checkRate(name: string, value: number): void {
  if (!Number.isFinite(value) || value < 0 || value > 1)
    throw new UsageError(`${name}: ${value} is not a rate between 0 and 1`);
}

function checkNonNegative(name: string, value: number): void {
  if (!Number.isFinite(value) || value < 0) throw new UsageError(`${name}: ${value} must be a number >= 0`);
}

/** Throws UsageError naming the first knob out of range. */
export function checkKnobs(knobs: FaultKnobs): void {
  checkNonNegative('latencyMs', knobs.latencyMs);
  checkNonNegative('jitterMs', knobs.jitterMs);
  checkRate('failRate', knobs.failRate);
  checkRate('rateLimitRate', knobs.rateLimitRate);
  checkRate('resetRate', knobs.resetRate);
  checkRate('lostResponseRate', knobs.lostResponseRate);
  checkNonNegative('retryAfterSeconds', knobs.retryAfterSeconds);
  checkNonNegative('deletesFailUntil', knobs.deletesFailUntil);
}

/** Whether a request is answered 503 by the DELETE outage (`deletesFailUntil`): a DELETE before its end. */
export function deleteOutage(knobs: FaultKnobs, method: string, now: number): boolean {
  return method === 'DELETE' && now < knobs.deletesFailUntil;
}

/** Milliseconds to hold a request: latency plus a uniform share of the jitter (draws only when jitter is set). */
export function delayFor(knobs: FaultKnobs): number {
  if (knobs.jitterMs <= 0) return knobs.latencyMs;
  return knobs.latencyMs + knobs.random('jitter') * knobs.jitterMs;
}

/**
 * The fault injected before a request is handled, if any. Draws one number per knob that is set, in a
 * fixed order (reset, 503, 429), so an injected RNG makes the sequence deterministic (for concurrent
 * requests, only with one stream per site: see EmulatorOptions.randomFor).
 */
export function drawFault(knobs: FaultKnobs): Fault | null {
  if (knobs.resetRate > 0 && knobs.random('reset') < knobs.resetRate) return 'reset';
  if (knobs.failRate > 0 && knobs.random('fail') < knobs.failRate) return 'unavailable';
  if (knobs.rateLimitRate > 0 && knobs.random('rateLimit') < knobs.rateLimitRate) return 'rate-limited';
  return null;
}

/** Whether a handled request loses its response (drawn after handling, only when the knob is set). */
export function drawLostResponse(knobs: FaultKnobs): boolean {
  return knobs.lostResponseRate > 0 && knobs.random('lost') < knobs.lostResponseRate;
}
