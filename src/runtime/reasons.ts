// Condition and Event reasons, each with what it means: first why provider-rook would not act, then
// the lifecycle of managed resources, claims and placement (crossplane-runtime keeps its reasons in
// const blocks the same way). Then Crossplane's Ready and Synced conditions, and the reason an error
// shows.
import { ReasonedError, type Condition } from '../kit/conditions.ts';
import { CredentialPluginError, KubeError, UnreachableError } from '../kit/kube/errors.ts';

export const Reasons = {
  /** The target object belongs to another managed resource, or nothing proves it is this one's. */
  ExternalResourceOwnedByAnother: 'ExternalResourceOwnedByAnother',
  /** The target object exists, unmarked, and no import was asked for. */
  ExternalResourceConflict: 'ExternalResourceConflict',
  /** A companion (e.g. an access-keys Secret) exists but was not made by provider-rook for this resource. */
  CompanionNotOwned: 'CompanionNotOwned',
  /**
   * Ready=False: the Service a resource's endpoint names (its own, or its shared store's) is not the
   * one provider-rook made and recorded; its connection Secret names no endpoint until it is.
   */
  EndpointNotProven: 'EndpointNotProven',
  /** The connection Secret exists and is not controlled (ownerReference with uid) by this resource or claim. */
  ConnectionSecretConflict: 'ConnectionSecretConflict',
  /** A target namespace (of a store, or to install an operator into) the Provider does not allow. */
  TargetNamespaceNotAllowed: 'TargetNamespaceNotAllowed',
  /** An operator image other than its bundle's, without the Provider's imageOverride. */
  OperatorImageNotAllowed: 'OperatorImageNotAllowed',
  /** A claim's resourceRef names no managed resource it may bind: missing or another's, the same answer. */
  ManagedResourceNotFound: 'ManagedResourceNotFound',

  // The managed reconciler (crossplane-runtime's names).
  /** Synced=False: the crossplane.io/paused annotation stops reconciliation. */
  ReconcilePaused: 'ReconcilePaused',
  /** spec.managementPolicies is a combination crossplane-runtime does not support. */
  CannotUseInvalidManagementPolicy: 'CannotUseInvalidManagementPolicy',
  /** Event: reconciliation was paused (said once, when it starts). */
  ReconciliationPaused: 'ReconciliationPaused',
  /** Event: the Provider's credentials gave no client for the target. */
  CannotConnectToProvider: 'CannotConnectToProvider',
  /** Event: reading the external resource failed. */
  CannotObserveExternalResource: 'CannotObserveExternalResource',
  /** Event: creating the external resource failed. */
  CannotCreateExternalResource: 'CannotCreateExternalResource',
  /** Event: repairing the external resource failed. */
  CannotUpdateExternalResource: 'CannotUpdateExternalResource',
  /** Event: deleting the external resource failed. */
  CannotDeleteExternalResource: 'CannotDeleteExternalResource',
  /** Event: the connection Secret could not be written. */
  CannotPublishConnectionDetails: 'CannotPublishConnectionDetails',
  /** Event: the managed resource itself (finalizer, annotations, late-initialized spec) could not be written. */
  CannotUpdateManagedResource: 'CannotUpdateManagedResource',
  /** Event: created moments ago and not visible yet; waiting out the grace period. */
  PendingExternalResource: 'PendingExternalResource',
  /** Event: the external resource was created. */
  CreatedExternalResource: 'CreatedExternalResource',
  /** Event: the external resource had drifted and was repaired. */
  UpdatedExternalResource: 'UpdatedExternalResource',
  /** Event: the external resource was deleted (reclaim policy Delete). */
  DeletedExternalResource: 'DeletedExternalResource',

  // Claims.
  /** Ready=False: the claim waits for its managed resource (the message says for what). */
  Binding: 'Binding',
  /** Event: binding failed with an API error that names no reason of its own. */
  CannotBindManagedResource: 'CannotBindManagedResource',
  /** The claim's portable class, or the class it names, does not exist. */
  ClassNotFound: 'ClassNotFound',
  /** The portable class points at a kind no backend serves. */
  UnsupportedClass: 'UnsupportedClass',
  /** The class lists allowedNamespaces and the claim's namespace is not one. */
  NamespaceNotAllowed: 'NamespaceNotAllowed',
  /** The class names neither a Provider nor a Provider selector. */
  ClassHasNoProvider: 'ClassHasNoProvider',
  /** A claim carries crossplane.io/external-name: only a platform team imports, on a managed resource. */
  ImportNotAllowed: 'ImportNotAllowed',
  /** The managed resource for this claim is controlled by something else, or belongs to another claim. */
  ManagedResourceConflict: 'ManagedResourceConflict',
  /** The managed resource was released by an earlier claim (Retain) and is never bound again. */
  ManagedResourceReleased: 'ManagedResourceReleased',
  /** Event: a managed resource was made for the claim. */
  CreatedManagedResource: 'CreatedManagedResource',
  /** Event: the claim was bound to its managed resource. */
  BoundManagedResource: 'BoundManagedResource',
  /** Event: the connection Secret was copied into the claim's namespace. */
  PropagatedConnectionSecret: 'PropagatedConnectionSecret',
  /** Event: the deleted claim's managed resource was deleted (reclaim policy Delete). */
  DeletedManagedResource: 'DeletedManagedResource',
  /** Event: the deleted claim's managed resource was released and kept (Retain/Orphan). */
  ReleasedManagedResource: 'ReleasedManagedResource',
  /** Synced=False: no classRef and no BucketPolicy in the namespace names a default. */
  NoDefaultClass: 'NoDefaultClass',
  /** Synced=False: no classRef and more than one BucketPolicy names a default. */
  AmbiguousDefaultClass: 'AmbiguousDefaultClass',
  /** Event: the namespace's default class was filled in. */
  DefaultClassSelected: 'DefaultClassSelected',

  // Placement (the Scheduled condition and its Events).
  /** Placed on a Provider (by the scheduler, or named by the class). */
  Scheduled: 'Scheduled',
  /** No Provider matches the selectors. */
  NoMatchingProvider: 'NoMatchingProvider',
  /** Providers match, but none can be used now (unreachable, being deleted, operator missing). */
  NoUsableProvider: 'NoUsableProvider',
  /** Usable Providers match, all at their capacity. */
  CapacityExhausted: 'CapacityExhausted',

  // Providers, targets and native kinds (the NativeConnecter, NativeExternal, operators, leaks).
  /** spec.providerRef.name is not set (and no scheduler placed the resource). */
  ProviderRefMissing: 'ProviderRefMissing',
  /** The providerRef names a Provider in another namespace: Providers are used only from their own. */
  CrossNamespaceReference: 'CrossNamespaceReference',
  /** The Provider named does not exist. */
  ProviderNotFound: 'ProviderNotFound',
  /** The Provider's credentials Secret does not exist. */
  SecretNotFound: 'SecretNotFound',
  /** The Provider's Secret lacks a key it needs (the message names it). */
  SecretKeyMissing: 'SecretKeyMissing',
  /** The Provider's Secret holds something unusable or refused (a malformed PEM, an exec plugin, a file path, a refused endpoint). */
  InvalidCredentials: 'InvalidCredentials',
  /** The target's host name resolves to an address provider-rook never calls (checked at each connect). */
  EndpointNotAllowed: 'EndpointNotAllowed',
  /** An allowed kubeconfig exec plugin failed (its output is not shown: it may hold secrets). */
  CredentialPluginFailed: 'CredentialPluginFailed',
  /** The crossplane.io/external-name annotation is not a name the target's API accepts. */
  InvalidExternalName: 'InvalidExternalName',
  /** The external-name or target namespace changed after creation; the object stays where it is. */
  IdentityChanged: 'IdentityChanged',
  /** An import would change fields the operator applies only at creation. */
  ImportMismatch: 'ImportMismatch',
  /** The target object changed while it was being deleted; the deletion is retried. */
  TargetObjectChanging: 'TargetObjectChanging',
  /** The target lacks the kind's operator and the Provider does not allow installing it. */
  OperatorMissing: 'OperatorMissing',
  /** The operator's CRD is someone else's but its Deployment is not where the Provider says: no second operator is installed beside theirs. */
  OperatorInstalledElsewhere: 'OperatorInstalledElsewhere',
  /** The operator was installed; its CRD is not Established yet. */
  WaitingForCRD: 'WaitingForCRD',
  /** A Rook MinIO store's access-keys Secret is gone: new keys are never made (the running store would not know them). */
  AccessKeysLost: 'AccessKeysLost',
  /** A Tenant's configuration Secret is gone: new root credentials are never made. */
  RootCredentialsLost: 'RootCredentialsLost',
  /** The work a resource does in its target before its objects are deleted (revoking a user) failed; nothing was deleted. */
  TeardownFailed: 'TeardownFailed',
  /** Event: deleting left something in the target on purpose (a bucket that still holds objects); the message says what and why. */
  KeptInTarget: 'KeptInTarget',
  /** The store a class shares does not exist (or is being deleted). */
  SharedStoreNotFound: 'SharedStoreNotFound',
  /** The store a class shares is not Ready yet (or cannot hold buckets); the claim waits. */
  SharedStoreNotReady: 'SharedStoreNotReady',
  /** A BucketAccess names a Bucket that does not share with its namespace (or mode), or is gone; its user, if any, is revoked. */
  AccessNotAllowed: 'AccessNotAllowed',
  /** A claim asks for a bucket feature its class's backend does not have (the message names the field and the backend). */
  FeatureNotSupported: 'FeatureNotSupported',
  /** A claim asks for a bucket feature its class forbids, or a quota above the class's limit (the message names the field and the class). */
  FeatureNotAllowed: 'FeatureNotAllowed',
  /** A BucketAccess names a Bucket whose backend cannot lend it (a Rook Ceph bucket). */
  GrantsNotSupported: 'GrantsNotSupported',
  /** Event: a BucketAccess's user was revoked (its managed resource deleted). */
  RevokedAccess: 'RevokedAccess',
  /** CredentialsRotated=True: the keys of the generation the message names are in use (and when the previous ones go). */
  Rotated: 'Rotated',
  /** CredentialsRotated=False: new keys are being made; the connection Secret keeps the current ones until they work. */
  Rotating: 'Rotating',
  /** CredentialsRotated=False: a rotation was asked of keys this backend cannot rotate (the message says why). */
  RotationNotSupported: 'RotationNotSupported',
  /** The rotation settings or provider-rook's record of the keys in use cannot be read (the message names which). */
  InvalidRotationSettings: 'InvalidRotationSettings',
  /** The Job removing keys whose grace period ended failed (the message has the Job's own words); they still work. */
  RotationFailed: 'RotationFailed',
  /** A Provider asks for a version of an operator that provider-rook does not ship (the message lists those it does). */
  OperatorVersionUnknown: 'OperatorVersionUnknown',
  /** An OperatorUpgrade's selector matches no Provider: nothing is upgraded. */
  NoProvidersMatch: 'NoProvidersMatch',
  /** An OperatorUpgrade stopped at a Provider whose upgrade failed or was held (the message names it). */
  UpgradeStopped: 'UpgradeStopped',
  /** An OperatorUpgrade is under way (the message says how far). */
  Upgrading: 'Upgrading',
  /** Every Provider an OperatorUpgrade selects runs its version. */
  UpgradeComplete: 'UpgradeComplete',
  /** A managed resource being deleted waits for finalizers someone else added; the message names them and since when. */
  WaitingForFinalizers: 'WaitingForFinalizers',
  /** A store being deleted waits for the buckets that live in it to go first; the message names them. */
  StoreInUse: 'StoreInUse',
  /**
   * A resource being deleted waits, past the usual minute, for its operator to undo objects it holds
   * with its own finalizers (a SeaweedFS user in its store); the message names them and since when.
   */
  WaitingForOperator: 'WaitingForOperator',
  /** A bucket user's access Job failed (the message has the Job's own words). */
  BucketAccessFailed: 'BucketAccessFailed',
  /** Event: a target namespace provider-rook made was kept (something else lives there; the message says what). */
  KeptTargetNamespace: 'KeptTargetNamespace',
  /** Event on a Provider: a leaked target object (proven ours, its owner gone) was deleted. */
  DeletedLeakedObject: 'DeletedLeakedObject',
  /** Event on a Provider: a leaked target object was found and kept (report mode, or its marks unproven). */
  FoundLeakedObject: 'FoundLeakedObject',
  /** Event on a Provider: its deletion waits until no managed resource uses it. */
  DeletionBlocked: 'DeletionBlocked',
  /** Event on a Provider: it uses a deprecated field (the message says where it belongs now). */
  DeprecatedField: 'DeprecatedField',
  /** Ready=True on a Provider: its target answers with these credentials. */
  Reachable: 'Reachable',
  /** The target's API server cannot be reached (or timed out). */
  Unreachable: 'Unreachable',
  /** The target's serving certificate does not verify against the Provider's CA. */
  TLSVerificationFailed: 'TLSVerificationFailed',
  /** The target rejected the credentials (401). */
  Unauthorized: 'Unauthorized',
  /** The target refused the request to these credentials (403). */
  Forbidden: 'Forbidden',
  /** A claim's consumer (spec.consumers[i]) names a Provider that does not exist. */
  ConsumerProviderNotFound: 'ConsumerProviderNotFound',
  /** The consumer cluster's Provider does not let the claim's namespace deliver into that namespace (its spec.consumers). */
  ConsumerNotAllowed: 'ConsumerNotAllowed',
  /** The consumer's namespace does not exist in its cluster: provider-rook never makes it. */
  ConsumerNamespaceNotFound: 'ConsumerNamespaceNotFound',
  /** Another claim delivers a Secret of the same name into the same consumer namespace first. */
  ConsumerSecretTaken: 'ConsumerSecretTaken',
  /** The delivered Secret was made immutable in the consumer cluster: its keys are not waited for. */
  ConsumerSecretRefused: 'ConsumerSecretRefused',
  /** The consumer runs in another cluster than the store, and the store's class exposes it to no other cluster. */
  NoEndpointForConsumer: 'NoEndpointForConsumer',
  /** The consumer cluster cannot be reached: what is delivered there waits (a deletion too). */
  ConsumerUnreachable: 'ConsumerUnreachable',
  /**
   * Ready=False on a store whose exposure has no address yet (a LoadBalancer pending, a route not
   * accepted); on a claim's delivery, a consumer in another cluster waits for it.
   */
  WaitingForExposure: 'WaitingForExposure',
  /** Delivered=False while the claim has no connection Secret to deliver yet. */
  WaitingForConnectionSecret: 'WaitingForConnectionSecret',
  /** Delivered=True: every consumer's Secret holds the claim's connection details. */
  Delivered: 'Delivered',
  /** Event: a consumer's Secret was written (made, or updated with new details). */
  DeliveredConnectionSecret: 'DeliveredConnectionSecret',
  /** Event: a consumer's Secret was deleted (its consumer left the list, or the claim went). */
  RemovedConnectionSecret: 'RemovedConnectionSecret',
  /** Event: a delivery was forgotten without deleting its Secret: its Provider was deleted, so its cluster cannot be reached any more. */
  AbandonedConnectionSecret: 'AbandonedConnectionSecret',
  /** An error that names no reason of its own. */
  ReconcileError: 'ReconcileError',
  // Crossplane's own: Ready while a resource is made, goes, is usable or not, and Synced when its
  // last reconcile succeeded.
  Creating: 'Creating',
  Deleting: 'Deleting',
  Available: 'Available',
  Unavailable: 'Unavailable',
  ReconcileSuccess: 'ReconcileSuccess',
} as const;

/** A reason provider-rook reports: one of the table's. */
export type Reason = (typeof Reasons)[keyof typeof Reasons];
/**
 * A reason not typed as one of the table's: read from another object's status (a claim repeats its
 * resource's), or carried by an error (ReasonedError, whose reason the kit does not type). Repeated as written.
 */
export type Reported = string & { readonly reported: true };
/** A reason from elsewhere, to repeat as it is. */
export const reported = (reason: string): Reported => reason as Reported;

type Cond = Omit<Condition, 'lastTransitionTime' | 'observedGeneration'>;

// Crossplane's condition vocabulary.
export const Ready = {
  creating: (): Cond => ({ type: 'Ready', status: 'False', reason: Reasons.Creating }),
  deleting: (): Cond => ({ type: 'Ready', status: 'False', reason: Reasons.Deleting }),
  available: (): Cond => ({ type: 'Ready', status: 'True', reason: Reasons.Available }),
  unavailable: (message?: string): Cond => ({
    type: 'Ready',
    status: 'False',
    reason: Reasons.Unavailable,
    ...(message ? { message } : {}),
  }),
};

export const Synced = {
  success: (): Cond => ({ type: 'Synced', status: 'True', reason: Reasons.ReconcileSuccess }),
  /** A failure, with one of the table's reasons, or the reason a resource this one follows reported (a claim's resource). */
  error: (reason: Reason | Reported, message: string): Cond => ({ type: 'Synced', status: 'False', reason, message }),
};

/**
 * A resource cannot prove an object it relies on (a Service or Secret someone else changed or
 * replaced): it is not Ready, and the connection keys that would lead there are withheld until it can.
 */
export class UnprovenError extends ReasonedError {
  readonly withheld: string[];
  constructor(reason: Reason, message: string, withheld: string[] = []) {
    super(reason, message);
    this.withheld = withheld;
    this.name = 'UnprovenError';
  }
}

/** The condition reason for an error: its own, or one derived from how the API call failed. */
export function reasonOf(err: unknown, fallback: Reason = Reasons.ReconcileError): Reason | Reported {
  if (err instanceof ReasonedError) return reported(err.reason);
  if (err instanceof CredentialPluginError) return Reasons.CredentialPluginFailed;
  if (err instanceof UnreachableError) return err.tls ? Reasons.TLSVerificationFailed : Reasons.Unreachable;
  if (err instanceof KubeError) {
    if (err.code === 401) return Reasons.Unauthorized;
    if (err.code === 403) return Reasons.Forbidden;
  }
  return fallback;
}
