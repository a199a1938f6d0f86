// Where a claim's credentials go and how other clusters reach its store: a claim's consumers and
// their delivery status, and a store's exposure (a URL a platform team keeps, or what provider-rook
// makes in the store's cluster: a LoadBalancer Service, a Gateway API route, a ServiceExport).
import { z } from 'zod';
import { namespaceName, objectName } from './common.ts';

/**
 * Where a claim's app runs, besides the claim's own namespace: a cluster registered as a Provider
 * and a namespace there. The consumer cluster's Provider says which claim namespaces may deliver
 * into which of its namespaces (its spec.consumers).
 */
export const consumers = z
  .array(
    z.object({
      providerRef: z
        .object({
          name: objectName().meta({ description: 'Name of the Provider (kubernetes.crossplane.io) of the cluster where the app runs.' }),
          namespace: namespaceName().meta({ description: "Namespace of that Provider (the platform team's)." }),
        })
        .meta({ description: 'The cluster where the app runs. It may hold no store at all.' }),
      namespace: namespaceName().meta({
        description: "The app's namespace in that cluster. It must exist, and the Provider must let this claim's namespace deliver there.",
      }),
      secretName: objectName()
        .optional()
        .meta({ description: 'Name of the Secret there. Defaults to spec.writeConnectionSecretToRef.name.' }),
    }),
  )
  .max(8)
  .meta({
    description:
      "Clusters and namespaces where the app runs. Each gets a Secret with the same keys as the claim's own, except an endpoint that resolves there (an entry named twice is delivered once); " +
      'it is deleted when its entry leaves this list, or when the claim goes.',
    'x-kubernetes-list-type': 'atomic',
  });

/** Where a claim's connection details were delivered, as its status says. */
export const deliveries = z
  .array(
    z.object({
      to: z.string().meta({ description: 'The consumer, as <provider namespace>/<provider>/<namespace>.' }),
      secretName: z.string().meta({ description: "Name of the Secret in the consumer's namespace." }),
      delivered: z.boolean().meta({ description: 'The Secret there holds the current connection details.' }),
      endpoint: z.enum(['ClusterDNS', 'Exposed']).optional().meta({
        description:
          "ClusterDNS: the store's Service name (the consumer runs in the store's cluster); Exposed: the class's exposure. Kept after a failed pass while a Secret delivered earlier may still be there.",
      }),
      keys: z.string().max(64).optional().meta({
        description:
          'A digest of the access key id the Secret there holds (never the key): rotation keeps the previous keys until every consumer holds the new ones.',
      }),
      removing: z
        .boolean()
        .optional()
        .meta({ description: 'Its consumer left spec.consumers (or the claim is going): its Secret is being deleted.' }),
      reason: z
        .string()
        .optional()
        .meta({ description: 'A CamelCase word saying why the Secret there is not delivered, or not yet removed.' }),
      message: z.string().optional().meta({ description: 'Human-readable detail of what happened to the Secret there.' }),
    }),
  )
  .optional()
  .meta({ description: 'Each consumer in spec.consumers, and each Secret still to be deleted, and how it stands.' });

/**
 * How apps in other clusters than the store's reach it. Consumers in the store's own cluster use the
 * Service's cluster DNS name; others get this.
 */
/** A host (a name, an IPv4 address or a bracketed IPv6 one), a port from 1 to 65535, nothing after. */
const URL_PATTERN =
  /^https?:\/\/([^\s/?#@:[\]]+|\[[0-9A-Fa-f:.]+\])(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?\/?$/;
/** One or more PEM certificates and nothing else: a private key pasted with them would be delivered to every consumer. */
const PEM_CERTIFICATES = /^\s*(-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]+-----END CERTIFICATE-----\s*)+$/;

export const exposure = z
  .object({
    url: z
      .string()
      .max(2048)
      .regex(URL_PATTERN, 'must be an http:// or https:// URL with a host, an optional port (1-65535) and no path')
      .meta({
        description:
          'The URL apps in other clusters reach the store at (an ingress, a load balancer, a DNS name the platform team keeps). ' +
          'S3 signs the Host header: it must be the host clients really send to, kept by whatever proxies on the way.',
      }),
    caBundle: z
      .string()
      .max(65536)
      .regex(PEM_CERTIFICATES, 'must be PEM certificates, and nothing else')
      .optional()
      .meta({ description: 'PEM certificates that verify an https URL: delivered as key ca.crt (mount it, point AWS_CA_BUNDLE at it).' }),
    addressingStyle: z.enum(['path', 'virtual']).default('path').meta({
      description:
        'path: https://host/bucket/key (one host name, what most stores behind one name need); virtual: https://bucket.host/key (wildcard DNS). Delivered as AWS_S3_ADDRESSING_STYLE.',
    }),
  })
  .meta({
    description:
      "How apps in clusters other than the shared store's reach it (an ingress or load balancer the platform team runs in front of its S3 Service). Unset: only apps in the store's own cluster can be delivered to.",
    'x-kubernetes-validations': [
      { rule: "!has(self.caBundle) || self.url.startsWith('https://')", message: 'caBundle verifies an https:// url only' },
    ],
  });

const exactlyOneExposure = {
  rule: '[has(self.loadBalancer), has(self.gateway), has(self.multiCluster)].filter(x, x).size() == 1',
  message: 'name exactly one of loadBalancer, gateway and multiCluster',
};

const HOSTNAME = /^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$/;

/**
 * How a store of its own is reached from other clusters: an object provider-rook makes for it in the
 * target (a LoadBalancer Service, a Gateway API HTTPRoute, or a Multi-Cluster Services ServiceExport),
 * whose address it reads back and delivers to consumers outside the store's cluster.
 */
export const storeExposure = z
  .object({
    loadBalancer: z
      .object({
        annotations: z
          .record(z.string().max(317), z.string().max(4096))
          .optional()
          .meta({ description: "Annotations for the LoadBalancer Service (the cloud's load-balancer settings)." }),
      })
      .optional()
      .meta({
        description:
          "A LoadBalancer Service <store>-s3-external beside the store's S3 Service; its address is read from status.loadBalancer.ingress. Plain HTTP, as the store serves.",
      }),
    gateway: z
      .object({
        gatewayRef: z
          .object({
            name: objectName().meta({ description: 'Name of the Gateway.' }),
            namespace: namespaceName().meta({ description: "Namespace of the Gateway in the store's cluster." }),
            sectionName: z.string().max(253).optional().meta({ description: 'The listener of that Gateway to attach to.' }),
          })
          .meta({ description: "The Gateway (gateway.networking.k8s.io) in the store's cluster the route attaches to." }),
        hostname: z
          .string()
          .max(253)
          .regex(HOSTNAME, 'must be a lower-case DNS name with at least one dot, or *. and one (each store gets <store>.<the rest>)')
          .meta({
            description:
              'The host name clients use: the route matches it, and the Secret publishes it (S3 signs the Host header). On a class, *.s3.example.com gives each store <store name>.s3.example.com (the Gateway needs a listener or DNS that covers them).',
          }),
      })
      .optional()
      .meta({
        description:
          "An HTTPRoute <store>-s3 on a Gateway the platform team runs (its listeners must allow routes from the store's namespace), published as http(s)://hostname[:port] from the listener's protocol and port.",
      }),
    multiCluster: z.object({}).optional().meta({
      description:
        "A ServiceExport of the store's S3 Service (multicluster.x-k8s.io), published as <service>.<namespace>.svc.clusterset.local: consumers' clusters must share its clusterset and hold its namespace.",
    }),
    caBundle: z
      .string()
      .max(65536)
      .regex(PEM_CERTIFICATES, 'must be PEM certificates, and nothing else')
      .optional()
      .meta({ description: 'PEM certificates that verify an HTTPS Gateway listener, delivered as key ca.crt.' }),
    addressingStyle: z.enum(['path', 'virtual']).default('path').meta({ description: 'Delivered as AWS_S3_ADDRESSING_STYLE.' }),
  })
  .meta({
    description: "How apps in other clusters than the store's reach it. Unset: only apps in the store's own cluster can be delivered to.",
    'x-kubernetes-validations': [exactlyOneExposure],
  });

/**
 * A class's exposure: each store it makes gets its own host name from a *. one. A fixed name would
 * give every store the same route on the same Gateway, which sends them all to the first: one team's
 * app would be sent to another team's store.
 */
export const classExposure = storeExposure.meta({
  description:
    "How apps in other clusters than a store's reach each store made from this class. Unset: only apps in the store's own cluster can be delivered to.",
  'x-kubernetes-validations': [
    exactlyOneExposure,
    {
      rule: "!has(self.gateway) || self.gateway.hostname.startsWith('*.')",
      message:
        'on a class, the hostname must start with *. so that each store gets its own (<store>.<the rest>): one name for every store would send them all to the first',
      fieldPath: '.gateway.hostname',
    },
  ],
});

/** What a store's exposure reached: its address, or what it waits for. */
export const exposureStatus = z
  .object({
    via: z
      .enum(['LoadBalancer', 'Gateway', 'MultiCluster'])
      .meta({ description: 'The kind of exposure: LoadBalancer, Gateway or MultiCluster, as spec.exposure names it.' }),
    endpoint: z.string().optional().meta({ description: 'The endpoint consumers in other clusters get.' }),
    waiting: z.string().optional().meta({ description: 'What it waits for before it has one (an address, a route accepted).' }),
  })
  .optional()
  .meta({ description: 'How the store is reached from other clusters, as last observed.' });
