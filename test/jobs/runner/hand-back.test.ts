// Handing active jobs back at a stop: the requests in flight are dropped first, so no job reaches another worker while
// its write may still be on its way from here; the failure the drop causes spends no attempt.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { ServiceClient } from '../../../src/service/client.js';
import { startEmulator } from '../../../src/emulator/server.js';
import { QUEUE_NAME } from '../../../src/jobs/queue/jobs.js';
import { openJobs } from '../../../src/jobs/open-jobs.js';
import { dropPrefix, REDIS_URL, testPrefix } from '../../helpers/redis.js';
import { data } from '../../helpers/job-fixtures.js';

/** The emulator behind a proxy that forwards reads and never answers a write; it tells, per write, how many were still open when it came. */
async function writesNeverAnswered(emulatorUrl: string) {
  const writes: Array<{ at: number; openBefore: number; closedAt?: number }> = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== 'GET') {
      const write: { at: number; openBefore: number; closedAt?: number } = {
        at: Date.now(),
        openBefore: writes.filter((w) => w.closedAt === undefined).length,
      };
      writes.push(write);
      req.resume();
      req.socket.once('close', () => (write.closedAt = Date.now()));
      return;
    }
    void (async () => {
      const answer = await fetch(`${emulatorUrl}${req.url}`);
      res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' });
      res.end(Buffer.from(await answer.arrayBuffer()));
    })().catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    writes,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

describe('handing active jobs back', () => {
  const prefix = testPrefix('handback');
  afterAll(async () => {
    await dropPrefix(prefix);
  });

  it('drops the request in flight while the job is still active, then moves it to waiting with no attempt spent; the next worker writes only after the first write was dropped', async () => {
    const emulator = await startEmulator({ buildMs: 0, lenientCreate: true });
    const proxy = await writesNeverAnswered(emulator.url);
    const settings = {
      redisUrl: REDIS_URL,
      redisPrefix: prefix,
      concurrency: 1,
      attempts: 3,
      backoff: 10,
      globalRate: 0,
    };
    const jobs = await openJobs(settings);
    const queue = new Queue(QUEUE_NAME, { connection: { url: REDIS_URL }, prefix });
    const first = new ServiceClient({ baseUrl: proxy.url, headersTimeoutMs: 120_000, bodyTimeoutMs: 120_000 });
    const second = new ServiceClient({ baseUrl: proxy.url, headersTimeoutMs: 120_000, bodyTimeoutMs: 120_000 });
    const runner = await jobs.startRunner({ client: first, env: {}, name: 'first' });
    try {
      const [enqueued] = await jobs.enqueuer.enqueue([data('handed', 3)]);
      const jobId = enqueued!.jobId;
      await until('the write to be sent', () => proxy.writes.length === 1);
      let stateAtDrop = '';
      const handed = await runner.handBack(async () => {
        stateAtDrop = await queue.getJobState(jobId);
        await first.destroy();
        // The job's processor has its network error by now: it must wait for the hand-back, not fail the attempt.
        await until('the dropped write to be seen closed', () => proxy.writes[0]!.closedAt !== undefined);
        await sleep(100);
      });
      expect(stateAtDrop).toBe('active');
      expect(handed).toEqual([jobId]);
      expect(await queue.getJobState(jobId)).toBe('waiting');
      // The failure the drop caused (a network error on the write) is not an attempt, and did not fail the job.
      await sleep(200);
      expect(await queue.getJobState(jobId)).toBe('waiting');
      expect((await queue.getJob(jobId))!.attemptsMade).toBe(0);

      const next = await jobs.startRunner({ client: second, env: {}, name: 'second' });
      try {
        await until('the next worker to write', () => proxy.writes.length === 2);
        expect(proxy.writes[1]!.openBefore).toBe(0);
        expect(proxy.writes[1]!.at).toBeGreaterThanOrEqual(proxy.writes[0]!.closedAt!);
      } finally {
        await second.destroy();
        await next.close(true);
      }
    } finally {
      await runner.close(true);
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
      await jobs.close();
      await proxy.close();
      await emulator.close();
    }
  });
});
