// The daemon's gate of change windows: writes held (WindowHeld) in a blocking window, let through by a manual reconcile where the window allows it or by --override-window (marked), and the timer set to the window's end.
import { describe, expect, it } from 'vitest';
import type { Outcome } from '../../core/decide.js';
import type { ChangeWindow } from '../../core/windows.js';
import { gateWindows, WindowGate } from './window-gate.js';

const deny = (manual: boolean): ChangeWindow => ({
  kind: 'deny',
  schedule: '0 22 * * *',
  durationMs: 2 * 3_600_000,
  duration: '2h',
  timezone: 'UTC',
  manual,
});
const INSIDE = Date.parse('2026-05-04T22:30:00Z');
const OUTSIDE = Date.parse('2026-05-04T12:00:00Z');

function outcomes(): Map<string, Outcome> {
  const write = {
    key: 'Deployment/a',
    action: 'update',
    sync: { status: 'out_of_sync', reason: 'OutOfSync', message: 'differs' },
    write: { op: 'update', drift: false },
    skip: null,
    drift: null,
  };
  const noop = {
    key: 'Deployment/b',
    action: 'noop',
    sync: { status: 'synced', reason: 'Synced', message: null },
    write: null,
    skip: null,
    drift: null,
  };
  return new Map([
    ['Deployment/a', write],
    ['Deployment/b', noop],
  ] as unknown as Array<[string, Outcome]>);
}

function gate(windows: ChangeWindow[]): { gate: WindowGate; timers: Array<number | undefined> } {
  const timers: Array<number | undefined> = [];
  return { gate: new WindowGate(windows, (ms) => timers.push(ms)), timers };
}

describe('gateWindows', () => {
  it('holds every write inside a blocking window (WindowHeld) and sets the timer to its end', () => {
    const g = gate([deny(false)]);
    const o = outcomes();
    gateWindows(g.gate, INSIDE, o);
    expect(o.get('Deployment/a')).toMatchObject({
      write: null,
      sync: { status: 'out_of_sync', reason: 'WindowHeld' },
      skip: { code: 'WindowHeld' },
    });
    expect(o.get('Deployment/a')!.sync.message).toContain('automatic writes wait: deny window windows[0]');
    expect(o.get('Deployment/b')).toMatchObject({ sync: { reason: 'Synced' } });
    expect(g.timers).toEqual([90 * 60_000 + 50]);
    expect(g.gate.held()).toContain('until 2026-05-05T00:00:00.000Z');
  });

  it('lets writes go outside the windows, and clears the timer', () => {
    const g = gate([deny(false)]);
    const o = outcomes();
    gateWindows(g.gate, OUTSIDE, o);
    expect(o.get('Deployment/a')!.write).toEqual({ op: 'update', drift: false });
    expect(g.timers).toEqual([undefined]);
    expect(g.gate.held()).toBeUndefined();
  });

  it('lets a manual reconcile write where the window says manual, not where it does not', () => {
    const manual = gate([deny(true)]);
    manual.gate.ask(false);
    const o = outcomes();
    gateWindows(manual.gate, INSIDE, o);
    expect(o.get('Deployment/a')!.write).toEqual({ op: 'update', drift: false });
    manual.gate.take();
    const after = outcomes();
    gateWindows(manual.gate, INSIDE, after);
    expect(after.get('Deployment/a')!.write).toBeNull();

    const strict = gate([deny(false)]);
    strict.gate.ask(false);
    const held = outcomes();
    gateWindows(strict.gate, INSIDE, held);
    expect(held.get('Deployment/a')!.write).toBeNull();
  });

  it('lets --override-window write, each write marked with the command that asked', () => {
    const g = gate([deny(false)]);
    g.gate.ask(true);
    const o = outcomes();
    gateWindows(g.gate, INSIDE, o);
    expect(o.get('Deployment/a')!.write).toEqual({
      op: 'update',
      drift: false,
      windowOverride: 'converge reconcile --override-window',
    });
  });

  it('changes nothing without windows', () => {
    const o = outcomes();
    expect(gateWindows(gate([]).gate, INSIDE, o)).toBeUndefined();
    expect(o).toEqual(outcomes());
  });

  it('reuses a verdict until the next window change, and reads again after it', () => {
    const g = gate([deny(false)]).gate;
    const first = g.verdict(INSIDE);
    expect(g.verdict(INSIDE + 60_000)).toBe(first);
    expect(g.verdict(Date.parse('2026-05-05T00:00:00Z')).blocked).toBe(false);
    expect(g.verdict(INSIDE - 60_000)).not.toBe(first);
  });
});
