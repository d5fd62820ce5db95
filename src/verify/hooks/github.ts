import { isRecord } from '../identify.ts';
import type { DeliveryBody, ProviderHooks } from '../preset-types.ts';
import { at, firstLine, numbered, shortRef, summaryLine, textOf } from '../summary.ts';

/**
 * The repository, then what happened in it: the branch or tag and the head commit's subject for a
 * push; the action, number and title for pull requests and issues; the action and the object's
 * name (release, workflow run, check) otherwise.
 */
function summarizeGithub(body: DeliveryBody): string | null {
  const json = body.json;
  if (!isRecord(json)) return null;
  const item = at(json, 'pull_request') ?? at(json, 'issue') ?? at(json, 'discussion');
  const number = numbered(at(item, 'number') ?? json['number']);
  const action = textOf(json['action']);
  const name =
    at(item, 'title') ??
    at(json, 'release', 'tag_name') ??
    at(json, 'workflow_run', 'name') ??
    at(json, 'check_run', 'name') ??
    at(json, 'workflow_job', 'name');
  return summaryLine([
    at(json, 'repository', 'full_name') ?? at(json, 'organization', 'login'),
    shortRef(json['ref']),
    action === null || number === null ? action : `${action} ${number}`,
    number !== null && action === null ? number : null,
    name,
    firstLine(at(json, 'head_commit', 'message')),
  ]);
}

/**
 * GitHub: `X-Hub-Signature-256: sha256=<hex>`, HMAC-SHA256 of the raw body, on the hmac engine
 * (catalog/github/provider.json). GitHub signs no timestamp; dedupe on X-GitHub-Delivery. The
 * legacy SHA-1 `X-Hub-Signature` is deliberately not accepted as a fallback (a sender that offers
 * only SHA-1 is either ancient or stripping the stronger header), but it is redacted when stored.
 */
export const githubHooks: ProviderHooks = { summarize: summarizeGithub, alsoSensitive: ['x-hub-signature'] };
