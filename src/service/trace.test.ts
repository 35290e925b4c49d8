// The trace context a job carries: the W3C traceparent of the reconcile's span, read back as a link; and no request span outside a traced job or reconcile.
import { describe, expect, it } from 'vitest';
import { linkTo, requestSpan } from './trace.js';

describe('linkTo', () => {
  it('reads a W3C traceparent (version 00) as a link to its span', () => {
    expect(linkTo('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01')).toEqual({
      context: {
        traceId: '0af7651916cd43dd8448eb211c80319c',
        spanId: 'b7ad6b7169203331',
        traceFlags: 1,
        isRemote: true,
      },
    });
  });

  it('no link for none, a malformed one, or the all-zero ids the W3C format calls invalid', () => {
    expect(linkTo(undefined)).toBeUndefined();
    expect(linkTo('01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01')).toBeUndefined();
    expect(linkTo('00-0af7651916cd43dd8448eb211c80319c-b7ad6b71692033-01')).toBeUndefined();
    expect(linkTo('00-00000000000000000000000000000000-b7ad6b7169203331-01')).toBeUndefined();
    expect(linkTo('00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01')).toBeUndefined();
  });
});

describe('requestSpan', () => {
  it('none without an active span (tracing off, or a request outside a job and a reconcile)', () => {
    expect(requestSpan('GET', '/v2/deployments', '127.0.0.1:8080')).toBeUndefined();
  });
});
