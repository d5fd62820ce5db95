import type { ReplaySigned } from '../../generated/constants.ts';
import type { CredentialKind } from '../outbound/credentials.ts';

/**
 * What a replay result says proves the replay, from the credentials deliver-event attached: a
 * signature or token made with the provider's configured secret is `resigned`, an asymmetric
 * scheme's original signature headers `original`, and nothing at all `unsigned`. A replay of a
 * forgery sent with `unsigned: true` and one re-signed with the provider's secret thus never come
 * back in the same shape.
 */
export function replaySigned(kind: CredentialKind | undefined): ReplaySigned {
  switch (kind) {
    case 'signature':
    case 'token':
      return 'resigned';
    case 'original':
      return 'original';
    case 'none':
    case undefined:
      return 'unsigned';
  }
}
