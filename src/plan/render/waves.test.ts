// The plan of a change in several waves, in every format: text and markdown group the changes by wave, JSON has `wave` and `waves`; one wave renders as before.
import { describe, expect, it } from 'vitest';
import { resourceKey, type DesiredResource, type Plan, type PlanChange } from '../../core/model.js';
import { markWaves } from '../../core/waves.js';
import { summarize } from '../summary.js';
import { renderJson, renderMarkdown, renderText } from './index.js';

function change(name: string, action: PlanChange['action'] = 'update'): PlanChange {
  const fields =
    action === 'delete'
      ? []
      : [{ path: 'source_revision_config.image_uri', before: 'acme/a:1', after: 'acme/a:2', sensitive: false }];
  return {
    kind: 'Deployment',
    name,
    action,
    new_revision: action !== 'delete',
    fields,
    reason: null,
    ...(action === 'delete' ? { id: `id-${name}` } : {}),
  };
}

function planOf(waves: Record<string, number>, extra: PlanChange[] = []): Plan {
  const changes = [...Object.keys(waves).map((name) => change(name)), ...extra];
  const resources = new Map(
    Object.entries(waves).map(([name, wave]) => [
      resourceKey('Deployment', name),
      { kind: 'Deployment', name, wave } as DesiredResource,
    ]),
  );
  const plan: Plan = { format_version: '1', summary: summarize(changes), changes, diagnostics: [] };
  const marked = markWaves(changes, resources);
  if (marked) plan.waves = marked;
  return plan;
}

describe('a plan in several waves', () => {
  const plan = planOf({ 'eu-1': 1, canary: 0, 'eu-2': 1, 'us-1': 2 }, [change('old', 'delete')]);

  it('text: each wave under its heading, in wave order, the deletes after the last', () => {
    const text = renderText(plan, { color: false });
    const headings = text.split('\n').filter((l) => /^(Wave|After)/.test(l));
    expect(headings).toEqual([
      'Wave 0: 1 to update:',
      'Wave 1: 2 to update, after wave 0 is healthy:',
      'Wave 2: 1 to update, after wave 1 is healthy:',
      'After the last wave: 1 to delete:',
    ]);
    const order = [...text.matchAll(/^ {2}[~+-] \w+ Deployment\/(\S+)/gm)].map((m) => m[1]);
    expect(order).toEqual(['canary', 'eu-1', 'eu-2', 'us-1', 'old']);
  });

  it('markdown: one line per wave and a wave column', () => {
    const md = renderMarkdown(plan);
    expect(md).toContain(
      '#### Waves\n\n- wave 0: 1 to update\n- wave 1: 2 to update, after wave 0 is healthy\n- wave 2: 1 to update, after wave 1 is healthy\n- after the last wave: 1 to delete',
    );
    expect(md).toContain('| wave | | resource | action | new revision | note |');
    expect(md).toContain('| 1 | `~` | `Deployment/eu-2` | update | yes |  |');
    expect(md).toContain('| after | `-` | `Deployment/old` | delete | no |  |');
  });

  it('JSON: `wave` on each change of a declared resource and a `waves` summary', () => {
    const doc = JSON.parse(renderJson(plan)) as { waves: unknown; changes: Array<{ name: string; wave?: number }> };
    expect(doc.waves).toEqual([
      { wave: 0, create: 0, update: 1, adopt: 0 },
      { wave: 1, create: 0, update: 2, adopt: 0 },
      { wave: 2, create: 0, update: 1, adopt: 0 },
    ]);
    expect(Object.fromEntries(doc.changes.map((c) => [c.name, c.wave ?? null]))).toEqual({
      canary: 0,
      'eu-1': 1,
      'eu-2': 1,
      'us-1': 2,
      old: null,
    });
  });
});

describe('a plan in one wave', () => {
  it('renders byte for byte as a plan without the annotation, in every format', () => {
    const waved = planOf({ a: 3, b: 3 }, [change('old', 'delete')]);
    const plain: Plan = {
      format_version: '1',
      summary: summarize(waved.changes),
      changes: [change('a'), change('b'), change('old', 'delete')],
      diagnostics: [],
    };
    expect(waved.waves).toBeUndefined();
    expect(renderText(waved, { color: false })).toBe(renderText(plain, { color: false }));
    expect(renderMarkdown(waved)).toBe(renderMarkdown(plain));
    expect(renderJson(waved)).toBe(renderJson(plain));
  });
});
