// The applied-state document serves what a plan reads, not a record's job nor its answer (format_version 1 unchanged).
import { describe, expect, it } from 'vitest';
import { appliedStateDocument, parseAppliedStateDocument } from './applied-state-document.js';

const HASH = 'a'.repeat(64);

describe('appliedStateDocument', () => {
  it("leaves out a record's job id and answer, and a document of version 1 parses back as it was", () => {
    const record = {
      secrets: { KEY: HASH },
      appliedAt: '2026-01-01T00:00:00.000Z',
      ownership: { origin: 'created' as const, id: 'd1' },
    };
    const document = appliedStateDocument({
      records: new Map([
        [
          'Deployment/api',
          { ...record, jobId: '42', answer: { outcome: 'created' as const, new_revision: true, deploymentId: 'd1' } },
        ],
      ]),
      holds: new Map(),
    });
    expect(document.records['Deployment/api']).toEqual(record);
    const parsed = parseAppliedStateDocument(JSON.parse(JSON.stringify(document)));
    expect(parsed.ok && parsed.read.records.get('Deployment/api')).toEqual(record);
    // A document that carries a job id is not one this version serves: refused with its one line.
    const withJob = { ...document, records: { 'Deployment/api': { ...record, jobId: '42' } } };
    expect(parseAppliedStateDocument(withJob)).toMatchObject({ ok: false });
  });
});
