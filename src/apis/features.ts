// Bucket features a claim may ask for (versioning, object lock, a quota, lifecycle rules), the
// rules that keep what cannot be undone, and a class's defaults and limits for them: the same on
// every backend (src/runtime/claims/features.ts fills and checks them; a backend maps what it has).
import { z } from 'zod';

/** A bucket's size limit: a whole number of MiB, GiB or TiB, from 1Mi to 9999Ti. */
export const QUOTA_SIZE = /^[1-9][0-9]{0,3}(Mi|Gi|Ti)$/;
const quotaSize = (description: string) =>
  z
    .string()
    .max(6)
    .regex(QUOTA_SIZE, 'must be a whole number of Mi, Gi or Ti from 1Mi to 9999Ti, such as 500Mi or 10Gi')
    .meta({ description });

const days = (description: string) => z.int().min(1).max(36500).meta({ description });

/** What a bucket offers besides objects, the same on every backend that has it (a backend without one refuses it). */
export const bucketFeatures = z
  .object({
    versioning: z.enum(['Enabled', 'Suspended']).optional().meta({
      description:
        'Keep every version of every object (Enabled), or stop making new versions and keep the old (Suspended). Off when unset; once set it can never be unset, as S3 cannot turn versioning off.',
    }),
    objectLock: z.boolean().optional().meta({
      description:
        'Object lock: versions an app locks (a retention or a legal hold) cannot be deleted or overwritten until the lock ends. Needs versioning Enabled; once on, it can never be turned off.',
    }),
    defaultRetention: z
      .object({
        mode: z.enum(['Governance', 'Compliance']).meta({
          description:
            'Governance: users with the right to bypass it may still delete a locked version; Compliance: no one can until the retention ends.',
        }),
        days: days('How long each new version stays locked.'),
      })
      .optional()
      .meta({ description: 'The lock every new version gets unless its writer sets another. Needs objectLock.' }),
    quota: z
      .object({ size: quotaSize('The most the bucket may hold, e.g. 10Gi; writes are refused once it holds more.') })
      .optional()
      .meta({ description: 'A size limit the store enforces.' }),
    lifecycle: z
      .object({
        rules: z
          .array(
            z
              .object({
                id: z.string().min(1).max(255).meta({ description: "The rule's name, unique in the bucket." }),
                prefix: z
                  .string()
                  .max(1024)
                  .optional()
                  .meta({ description: 'Only objects whose keys start with this; all objects when unset.' }),
                expirationDays: days('Delete objects this many days after they were written.').optional(),
                noncurrentVersionExpirationDays: days('Delete versions this many days after a newer version replaced them.').optional(),
              })
              .meta({
                'x-kubernetes-validations': [
                  {
                    rule: 'has(self.expirationDays) || has(self.noncurrentVersionExpirationDays)',
                    message: 'a lifecycle rule needs expirationDays, noncurrentVersionExpirationDays or both',
                  },
                ],
              }),
          )
          .min(1)
          .max(100)
          .meta({
            description: 'The lifecycle rules, 1 to 100, each named by a unique id.',
            'x-kubernetes-list-type': 'map',
            'x-kubernetes-list-map-keys': ['id'],
          }),
      })
      .optional()
      .meta({ description: 'Rules that delete objects, or their old versions, after a time.' }),
  })
  .meta({
    description: 'Versioning, object lock with a default retention, a quota and lifecycle rules.',
    'x-kubernetes-validations': [
      {
        rule: "!has(self.objectLock) || !self.objectLock || (has(self.versioning) && self.versioning == 'Enabled')",
        message: 'objectLock needs versioning Enabled',
        fieldPath: '.objectLock',
      },
      {
        rule: '!has(self.defaultRetention) || (has(self.objectLock) && self.objectLock)',
        message: 'defaultRetention needs objectLock',
        fieldPath: '.defaultRetention',
      },
    ],
  });

/**
 * What cannot be undone once set on a bucket, for the object that holds `features` (a claim's spec,
 * a managed resource's forProvider): versioning never returns to Off, object lock never turns off.
 */
export const featureTransitionRules = [
  {
    rule: '!has(oldSelf.features) || !has(oldSelf.features.versioning) || (has(self.features) && has(self.features.versioning))',
    message: 'features.versioning cannot be unset once set: S3 cannot turn versioning off (set it to Suspended instead)',
    fieldPath: '.features.versioning',
  },
  {
    rule: '!has(oldSelf.features) || !has(oldSelf.features.objectLock) || !oldSelf.features.objectLock || (has(self.features) && has(self.features.objectLock) && self.features.objectLock)',
    message: 'features.objectLock cannot be turned off once on',
    fieldPath: '.features.objectLock',
  },
  // The store keeps what it was given: change a quota or the rules instead.
  ...(['quota', 'lifecycle'] as const).map((f) => ({
    rule: `!has(oldSelf.features) || !has(oldSelf.features.${f}) || (has(self.features) && has(self.features.${f}))`,
    message: `features.${f} can be changed but not removed once set`,
    fieldPath: `.features.${f}`,
  })),
];

/**
 * MinIO turns object lock on only when it makes a bucket: on a MinIO backend, features.objectLock is
 * what it was when the resource was made.
 */
export const objectLockFixedRule = {
  rule: '(has(self.features) && has(self.features.objectLock) && self.features.objectLock) == (has(oldSelf.features) && has(oldSelf.features.objectLock) && oldSelf.features.objectLock)',
  message: 'features.objectLock cannot change after creation: MinIO turns object lock on only when it makes a bucket',
  fieldPath: '.features.objectLock',
};

export const FEATURE_NAMES = ['versioning', 'objectLock', 'defaultRetention', 'quota', 'lifecycle'] as const;

/** A class's defaults and limits for the features of its claims' buckets. */
export const featurePolicy = z
  .object({
    defaults: bucketFeatures.optional().meta({ description: 'What a claim gets of each feature it does not set itself.' }),
    forbidden: z
      .array(z.enum(FEATURE_NAMES))
      .max(FEATURE_NAMES.length)
      .optional()
      .meta({ description: 'Features claims of this class may not ask for.', 'x-kubernetes-list-type': 'set' }),
    maxQuota: quotaSize(
      'The largest quota a claim may ask for; a claim that asks for none gets this one, so no bucket of this class grows past it.',
    ).optional(),
  })
  .meta({
    description:
      "Defaults and limits for the features (versioning, object lock, default retention, quota, lifecycle) of this class's buckets.",
  });
