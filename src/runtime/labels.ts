// provider-rook's own labels, annotations and condition types on claims and managed resources
// (Crossplane's are in kit/meta.ts; the marks on what it makes in a target, in ownership/marks.ts).
/** On a claim or managed resource: its deletion is refused at admission (config/admission/protection.yaml) while it is "true". */
export const LABEL_PROTECTED = 'rook.crossplane.io/protected';
/** On a Bucket claim, while BucketAccess claims hold users of it: its deletion is refused at admission too. */
export const LABEL_GRANTED = 'rook.crossplane.io/granted';
/** On a grant's managed resource: the Bucket it lends from (namespace/name), whose LABEL_GRANTED it may hold. */
export const ANNOTATION_GRANT_OF = 'rook.crossplane.io/grant-of';
/** On a claim or managed resource: any new value asks for one rotation of its keys (native/rotation.ts). */
export const ANNOTATION_ROTATE = 'rook.crossplane.io/rotate-credentials';
/** The condition saying which keys are in use, or why they cannot rotate. */
export const CONDITION_ROTATED = 'CredentialsRotated';
