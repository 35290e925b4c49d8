// FieldTexts: the body it joins is the JSON text JSON.stringify gives; its ETag moves exactly when a field's text does.
import { describe, expect, it } from 'vitest';
import { FieldTexts } from './field-texts.js';

const doc = (): Record<string, unknown> => ({
  format_version: '1',
  daemon: { dir: 'm', stopping: false, nested: { list: [1, 'two', null, { deep: [] }] } },
  empty: {},
  none: [],
  skipped: undefined,
  resources: [{ key: 'Deployment/a', quote: 'say "hi"\n\\' }, { key: 'Deployment/b' }],
  count: 3,
  nothing: null,
});

describe('FieldTexts', () => {
  it('joins the body JSON.stringify gives, pretty and compact, fields it leaves out left out', () => {
    const texts = new FieldTexts();
    const value = doc();
    expect(texts.document(value, true).body()).toBe(JSON.stringify(value, null, 2) + '\n');
    expect(texts.document(value, false).body()).toBe(JSON.stringify(value) + '\n');
    expect(texts.document({}, true).body()).toBe('{}\n');
    expect(texts.document({}, false).body()).toBe('{}\n');
  });

  it('tags a document by its fields: equal content, equal tag; a changed field, or the other form, another tag', () => {
    const texts = new FieldTexts();
    const one = doc();
    const tag = texts.document(one, true).etag;
    expect(texts.document(doc(), true).etag).toBe(tag);
    expect(texts.document(one, false).etag).not.toBe(tag);
    expect(texts.document({ ...doc(), count: 4 }, true).etag).not.toBe(tag);
    expect(texts.document({ ...doc(), resources: [{ key: 'Deployment/a' }] }, true).etag).not.toBe(tag);
    // The same fields under other names are another document.
    const { count, ...rest } = doc();
    expect(texts.document({ ...rest, total: count }, true).etag).not.toBe(tag);
  });

  it('keeps the text of an object it has seen, and serializes a new one', () => {
    const texts = new FieldTexts();
    let serialized = 0;
    const rows = [{ key: 'Deployment/a', toJSON: () => ((serialized += 1), { key: 'Deployment/a' }) }];
    texts.document({ resources: rows }, true).body();
    texts.document({ resources: rows }, false).body();
    expect(serialized).toBe(2); // its compact text once, its pretty text once
    texts.document({ resources: rows }, true).body();
    expect(texts.compareText(rows)).toBe(texts.compareText([{ key: 'Deployment/a' }]));
    expect(texts.compareText(rows)).not.toBe(texts.compareText([{ key: 'Deployment/b' }]));
    expect(serialized).toBe(2);
    texts.document({ resources: [...rows] }, true);
    expect(serialized).toBe(3);
  });

  it('keeps only the hash of a large value: tagged again without serializing, serialized again for a body', () => {
    const texts = new FieldTexts();
    let serialized = 0;
    const big = 'x'.repeat(70 * 1024);
    const plan = { toJSON: () => ((serialized += 1), { big }) };
    const first = texts.document({ plan }, false);
    expect(serialized).toBe(1);
    expect(texts.document({ plan }, false).etag).toBe(first.etag);
    expect(serialized).toBe(1); // an unchanged poll (a 304) serializes nothing
    expect(first.body()).toBe(JSON.stringify({ plan: { big } }) + '\n');
    expect(serialized).toBe(2); // the text was not kept: a body serializes it again
    expect(texts.document({ plan: { big } }, false).etag).toBe(first.etag);
  });
});
