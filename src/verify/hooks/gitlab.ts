import { isRecord } from '../identify.ts';
import type { DeliveryBody, ProviderHooks } from '../preset-types.ts';
import { at, firstLine, numbered, shortRef, summaryLine, textOf } from '../summary.ts';

/** GitLab: the project, then the branch and the last commit's subject, or the merge request or issue. */
function summarizeGitlab(body: DeliveryBody): string | null {
  const json = body.json;
  if (!isRecord(json)) return null;
  const attributes = at(json, 'object_attributes');
  const iid = numbered(at(attributes, 'iid'));
  const action = textOf(at(attributes, 'action'));
  const commits = at(json, 'commits');
  const lastCommit = Array.isArray(commits) ? (commits.at(-1) as unknown) : undefined;
  return summaryLine([
    at(json, 'project', 'path_with_namespace'),
    shortRef(json['ref']),
    iid === null ? action : `${action ?? ''} ${iid}`.trim(),
    at(attributes, 'title'),
    firstLine(at(lastCommit, 'message')),
  ]);
}

/**
 * GitLab sends its secret token verbatim in X-Gitlab-Token, never as a Bearer token (its entry's
 * token scheme says so); how it names events is its entry's `identify`, how it summarises them here.
 */
export const gitlabHooks: ProviderHooks = { summarize: summarizeGitlab };
