// Debian's Chromium driven by playwright-core for the status page tests: one launch, a throwaway profile, no download.
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

/** Debian's chromium (`.ci/run` installs it when missing); CONVERGE_CHROMIUM names another build. */
export const CHROMIUM = process.env.CONVERGE_CHROMIUM ?? '/usr/bin/chromium';

/** Whether the browser is there, and how to get it when not. */
export function chromiumMissing(): string | undefined {
  return existsSync(CHROMIUM)
    ? undefined
    : `no Chromium at ${CHROMIUM}: apt-get install -y chromium (.ci/run does it), or set CONVERGE_CHROMIUM`;
}

/** A headless Chromium at 1280x900 in light mode; `close` ends it and removes its profile. */
export async function openChromium(): Promise<{ context: BrowserContext; close: () => Promise<void> }> {
  const profile = await mkdtemp(join(tmpdir(), 'converge-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 900 },
    colorScheme: 'light',
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
    close: async () => {
      await context.close().catch(() => undefined);
      await rm(profile, { recursive: true, force: true });
    },
  };
}
