// A loopback HTTP proxy before the emulator holding a chosen request, or its answer, until the test lets it go.
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HeldProxy {
  url: string;
  /** Holds the next request `match` accepts (one), until release(); every other request is forwarded at once. */
  holdNext(match: (method: string, path: string) => boolean): void;
  /** The requests held now, as `METHOD PATH`. */
  held(): string[];
  /**
   * Sends every request `match` accepts to the service at once and holds the service's answer: the write lands, its
   * client hears nothing until release() (or never, when it dies first).
   */
  holdAnswersOf(match: (method: string, path: string) => boolean): void;
  /** The requests the service answered whose answers are held now, as `METHOD PATH STATUS`. */
  answersHeld(): string[];
  /**
   * Forwards the held requests whose client is still connected (one whose client went away is never sent), sends the
   * held answers whose client is still connected, and holds no more.
   */
  release(): void;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * Sends the request upstream and its answer back; `hold`, when given, is called with the upstream answer and resolves
 * when the answer may go back.
 */
function forward(
  req: IncomingMessage,
  body: Buffer,
  res: ServerResponse,
  upstream: URL,
  hold?: (status: number) => Promise<void>,
): void {
  const headers = { ...req.headers, host: upstream.host, connection: 'close' };
  const target = { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers };
  const out = httpRequest(target, (answer) => {
    const send = (): void => {
      // Its client died while the answer was held (a killed process): the answer is read and dropped.
      if (req.socket.destroyed) {
        answer.resume();
        return;
      }
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    };
    if (hold) void hold(answer.statusCode ?? 502).then(send);
    else send();
  });
  out.on('error', () => req.socket.destroy());
  out.end(body);
}

export async function heldProxy(target: string): Promise<HeldProxy> {
  const upstream = new URL(target);
  let match: ((method: string, path: string) => boolean) | undefined;
  let answerMatch: ((method: string, path: string) => boolean) | undefined;
  const waiting = new Map<string, () => void>();
  const answers: Array<{ line: string; resolve: () => void }> = [];
  let released = false;
  const server = createServer((req, res) => {
    void readBody(req)
      .then(async (body) => {
        const line = `${req.method ?? 'GET'} ${req.url ?? '/'}`;
        if (match?.(req.method ?? 'GET', req.url ?? '/') && !released) {
          match = undefined;
          await new Promise<void>((resolve) => waiting.set(line, resolve));
          // The client died while it waited (a killed process): its request never reaches the service.
          if (req.socket.destroyed) return;
        }
        if (answerMatch?.(req.method ?? 'GET', req.url ?? '/') && !released) {
          const hold = (status: number) =>
            new Promise<void>((resolve) => answers.push({ line: `${line} ${status}`, resolve }));
          forward(req, body, res, upstream, hold);
          return;
        }
        forward(req, body, res, upstream);
      })
      .catch(() => req.socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const release = (): void => {
    released = true;
    match = undefined;
    answerMatch = undefined;
    for (const [line, resolve] of [...waiting]) {
      waiting.delete(line);
      resolve();
    }
    for (const { resolve } of answers.splice(0)) resolve();
  };
  return {
    url: `http://127.0.0.1:${port}`,
    holdNext(next) {
      released = false;
      match = next;
    },
    held: () => [...waiting.keys()],
    holdAnswersOf(next) {
      released = false;
      answerMatch = next;
    },
    answersHeld: () => answers.map((a) => a.line),
    release,
    async close() {
      release();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
