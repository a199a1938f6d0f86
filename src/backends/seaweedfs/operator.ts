// The SeaweedFS operator's kinds (seaweed.seaweedfs.com/v1) that provider-rook writes into a target,
// and the operator itself, installed on demand when a Provider allows it (config/operators/seaweedfs).
import { fileURLToPath } from 'node:url';
import type { ResourceType } from '../../kit/kube/resources.ts';
import { bundleFromDirectory } from '../../runtime/operators/operator.ts';

const API_VERSION = 'seaweed.seaweedfs.com/v1';
const kind = (k: string, plural: string): ResourceType => ({ apiVersion: API_VERSION, kind: k, plural, namespaced: true });

export const Seaweeds = kind('Seaweed', 'seaweeds');
export const SeaweedBuckets = kind('Bucket', 'buckets');
export const S3Identities = kind('S3Identity', 's3identities');
export const S3CredentialsType = kind('S3Credentials', 's3credentials');
export const S3Policies = kind('S3Policy', 's3policies');
export const S3PolicyBindings = kind('S3PolicyBinding', 's3policybindings');
export const BucketLifecyclePolicies = kind('BucketLifecyclePolicy', 'bucketlifecyclepolicies');

/** The SeaweedFS operator (seaweedfs-operator 1.0.36). */
export const seaweedfsOperator = bundleFromDirectory(fileURLToPath(new URL('../../../config/operators/seaweedfs', import.meta.url)), {
  name: 'seaweedfs',
  description: 'SeaweedFS operator',
  crdName: 'seaweeds.seaweed.seaweedfs.com',
  deploymentName: 'seaweedfs-operator-controller-manager',
  defaultNamespace: 'seaweedfs-operator-system',
  defaultImage: 'chrislusf/seaweedfs-operator:1.0.36',
});
