// The logger (src/kit/logger.ts): lines name their level, as logr and klog readers expect, and
// --log-level warn keeps what an operator may need to act on while dropping the routine.
import { describe, expect, it } from '@jest/globals';
import { Writable } from 'node:stream';
import { pinoLogger } from '../../../src/kit/logger.ts';

/** The JSON lines a logger at this level writes. */
function capture(level: string): { lines: Record<string, unknown>[]; log: ReturnType<typeof pinoLogger> } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { lines, log: pinoLogger(level, sink) };
}

describe('the logger', () => {
  it('writes each level by its name, with the fields given and those of its parents', () => {
    const { lines, log } = capture('debug');
    const child = log.with({ controller: 'buckets' });
    child.debug('seen', { key: 'a/b' });
    child.info('done');
    child.warn('reconcile failed; retrying with backoff', { error: 'boom' });
    expect(lines.map((l) => [l.level, l.msg, l.controller])).toEqual([
      ['debug', 'seen', 'buckets'],
      ['info', 'done', 'buckets'],
      ['warn', 'reconcile failed; retrying with backoff', 'buckets'],
    ]);
    expect(lines[0]!.key).toBe('a/b');
    expect(lines[2]!.error).toBe('boom');
  });

  it('at warn keeps warnings and drops the routine', () => {
    const { lines, log } = capture('warn');
    log.debug('seen');
    log.info('done');
    log.warn('lease renewal failed');
    log.error('leadership lost; exiting');
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      ['warn', 'lease renewal failed'],
      ['error', 'leadership lost; exiting'],
    ]);
  });

  it('at error keeps only why the process exits', () => {
    const { lines, log } = capture('error');
    log.warn('reconcile failed; retrying with backoff');
    log.with({ controller: 'leader' }).error('leadership lost; exiting');
    expect(lines.map((l) => [l.level, l.msg, l.controller])).toEqual([['error', 'leadership lost; exiting', 'leader']]);
  });
});
