// Every relative link in README.md and docs/*.md resolves: to a file that exists, and, for a link into a markdown
// file with #anchor, to a heading of that file (GitHub's slugs). Reads files only.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');

/** README.md and every markdown file under docs/. */
function pages(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => join(ROOT, 'docs', f));
  return [join(ROOT, 'README.md'), ...docs];
}

/** The text without fenced code blocks and inline code spans, where brackets are not links. */
function prose(text: string): string {
  return text.replace(/^(`{3,}|~{3,})[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`+[^`\n]*`+/g, '');
}

/** Relative link targets: [text](target) and [label]: target, without external URLs and mailto. */
function relativeLinks(text: string): string[] {
  const body = prose(text);
  const inline = [...body.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!);
  const reference = [...body.matchAll(/^\s*\[[^\]]+\]:\s+(\S+)/gm)].map((m) => m[1]!);
  return [...inline, ...reference].filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

/** GitHub's anchor of a heading: lowercase, punctuation dropped, spaces to dashes; repeats get -1, -2. */
function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const match of prose(text).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const slug = match[1]!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .trim()
      .replace(/\s/g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** Pairs of page names where one is the other with an s, or the other's words with words added before or after. */
function confusable(names: readonly string[]): string[] {
  const pairs: string[] = [];
  for (const a of names) {
    for (const b of names) {
      if (a === b) continue;
      const words = a.split('-');
      const inside = b.split('-').some((_, i, all) => all.slice(i, i + words.length).join('-') === a);
      if (b === `${a}s` || (b.length > a.length && inside)) pairs.push(`${a} ~ ${b}`);
    }
  }
  return pairs;
}

describe('documentation links', () => {
  it('README.md is an entry page of at most about 300 lines', () => {
    expect(readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n').length).toBeLessThanOrEqual(300);
  });

  it('every relative link in README.md and docs/*.md resolves to a file, and an #anchor to a heading', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const page of pages()) {
      const text = readFileSync(page, 'utf8');
      for (const link of relativeLinks(text)) {
        checked += 1;
        const [path, anchor] = link.split('#') as [string, string | undefined];
        const target = path === '' ? page : resolve(dirname(page), decodeURIComponent(path));
        const where = `${relative(ROOT, page)}: ${link}`;
        if (!existsSync(target)) {
          broken.push(`${where} (no such file)`);
          continue;
        }
        if (anchor && target.endsWith('.md') && !anchorsOf(readFileSync(target, 'utf8')).has(anchor.toLowerCase())) {
          broken.push(`${where} (no heading with that anchor)`);
        }
      }
    }
    expect(checked).toBeGreaterThan(20);
    expect(broken).toEqual([]);
  });

  it('no two pages of docs/ have names a reader confuses: one the plural of the other, or one inside the other', () => {
    const names = readdirSync(join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => f.slice(0, -3));
    expect(
      confusable(['decision', 'decisions', 'real-service', 'against-the-real-service', 'commands', 'code-checks']),
    ).toEqual(['decision ~ decisions', 'real-service ~ against-the-real-service']);
    expect(confusable(names)).toEqual([]);
  });

  it('the checker itself finds a broken link and a broken anchor', () => {
    expect(
      relativeLinks(
        'see [a](docs/settings.md#x), `[not](a link)`, [b](https://example.com) and\n```\n[c](docs/emulator.md)\n```\n',
      ),
    ).toEqual(['docs/settings.md#x']);
    expect(
      anchorsOf('# Running the daemon and replicas\n## What a conflict means\n## In production\n## In production\n'),
    ).toEqual(
      new Set(['running-the-daemon-and-replicas', 'what-a-conflict-means', 'in-production', 'in-production-1']),
    );
  });
});
