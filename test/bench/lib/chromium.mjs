// Debian's Chromium for the benchmarks, driven by playwright-core (no download): headless at 1280x900, a throwaway profile.
import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { removeDir } from './common.mjs';

export const CHROMIUM = process.env.CONVERGE_CHROMIUM ?? '/usr/bin/chromium';

/** Whether the browser is there (a benchmark without it reports its page figures as skipped). */
export function chromiumThere() {
  return existsSync(CHROMIUM);
}

/** A persistent context of a fresh profile; `close` ends the browser and removes the profile. */
export async function openChromium() {
  const profile = await mkdtemp(join(tmpdir(), 'converge-bench-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    context,
    async close() {
      await context.close().catch(() => undefined);
      await removeDir(profile);
    },
  };
}

/** Polls `expression` in the page (the page's CSP forbids the eval that waitForFunction needs) until it is truthy. */
export async function pageUntil(page, expression, what, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await page.evaluate(expression);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`the page: ${what} not within ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
