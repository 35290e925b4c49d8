// A loopback TCP proxy (node:net) in front of Redis that a test can pause: while paused, bytes in both directions are held, not sent and not dropped, so a client sees silence, never a reset; resume sends what was held, in order.
import { connect, createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface PausableProxy {
  /** `redis://127.0.0.1:PORT`: what a client gives as its Redis URL to go through the proxy. */
  url: string;
  port: number;
  /** Stops forwarding: every byte either side sends from now on is held (connections stay open, new ones are accepted). */
  pause(): void;
  /** Sends what was held, each connection's bytes in the order they came, and forwards again. */
  resume(): void;
  /** Bytes held now, both directions summed. */
  heldBytes(): number;
  /** Drops every connection and stops listening. */
  close(): Promise<void>;
}

/** One direction of one connection: writes through while the proxy forwards, holds while it is paused. */
class Direction {
  private held: Buffer[] = [];

  constructor(
    private readonly to: Socket,
    private readonly paused: () => boolean,
  ) {}

  push(chunk: Buffer): void {
    if (this.paused() || this.held.length > 0) this.held.push(chunk);
    else this.to.write(chunk);
  }

  flush(): void {
    for (const chunk of this.held.splice(0)) if (!this.to.destroyed) this.to.write(chunk);
  }

  bytes(): number {
    return this.held.reduce((sum, chunk) => sum + chunk.length, 0);
  }
}

/** A proxy on a free port of 127.0.0.1 to `target` (a `redis://host:port` URL). */
export async function pausableProxy(target: string): Promise<PausableProxy> {
  const upstreamUrl = new URL(target);
  let paused = false;
  const sockets = new Set<Socket>();
  const directions = new Set<Direction>();
  const server = createServer((client) => {
    const upstream = connect(Number(upstreamUrl.port || 6379), upstreamUrl.hostname);
    const up = new Direction(upstream, () => paused);
    const down = new Direction(client, () => paused);
    directions.add(up).add(down);
    sockets.add(client).add(upstream);
    client.on('data', (chunk: Buffer) => up.push(chunk));
    upstream.on('data', (chunk: Buffer) => down.push(chunk));
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
      directions.delete(up);
      directions.delete(down);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    pause() {
      paused = true;
    },
    resume() {
      paused = false;
      for (const direction of directions) direction.flush();
    },
    heldBytes: () => [...directions].reduce((sum, d) => sum + d.bytes(), 0),
    async close() {
      for (const socket of sockets) socket.destroy();
      sockets.clear();
      directions.clear();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
