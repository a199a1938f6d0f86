// Chaos scenario 7: malformed and hostile inputs. Each must be refused by the schema or CEL (the API
// server answers 4xx, naming the field), or be answered on its object with a precise condition
// (reason and message). Meanwhile a canary claim stays Bound with the same target object, provider-rook
// stays up, and no target gains an object.
import { createServer as createNetServer, type Socket } from 'node:net';
import { BucketClasses, Buckets } from '../../src/app.ts';
import { kinds } from '../../src/apis/kinds.gen.ts';
import { KubeError } from '../../src/kit/kube/errors.ts';
import type { KubeObjectLike } from '../../src/kit/kube/client.ts';
import { Secrets, type ResourceType } from '../../src/kit/kube/resources.ts';
import { Providers } from '../../src/runtime/system/provider-status.ts';
import { type ChaosEnv, type Conditioned, type Replica, type World, isBound, providerKeys, secretOf, within } from './chaos.ts';
import { cond } from '../../test/kit/conditions.ts';
import { eventually } from '../../test/kit/eventually.ts';

type Obj = KubeObjectLike & Record<string, unknown>;

interface Input {
  what: string;
  /** Objects written in order; the last one is the one judged. */
  objects: (ctx: Ctx) => [ResourceType, Obj][];
  /** Refused by the API server with a message matching this, or answered with this condition (False; Ready: True). */
  expect: { refused: RegExp } | { condition: 'Synced' | 'Ready'; reason: string | RegExp };
}

interface Ctx {
  platform: string;
  app: string;
  keys: Record<string, string>;
  silentEndpoint: string;
}

const store = (ctx: Ctx, name: string, spec: Record<string, unknown> = {}, annotations?: Record<string, string>): [ResourceType, Obj] => [
  kinds.ObjectStore,
  {
    apiVersion: kinds.ObjectStore.apiVersion,
    kind: 'ObjectStore',
    metadata: { name, namespace: ctx.platform, ...(annotations ? { annotations } : {}) },
    spec: { forProvider: { scope: { nodeCount: 4 } }, targetNamespace: `${ctx.platform}-store`, providerRef: { name: 'a' }, ...spec },
  },
];
const claim = (
  ctx: Ctx,
  name: string,
  spec: Record<string, unknown> = { classRef: { name: 'a' } },
  annotations?: Record<string, string>,
): [ResourceType, Obj] => [
  Buckets,
  {
    apiVersion: Buckets.apiVersion,
    kind: 'Bucket',
    metadata: { name, namespace: ctx.app, ...(annotations ? { annotations } : {}) },
    spec,
  },
];
/** A Provider whose Secret holds `keys`, and a store on it: the store's Synced condition is the answer. */
const onSecret = (ctx: Ctx, name: string, keys: Record<string, string>): [ResourceType, Obj][] => [
  [Secrets, secretOf({ namespace: ctx.platform, name: `${name}-creds` }, keys)],
  [
    Providers,
    {
      apiVersion: Providers.apiVersion,
      kind: 'Provider',
      metadata: { name, namespace: ctx.platform },
      spec: { credentialsSecretRef: { name: `${name}-creds` } },
    },
  ],
  store(ctx, `${name}-store`, { providerRef: { name } }),
];
const kubeconfig = (
  user: Record<string, unknown>,
  cluster: Record<string, unknown> = { server: 'https://127.0.0.1:1', 'certificate-authority-data': 'x' },
): string =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    'current-context': 'c',
    clusters: [{ name: 'c', cluster }],
    users: [{ name: 'u', user }],
    contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
  });
const GARBAGE_PEM = '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----';
const long = (n: number): string => 'a'.repeat(n);

const INPUTS: Input[] = [
  // Wrong types and bounds: the schema.
  {
    what: 'nodeCount as a string',
    objects: (c) => [store(c, 'h-type', { forProvider: { scope: { nodeCount: 'four' } } })],
    expect: { refused: /nodeCount/ },
  },
  {
    what: 'nodeCount 2147483648',
    objects: (c) => [store(c, 'h-huge', { forProvider: { scope: { nodeCount: 2147483648 } } })],
    expect: { refused: /nodeCount/ },
  },
  {
    what: 'nodeCount -1',
    objects: (c) => [store(c, 'h-negative', { forProvider: { scope: { nodeCount: -1 } } })],
    expect: { refused: /nodeCount/ },
  },
  {
    what: 'nodeCount 5 (odd)',
    objects: (c) => [store(c, 'h-odd', { forProvider: { scope: { nodeCount: 5 } } })],
    expect: { refused: /nodeCount/ },
  },
  {
    what: 'spec as a string',
    objects: (c) => [
      [Buckets, { apiVersion: Buckets.apiVersion, kind: 'Bucket', metadata: { name: 'h-spec', namespace: c.app }, spec: 'all of it' }],
    ],
    expect: { refused: /spec/ },
  },
  {
    what: 'classRef.name as a number',
    objects: (c) => [claim(c, 'h-classref', { classRef: { name: 42 } })],
    expect: { refused: /classRef\.name/ },
  },
  {
    what: 'targetNamespace ".."',
    objects: (c) => [store(c, 'h-dotdot', { targetNamespace: '..' })],
    expect: { refused: /targetNamespace/ },
  },
  {
    what: 'targetNamespace "a/b"',
    objects: (c) => [store(c, 'h-slash', { targetNamespace: 'a/b' })],
    expect: { refused: /targetNamespace/ },
  },
  {
    what: 'targetNamespace of 64 characters',
    objects: (c) => [store(c, 'h-longns', { targetNamespace: long(64) })],
    expect: { refused: /targetNamespace/ },
  },
  {
    what: 'connection Secret name "UPPER/../x"',
    objects: (c) => [claim(c, 'h-secretname', { classRef: { name: 'a' }, writeConnectionSecretToRef: { name: 'UPPER/../x' } })],
    expect: { refused: /writeConnectionSecretToRef\.name/ },
  },
  {
    what: 'connection Secret name of 300 characters',
    objects: (c) => [claim(c, 'h-secretlong', { classRef: { name: 'a' }, writeConnectionSecretToRef: { name: long(300) } })],
    expect: { refused: /writeConnectionSecretToRef\.name/ },
  },
  { what: 'unicode claim name "bücket"', objects: (c) => [claim(c, 'bücket')], expect: { refused: /name/ } },
  {
    what: 'unicode class name in a claim',
    objects: (c) => [claim(c, 'h-unicode-class', { classRef: { name: 'klasse-ü' } })],
    expect: { refused: /classRef\.name/ },
  },
  {
    what: 'Provider with both operators and the deprecated operatorInstall',
    objects: (c) => [
      [
        Providers,
        {
          apiVersion: Providers.apiVersion,
          kind: 'Provider',
          metadata: { name: 'h-both', namespace: c.platform },
          spec: {
            credentialsSecretRef: { name: 'x' },
            operatorInstall: { enabled: true },
            operators: [{ name: 'rook-minio', install: true }],
          },
        },
      ],
    ],
    expect: { refused: /operatorInstall|operators/ },
  },
  {
    what: 'ObjectStoreClass nodeCount 3',
    objects: (c) => [
      [
        kinds.ObjectStoreClass,
        {
          apiVersion: kinds.ObjectStoreClass.apiVersion,
          kind: 'ObjectStoreClass',
          metadata: { name: 'h-class3', namespace: c.platform },
          spec: { scope: { nodeCount: 3 }, providerRef: { name: 'a' } },
        },
      ],
    ],
    expect: { refused: /nodeCount/ },
  },
  // Extreme sizes.
  {
    what: 'a claim named with 253 characters',
    objects: (c) => [claim(c, `h${'-b'.repeat(126)}`)],
    expect: { condition: 'Ready', reason: /./ },
  },
  {
    what: 'an external-name of 100 kB',
    objects: (c) => [store(c, 'h-bigname', {}, { 'crossplane.io/external-name': long(100_000) })],
    expect: { condition: 'Synced', reason: 'InvalidExternalName' },
  },
  {
    what: 'an external-name "../x"',
    objects: (c) => [store(c, 'h-extpath', {}, { 'crossplane.io/external-name': '../x' })],
    expect: { condition: 'Synced', reason: 'InvalidExternalName' },
  },
  {
    what: 'a Provider Secret of 900 kB',
    objects: (c) => onSecret(c, 'h-hugesecret', { ...c.keys, clientCert: long(900_000) }),
    expect: { condition: 'Synced', reason: 'InvalidCredentials' },
  },
  // Missing and cross-namespace refs.
  {
    what: 'a claim naming a missing class',
    objects: (c) => [claim(c, 'h-noclass', { classRef: { name: 'nope' } })],
    expect: { condition: 'Synced', reason: 'ClassNotFound' },
  },
  {
    what: 'a store naming a missing Provider',
    objects: (c) => [store(c, 'h-noprovider', { providerRef: { name: 'nope' } })],
    expect: { condition: 'Synced', reason: 'ProviderNotFound' },
  },
  {
    what: 'a Provider naming a missing Secret',
    objects: (c) => [
      [
        Providers,
        {
          apiVersion: Providers.apiVersion,
          kind: 'Provider',
          metadata: { name: 'h-nosecret', namespace: c.platform },
          spec: { credentialsSecretRef: { name: 'nope' } },
        },
      ],
      store(c, 'h-nosecret-store', { providerRef: { name: 'h-nosecret' } }),
    ],
    expect: { condition: 'Synced', reason: 'SecretNotFound' },
  },
  {
    what: 'a store naming a Provider in another namespace',
    objects: (c) => [store(c, 'h-crossns', { providerRef: { name: 'a', namespace: c.app } })],
    expect: { condition: 'Synced', reason: /CrossNamespaceReference|ProviderNotFound/ },
  },
  {
    what: 'a claim adopting a resource by external-name',
    objects: (c) => [claim(c, 'h-import', { classRef: { name: 'a' } }, { 'crossplane.io/external-name': 'someone-elses' })],
    expect: { condition: 'Synced', reason: 'ImportNotAllowed' },
  },
  {
    what: 'a BucketClass pointing at a kind nobody serves',
    objects: (c) => [
      [
        BucketClasses,
        {
          apiVersion: BucketClasses.apiVersion,
          kind: 'BucketClass',
          metadata: { name: 'h-odd-kind', namespace: c.app },
          classRef: { kind: 'FileSystemClass', apiVersion: 'example.com/v1', name: 'x', namespace: c.platform },
        },
      ],
      claim(c, 'h-odd-kind-claim', { classRef: { name: 'h-odd-kind' } }),
    ],
    expect: { condition: 'Synced', reason: /UnsupportedClass|ClassNotFound/ },
  },
  // Credentials: garbage PEM, kubeconfigs that would run or read things, endpoints that are no API server.
  {
    what: 'garbage PEM as clusterCA',
    objects: (c) => onSecret(c, 'h-pem', { ...c.keys, clusterCA: GARBAGE_PEM }),
    expect: { condition: 'Synced', reason: 'InvalidCredentials' },
  },
  {
    what: 'garbage PEM as clientKey',
    objects: (c) => onSecret(c, 'h-pemkey', { ...c.keys, clientKey: '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----' }),
    expect: { condition: 'Synced', reason: 'InvalidCredentials' },
  },
  {
    what: 'a kubeconfig with an exec plugin',
    objects: (c) =>
      onSecret(c, 'h-exec', {
        kubeconfig: kubeconfig({
          exec: { apiVersion: 'client.authentication.k8s.io/v1', command: '/bin/sh', args: ['-c', 'touch /tmp/pwned'] },
        }),
      }),
    expect: { condition: 'Synced', reason: 'InvalidCredentials' },
  },
  {
    what: 'a kubeconfig reading a file (certificate-authority)',
    objects: (c) =>
      onSecret(c, 'h-cafile', {
        kubeconfig: kubeconfig({ token: 't' }, { server: 'https://127.0.0.1:1', 'certificate-authority': '/etc/shadow' }),
      }),
    expect: { condition: 'Synced', reason: 'InvalidCredentials' },
  },
  {
    what: 'a kubeconfig with tokenFile',
    objects: (c) =>
      onSecret(c, 'h-tokenfile', { kubeconfig: kubeconfig({ tokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token' }) }),
    expect: { condition: 'Synced', reason: 'InvalidCredentials' },
  },
  {
    what: 'a kubeconfig that is not YAML',
    objects: (c) => onSecret(c, 'h-notyaml', { kubeconfig: '{{{ not: [yaml' }),
    expect: { condition: 'Synced', reason: 'InvalidCredentials' },
  },
  {
    what: 'endpoint ftp://x',
    objects: (c) => onSecret(c, 'h-ftp', { ...c.keys, endpoint: 'ftp://x' }),
    expect: { condition: 'Synced', reason: 'InvalidCredentials' },
  },
  {
    what: 'endpoint at a link-local address (cloud metadata)',
    objects: (c) => onSecret(c, 'h-metadata', { ...c.keys, endpoint: 'https://169.254.169.254' }),
    expect: { condition: 'Synced', reason: 'InvalidCredentials' },
  },
  {
    what: 'endpoint over plain http',
    objects: (c) => onSecret(c, 'h-http', { ...c.keys, endpoint: 'http://127.0.0.1:1' }),
    expect: { condition: 'Synced', reason: 'InvalidCredentials' },
  },
  {
    what: 'endpoint with a unicode host',
    objects: (c) => onSecret(c, 'h-unicode-host', { ...c.keys, endpoint: 'https://bücher.invalid' }),
    expect: { condition: 'Synced', reason: 'Unreachable' },
  },
  {
    what: 'endpoint that accepts and never answers',
    objects: (c) => onSecret(c, 'h-silent', { ...c.keys, endpoint: c.silentEndpoint }),
    expect: { condition: 'Synced', reason: 'Unreachable' },
  },
  {
    what: 'a Provider Secret without an endpoint',
    objects: (c) => onSecret(c, 'h-noendpoint', { token: 'abc' }),
    expect: { condition: 'Synced', reason: 'SecretKeyMissing' },
  },
];

export async function hostileInputs(env: ChaosEnv, world: World, replica: Replica): Promise<{ figures: string[]; violations: string[] }> {
  const violations: string[] = [];
  const sockets: Socket[] = [];
  const silent = createNetServer((socket) => {
    sockets.push(socket);
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const ctx: Ctx = {
    platform: world.platform,
    app: world.app,
    keys: providerKeys(env.targets.a.cluster),
    silentEndpoint: `https://127.0.0.1:${(silent.address() as { port: number }).port}`,
  };
  try {
    // The canary: bound before, and still bound on the same target object after.
    await world.claims(['canary'], 'a');
    await world.bound(['canary'], 120_000);
    const targetsBefore = (await world.targetObjects(env.targets.a)).map((o) => o.metadata.uid).sort();

    let refused = 0;
    let answered = 0;
    const judged: { input: Input; type: ResourceType; obj: Obj }[] = [];
    for (const input of INPUTS) {
      const objects = input.objects(ctx);
      try {
        // Created as a user's client would (POST): the API server validates against the CRD's schema and CEL.
        for (const [type, obj] of objects) await env.admin.create(type, obj);
        if ('refused' in input.expect) violations.push(`${input.what}: accepted, expected the API server to refuse it`);
        else judged.push({ input, type: objects.at(-1)![0], obj: objects.at(-1)![1] });
      } catch (err) {
        const message = err instanceof KubeError ? err.message : String(err);
        if (!('refused' in input.expect)) violations.push(`${input.what}: refused (${message.slice(0, 160)}), expected a condition`);
        else if (!(err instanceof KubeError && err.code >= 400 && err.code < 500 && input.expect.refused.test(message)))
          violations.push(`${input.what}: refused without naming the field: ${message.slice(0, 200)}`);
        else refused++;
      }
    }
    for (const { input, type, obj } of judged) {
      const expect = input.expect as { condition: 'Synced' | 'Ready'; reason: string | RegExp };
      const matches = (reason: string | undefined): boolean =>
        reason !== undefined && (typeof expect.reason === 'string' ? reason === expect.reason : expect.reason.test(reason));
      try {
        const c = await eventually(
          async () => {
            const current = cond(
              await env.admin.get<Conditioned>(type, { namespace: obj.metadata.namespace, name: obj.metadata.name }),
              expect.condition,
            );
            // Ready is the one answer that must be True (a valid claim binds); every other answer is a failure.
            return matches(current?.reason) && current?.status === (expect.condition === 'Ready' ? 'True' : 'False') ? current : undefined;
          },
          `${input.what}: ${expect.condition} with reason ${expect.reason}`,
          within(60_000),
        );
        if (expect.condition !== 'Ready' && !c.message) violations.push(`${input.what}: ${c.reason} without a message`);
        answered++;
      } catch (err) {
        const current = await env.admin.get<Conditioned>(type, { namespace: obj.metadata.namespace, name: obj.metadata.name });
        violations.push(`${(err as Error).message}; it shows ${JSON.stringify(current?.status?.conditions ?? [])}`);
      }
    }

    if (!replica.running || !(await replica.healthy())) violations.push('provider-rook is not up after the hostile inputs');
    if (replica.starts !== 1) violations.push(`provider-rook was started ${replica.starts} times`);
    const canary = (await world.listClaims()).find((c) => c.metadata.name === 'canary');
    if (!isBound(canary)) violations.push('the canary claim is no longer Bound');
    const after = (await world.targetObjects(env.targets.a)).map((o) => o.metadata.uid).sort();
    // The 253-character claim adds exactly one store; nothing else reached the target, nothing was replaced.
    const added = after.filter((u) => !targetsBefore.includes(u));
    if (added.length !== 1 || targetsBefore.some((u) => !after.includes(u)))
      violations.push(`target A's stores changed beyond the one valid claim: before ${targetsBefore.length}, after ${after.length}`);
    if (sockets.length === 0) violations.push('the silent endpoint was never called');
    return {
      figures: [
        `${INPUTS.length} inputs: ${refused} refused by the schema or CEL, ${answered} answered with the expected condition; provider-rook up, canary Bound, target unharmed`,
      ],
      violations,
    };
  } finally {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
  }
}
