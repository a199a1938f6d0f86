// The process's flags: defaults, what each accepts, and errors that name every bad flag.
import { describe, expect, it } from '@jest/globals';
import { parseFlags } from '../../src/flags.ts';

describe('parseFlags', () => {
  it('gives every flag with a default its default', () => {
    const opts = parseFlags({});
    expect(opts).toMatchObject({
      poll: 600_000,
      'leak-interval': 300_000,
      'leak-grace': 300_000,
      'waiting-after': 300_000,
      'leak-mode': 'delete',
      'allow-exec-credentials': false,
      'allow-plain-http': false,
      'refuse-endpoint-ranges': [],
      workers: 8,
      'max-reconcile-rate': 50,
      'metrics-addr': ':8080',
      'log-level': 'info',
      'leader-elect': false,
      'leader-election-id': 'provider-rook',
      'leader-election-lease-duration': 15_000,
      'leader-election-renew-deadline': 10_000,
      'leader-election-retry-period': 2_000,
    });
    expect(opts.kubeconfig).toBeUndefined();
    expect(opts.namespace).toBeUndefined();
  });

  it('reads durations, numbers, choices and lists', () => {
    expect(
      parseFlags({
        poll: '250ms',
        'leak-interval': '2h',
        'leak-grace': '30s',
        'waiting-after': '3s',
        workers: '64',
        'max-reconcile-rate': '2.5',
        'leader-elect': 'true',
        namespace: 'a,b-2',
      }),
    ).toMatchObject({
      poll: 250,
      'leak-interval': 7_200_000,
      'leak-grace': 30_000,
      'waiting-after': 3_000,
      workers: 64,
      'max-reconcile-rate': 2.5,
      'leader-elect': true,
      namespace: 'a,b-2',
    });
  });

  it('reads the endpoint ranges to refuse as a list, empty included', () => {
    expect(parseFlags({ 'refuse-endpoint-ranges': 'loopback' })['refuse-endpoint-ranges']).toEqual(['loopback']);
    expect(parseFlags({ 'refuse-endpoint-ranges': 'loopback,private', 'allow-plain-http': 'true' })).toMatchObject({
      'refuse-endpoint-ranges': ['loopback', 'private'],
      'allow-plain-http': true,
    });
    expect(parseFlags({ 'refuse-endpoint-ranges': '' })['refuse-endpoint-ranges']).toEqual([]);
    expect(() => parseFlags({ 'refuse-endpoint-ranges': 'loopback,link-local', 'allow-plain-http': 'yes' })).toThrow(
      '--allow-plain-http: use one of true, false; --refuse-endpoint-ranges: use a comma-separated list of loopback, private, or nothing',
    );
    expect(() => parseFlags({ 'refuse-endpoint-ranges': 'loopback,' })).toThrow('--refuse-endpoint-ranges');
  });

  it('names every bad flag and what to write instead', () => {
    expect(() =>
      parseFlags({ poll: '10', workers: '0', 'log-level': 'loud', namespace: 'A_B', 'leader-elect': 'yes', 'max-reconcile-rate': '' }),
    ).toThrow(
      '--namespace: use one namespace or a comma-separated list; --poll: use a duration like 30s, 1m or 1h; --workers: use a whole number from 1 to 64; ' +
        '--max-reconcile-rate: use a number of at least 1; --log-level: use one of debug, info, warn, error; --leader-elect: use one of true, false',
    );
    expect(() => parseFlags({ workers: '2.5' })).toThrow('--workers: use a whole number from 1 to 64');
  });

  it('keeps the renew deadline under the lease and the retry period under the deadline, so two leaders never act at once', () => {
    expect(
      parseFlags({
        'leader-election-lease-duration': '4s',
        'leader-election-renew-deadline': '3s',
        'leader-election-retry-period': '500ms',
      }),
    ).toMatchObject({
      'leader-election-lease-duration': 4_000,
      'leader-election-renew-deadline': 3_000,
      'leader-election-retry-period': 500,
    });
    expect(() => parseFlags({ 'leader-election-lease-duration': '10s' })).toThrow(
      '--leader-election-renew-deadline: use a duration shorter than --leader-election-lease-duration',
    );
    expect(() => parseFlags({ 'leader-election-renew-deadline': '2s' })).toThrow(
      '--leader-election-retry-period: use a duration shorter than --leader-election-renew-deadline',
    );
    expect(() => parseFlags({ 'leader-election-lease-duration': '15' })).toThrow(
      '--leader-election-lease-duration: use a duration like 30s, 1m or 1h',
    );
  });
});
