// The shell scripts of the Jobs that run MinIO's client (mc) in a target (minio-admin.ts builds the
// Jobs): POSIX sh, as the mc image runs it. Every step may run again: a Job's pod is retried, and a
// Job is made again when its object is lost. Their text is part of an access Job's name (a digest),
// so a change here makes new Jobs for buckets whose grant changed.
const CONNECT = `set -eu
if [ -n "\${ROOT_ENV_FILE:-}" ]; then . "$ROOT_ENV_FILE"; ROOT_USER="$MINIO_ROOT_USER"; ROOT_PASSWORD="$MINIO_ROOT_PASSWORD"; fi
until mc alias set store "$S3_ENDPOINT" "$ROOT_USER" "$ROOT_PASSWORD" >/dev/null; do sleep 5; done`;

// The user's Secret may be written just after the Job (the runtime makes companions before its
// object, and a rotation or a new policy or rules changes it). The pod waits, within the Job's
// deadline, until the Secret as mounted (which the kubelet keeps up to date) holds this Job's keys,
// policy and rules. Each attempt copies the mount into the pod's own folder and checks the copies,
// which are all the steps read: never what the Secret held before, nor what someone who may only
// patch that Secret writes there once the check passed (a wider policy, a key of their choosing).
// The secret key and the documents are compared by digest, so neither the key nor any rule's text
// passes through the environment.
/** Where the grant copies the user's Secret, checks it, and reads it from (the pod's own emptyDir). */
const CHECKED = '/home/grant';
const SECRET_WAIT = `sha() { sha256sum <"$1" | cut -d ' ' -f 1; }
mkdir -p ${CHECKED}
until cp /user/* ${CHECKED}/ && [ "$(cat ${CHECKED}/accessKey)" = "$EXPECTED_ACCESS_KEY" ] &&
  [ "$(sha ${CHECKED}/secretKey)" = "$EXPECTED_SECRET_KEY_SHA256" ] && [ "$(sha ${CHECKED}/policy.json)" = "$EXPECTED_POLICY_SHA256" ] &&
  { [ -z "\${EXPECTED_LIFECYCLE_SHA256:-}" ] || [ "$(sha ${CHECKED}/lifecycle.json)" = "$EXPECTED_LIFECYCLE_SHA256" ]; }; do
  echo "waiting for the user's Secret to hold this Job's keys, policy and rules" >&2; sleep 5
done
USER_ACCESS_KEY="$(cat ${CHECKED}/accessKey)"; USER_SECRET_KEY="$(cat ${CHECKED}/secretKey)"`;
const GRANT_STEPS = `if [ "$OWNS_BUCKET" = true ]; then mc mb --ignore-existing "store/$BUCKET"; fi
# mc before 2023 names these "policy add" and "policy set".
mc admin policy create store "$POLICY_NAME" ${CHECKED}/policy.json || mc admin policy add store "$POLICY_NAME" ${CHECKED}/policy.json
mc admin user add store "$USER_ACCESS_KEY" "$USER_SECRET_KEY"
mc admin policy attach store "$POLICY_NAME" --user "$USER_ACCESS_KEY" || mc admin policy set store "$POLICY_NAME" user="$USER_ACCESS_KEY" ||
  mc admin user info store "$USER_ACCESS_KEY" | grep -q "$POLICY_NAME"`;
// Before the user's steps: a bucket with object lock must be made with it (MinIO turns it on at no other time).
const FEATURE_STEPS = `if [ "$OWNS_BUCKET" = true ]; then
  if [ "$OBJECT_LOCK" = true ]; then mc mb --ignore-existing --with-lock "store/$BUCKET"; else mc mb --ignore-existing "store/$BUCKET"; fi
  case "$VERSIONING" in Enabled) mc version enable "store/$BUCKET" ;; Suspended) mc version suspend "store/$BUCKET" ;; esac
  if [ -n "$RETENTION_MODE" ]; then mc retention set --default "$RETENTION_MODE" "\${RETENTION_DAYS}d" "store/$BUCKET"
  elif [ "$OBJECT_LOCK" = true ]; then mc retention clear --default "store/$BUCKET"; fi
  # mc before 2023 names these "admin bucket quota" and "ilm import".
  if [ -n "$QUOTA" ]; then mc quota set "store/$BUCKET" --size "$QUOTA" || mc admin bucket quota "store/$BUCKET" --hard "$QUOTA"; fi
  if [ "$LIFECYCLE" = true ]; then mc ilm rule import "store/$BUCKET" <${CHECKED}/lifecycle.json || mc ilm import "store/$BUCKET" <${CHECKED}/lifecycle.json; fi
fi`;

/** The grant's script; the wait for the Secret left out of the name's digest (`forName`), the feature steps only where features are asked. */
export function grantScript({ features, forName }: { features: boolean; forName: boolean }): string {
  const steps = [...(features ? [FEATURE_STEPS] : []), GRANT_STEPS].join('\n');
  // The name digests what the steps do, not which copy of the Secret they read: Jobs named before the
  // steps read the checked copies keep their names (no Job runs again on upgrade).
  return [CONNECT, ...(forName ? [] : [SECRET_WAIT]), forName ? steps.replaceAll(`${CHECKED}/`, '/user/') : steps].join('\n');
}

/** Exit status of a revoke that kept a bucket holding objects (a FailJob rule says so, not a failure). */
export const KEPT_EXIT_CODE = 3;
// A revoke removes the user and the older generations' users (and their policies); a retire, only those.
// Old versions and delete markers are objects too (mc ls --versions): a versioned bucket that lists
// empty may still hold them. Under object lock MinIO refuses mc rb --force, and its locked versions
// cannot go before their retention ends: such a bucket is kept.
export const REVOKE = `${CONNECT}
USERS="$OLD_USERS"; if [ "$REMOVE_CURRENT" = true ]; then USERS="$USER_ACCESS_KEY $USERS"; fi
# A user is gone once the store says it does not exist: a failure to ask is never taken for that answer.
user_gone() { if mc admin user info store "$1" >/dev/null 2>"$MC_CONFIG_DIR/info.err"; then return 1; fi; grep -q "does not exist" "$MC_CONFIG_DIR/info.err"; }
for key in $USERS; do
  until user_gone "$key"; do mc admin user rm store "$key" || sleep 5; done
  if mc admin policy info store "provider-rook-$key" >/dev/null 2>&1; then mc admin policy rm store "provider-rook-$key" || mc admin policy remove store "provider-rook-$key"; fi
done
if [ "$OWNS_BUCKET" = true ] && mc stat "store/$BUCKET" >/dev/null 2>&1; then
  if [ -z "$(mc ls --versions "store/$BUCKET" | head -n 1)" ]; then mc rb "store/$BUCKET"
  elif [ "$OBJECT_LOCK" = true ]; then echo "bucket $BUCKET holds objects under object lock" >/dev/termination-log; exit ${KEPT_EXIT_CODE}
  elif [ "$DELETE_OBJECTS" = true ]; then mc rb --force "store/$BUCKET"
  else echo "bucket $BUCKET still holds objects" >/dev/termination-log; exit ${KEPT_EXIT_CODE}; fi
fi`;
