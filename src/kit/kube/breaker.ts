// A circuit breaker for one server: a server that does not answer is not asked again until it does
// (or a cool-down passes), so one dead target cannot hold every shared worker in its timeouts.
// - After a request fails because the server is unreachable, requests fail at once for a cool-down.
// - While requests wait and the server has answered nothing for `stallMs`, new ones fail at once
//   instead of queueing behind them.
// - A server that has not answered lately (or ever, on a fresh client) gets `patienceMs` to start
//   answering (connect, TLS handshake, headers) instead of the whole request timeout.
// Any answer, or a watch opening, closes it. A failure fast carries the last real failure's message,
// so a resource's condition does not flap between two texts.
import { UnreachableError } from './errors.ts';

export interface Ticket {
  at: number;
}

export class Breaker {
  private openUntil = 0;
  /** When the server last answered (the monotonic clock, as all its times: a wall-clock step must not hold it open); -Infinity until it ever does. */
  private lastAnswer = -Infinity;
  private lastFailure?: UnreachableError;
  private readonly waiting = new Set<Ticket>();
  private readonly coolDownMs: number;
  private readonly stallMs: number;
  private readonly patienceMs: number;
  private readonly label: string;

  constructor(label: string, opts: { coolDownMs?: number; stallMs?: number; patienceMs?: number } = {}) {
    this.label = label;
    this.coolDownMs = opts.coolDownMs ?? 15_000;
    this.stallMs = opts.stallMs ?? 5_000;
    this.patienceMs = opts.patienceMs ?? 5_000;
  }

  /** How long a request may wait for the server to start answering: short unless it answered within 30 s. */
  patience(now = performance.now()): number {
    return now - this.lastAnswer > 30_000 ? this.patienceMs : Infinity;
  }

  /** A ticket for one request, or an UnreachableError when it should not be sent now. */
  enter(now = performance.now()): Ticket {
    if (now < this.openUntil) throw this.lastFailure ?? new UnreachableError(`cannot reach ${this.label}`);
    let oldest = Infinity;
    for (const t of this.waiting) oldest = Math.min(oldest, t.at);
    if (now - oldest > this.stallMs && this.lastAnswer < oldest) throw new UnreachableError(`request to ${this.label} timed out`);
    const ticket = { at: now };
    this.waiting.add(ticket);
    return ticket;
  }

  /** The server answered (any HTTP status): it is alive. */
  answered(ticket?: Ticket): void {
    if (ticket) this.waiting.delete(ticket);
    this.lastAnswer = performance.now();
    this.openUntil = 0;
  }

  /** The request ended without a word from the server, for a reason of its caller's: nothing is learnt of the server. */
  left(ticket: Ticket | undefined): void {
    if (ticket) this.waiting.delete(ticket);
  }

  /** The request failed; an unreachable server opens the breaker for the cool-down. */
  failed(ticket: Ticket | undefined, err: unknown): void {
    if (ticket) this.waiting.delete(ticket);
    if (!(err instanceof UnreachableError) || err.tls) return;
    this.lastFailure = err;
    this.openUntil = performance.now() + this.coolDownMs;
  }
}
