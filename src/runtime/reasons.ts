// Condition and Event reasons that say why provider-rook would not act, each with what it means
// (crossplane-runtime keeps its reasons in const blocks the same way).
export const Reasons = {
  /** The target object belongs to another managed resource, or nothing proves it is this one's. */
  ExternalResourceOwnedByAnother: 'ExternalResourceOwnedByAnother',
  /** The target object exists, unmarked, and no import was asked for. */
  ExternalResourceConflict: 'ExternalResourceConflict',
  /** A companion (e.g. an access-keys Secret) exists but was not made by provider-rook for this resource. */
  CompanionNotOwned: 'CompanionNotOwned',
  /** The connection Secret exists and is not controlled (ownerReference with uid) by this resource or claim. */
  ConnectionSecretConflict: 'ConnectionSecretConflict',
  /** A target object carries our marks, its owner is gone, but the marks prove nothing: kept, reported. */
  UnprovenLeak: 'UnprovenLeak',
  /** A target namespace (of a store, or to install an operator into) the Provider does not allow. */
  TargetNamespaceNotAllowed: 'TargetNamespaceNotAllowed',
  /** An operator image other than its bundle's, without the Provider's imageOverride. */
  OperatorImageNotAllowed: 'OperatorImageNotAllowed',
  /** A claim's resourceRef names no managed resource it may bind: missing or another's, the same answer. */
  ManagedResourceNotFound: 'ManagedResourceNotFound',
} as const;
