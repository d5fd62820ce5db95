/**
 * `switchboard listen --reply` on the API: a stream opened with `?reply=<providers>` is offered the
 * deliveries of those providers that wait for the app's answer (SSE messages of type reply,
 * ApiReplyRequest), and POST /api/replies/{id} returns the app's answer (ApiReplyAnswer), taken
 * once (forward/listen-replies.ts).
 */
import type Router from '@koa/router';
import type { Context } from 'koa';
import type { ApiReplyAnswerResult, ApiReplyRequest } from '../../generated/types.ts';
import { validateApiReplyAnswer } from '../../generated/validators.js';
import { callerFrom, callerOf } from '../auth/require-bearer.ts';
import { invalidArgument, notFound } from '../errors/app-error.ts';
import { describeSchemaErrors } from '../errors/schema-errors.ts';
import type { ListenReplies } from '../forward/listen-replies.ts';
import { REPLY_MAX_ANSWER_BYTES } from '../../generated/constants.ts';
import { normalizeEventId } from '../shared/event-id.ts';
import { readJsonBody } from './read-json-body.ts';

/** Every provider, in `?reply=`. */
const ALL_PROVIDERS = '*';
/** Room for the status and headers beside the body. */
const ANSWER_HEADROOM = 256 * 1024;
/** The largest answer any provider may be configured to pass on, in base64, with the headroom. */
const ANSWER_BODY_LIMIT = Math.ceil(REPLY_MAX_ANSWER_BYTES.maximum / 3) * 4 + ANSWER_HEADROOM;

export interface ReplyRouteDeps {
  listenReplies?: ListenReplies | undefined;
  checkReadLimit: (caller: string) => void;
}

/**
 * The stream's reply offers when it asked for them (`?reply=a,b` or `?reply=*`): attaching it to
 * the providers named under its token. Undefined without `reply`.
 */
export function replyOffers(
  ctx: Context,
  hub: ListenReplies | undefined,
): ((offer: (request: ApiReplyRequest) => void) => () => void) | undefined {
  const wanted = ctx.query['reply'];
  if (wanted === undefined) return undefined;
  if (typeof wanted !== 'string' || wanted === '')
    throw invalidArgument(`reply: expected ${ALL_PROVIDERS} or provider names separated by commas`);
  if (hub === undefined)
    throw invalidArgument('reply: no provider of this server answers through listen (reply: {from: listen})');
  const names = wanted.split(',').map((name) => name.trim());
  if (names.some((name) => name === ''))
    throw invalidArgument(`reply: expected ${ALL_PROVIDERS} or provider names separated by commas`);
  const providers = wanted === ALL_PROVIDERS ? undefined : new Set(names);
  const callerId = callerFrom(ctx).id;
  return (offer) => hub.attach({ callerId, providers, offer });
}

export function addReplyRoutes(router: Router, deps: ReplyRouteDeps): void {
  router.post('/replies/:id', async (ctx) => {
    // An answer is bounded by the deliveries offered to this token; it spends the read bucket,
    // since a listener answering a burst of interactions must not run dry before the provider.
    deps.checkReadLimit(callerOf(ctx));
    const id = normalizeEventId(ctx.params['id'] ?? '');
    if (id === null) throw invalidArgument('id: expected a reply id (a UUID)');
    const hub = deps.listenReplies;
    if (hub === undefined) throw notFound(`no pending reply with id ${id}`);
    const body = await readJsonBody(ctx, ANSWER_BODY_LIMIT);
    if (!validateApiReplyAnswer(body))
      throw invalidArgument(describeSchemaErrors(validateApiReplyAnswer.errors, 'body'));
    const result: ApiReplyAnswerResult = hub.submit(id, callerFrom(ctx).id, body);
    ctx.body = result;
  });
}
