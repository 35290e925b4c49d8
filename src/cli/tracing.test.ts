// The lazy loader of the OpenTelemetry SDK: imported only when an OTLP endpoint is set, so nothing changes for those who do not trace.
import { describe, expect, it, vi } from 'vitest';
import { flushWithin, startTracing } from './tracing.js';

function loader() {
  const shutdown = vi.fn(() => Promise.resolve());
  const startSdk = vi.fn(() => shutdown);
  const load = vi.fn(() => Promise.resolve({ startSdk }));
  return { load, startSdk, shutdown };
}

describe('startTracing', () => {
  it('without OTEL_EXPORTER_OTLP_ENDPOINT: the SDK is not imported, tracing is off', async () => {
    const sdk = loader();
    const tracing = await startTracing(
      { OTEL_SERVICE_NAME: 'converge', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' },
      sdk.load,
    );
    expect(tracing.enabled).toBe(false);
    await flushWithin(tracing, 10);
    expect(sdk.load).not.toHaveBeenCalled();
  });

  it('an empty endpoint, or OTEL_SDK_DISABLED=true: not imported either', async () => {
    const sdk = loader();
    expect((await startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: '' }, sdk.load)).enabled).toBe(false);
    expect(
      (
        await startTracing(
          { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SDK_DISABLED: 'true' },
          sdk.load,
        )
      ).enabled,
    ).toBe(false);
    expect(sdk.load).not.toHaveBeenCalled();
  });

  it('with OTEL_EXPORTER_OTLP_ENDPOINT (or the traces endpoint): imported once and started with the environment; the flush shuts it down', async () => {
    for (const env of [
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' },
      { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' },
    ]) {
      const sdk = loader();
      const tracing = await startTracing(env, sdk.load);
      expect(tracing.enabled).toBe(true);
      expect(sdk.load).toHaveBeenCalledTimes(1);
      expect(sdk.startSdk).toHaveBeenCalledWith(env);
      await flushWithin(tracing, 1_000);
      expect(sdk.shutdown).toHaveBeenCalledTimes(1);
    }
  });

  it('a shutdown that never ends does not hold up the flush past its bound', async () => {
    const tracing = { enabled: true, shutdown: () => new Promise<void>(() => undefined) };
    await expect(flushWithin(tracing, 20)).resolves.toBeUndefined();
  });
});
