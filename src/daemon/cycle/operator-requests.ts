// The operator's pending requests of one POST /reconcile (write secrets held as SecretsUnknown, rebuild released holds), served by the next reconcile.
import type { SecretWrites } from './cycle-context.js';

/**
 * Requests naming resources (metadata.name or Kind/name), or all of them (`true`): the reconcile that serves them asks
 * `approved`/`wanted` per resource and calls `done` for each it enqueued; `take` ends them and says which were served.
 */
export class OperatorRequests implements SecretWrites {
  private all = false;
  private readonly names = new Set<string>();
  /** Keys served since the last take(). */
  private served: string[] = [];

  add(request: true | readonly string[]): void {
    if (request === true) this.all = true;
    else for (const name of request) this.names.add(name);
  }

  approved(key: string, name = key.slice(key.indexOf('/') + 1)): boolean {
    return this.all || this.names.has(key) || this.names.has(name);
  }

  wanted(key: string): boolean {
    return this.approved(key);
  }

  done(key: string): void {
    this.names.delete(key);
    this.names.delete(key.slice(key.indexOf('/') + 1));
    this.served.push(key);
  }

  /** Ends the requests (after the reconcile that served them) and returns the keys served. */
  take(): string[] {
    const served = this.served;
    this.served = [];
    this.all = false;
    this.names.clear();
    return served;
  }
}
