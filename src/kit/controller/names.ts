// Names derived from a kind, shared by the setup of managed and claim kinds.
import type { ResourceType } from '../kube/resources.ts';

const group = (type: ResourceType): string => type.apiVersion.split('/')[0]!;

/** controller-runtime's controller names: "<kind>.<group>", lower case. */
export const kindName = (type: ResourceType): string => `${type.kind.toLowerCase()}.${group(type)}`;
