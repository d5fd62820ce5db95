import type { JSX } from 'preact';
import type { EventDetail } from '../../../../generated/types.ts';
import { CopyButton } from '../components/copy-button.tsx';
import { formatBytes, formatReply } from '../format.ts';

// UUIDv7 ids share their leading (time) characters; the last ones tell events apart.
const ID_TAIL = 8;

/**
 * The event id with its last characters always in view: UUIDv7 ids begin with the time, so
 * events received close together share their first characters, and on a narrow screen the start
 * gives way (ending in …) before the tail does.
 */
function EventIdText({ id }: { id: string }): JSX.Element {
  return (
    <span class="id-text" title={id} data-testid="event-id">
      <span class="id-head">{id.slice(0, -ID_TAIL)}</span>
      <span class="id-tail">{id.slice(-ID_TAIL)}</span>
    </span>
  );
}

/**
 * The event's facts in a strip: its id, the sender's delivery id (both copyable), the source, the
 * size and, when its provider waited for the app's answer, how that went.
 */
export function EventFacts({ event }: { event: EventDetail }): JSX.Element {
  const truncated = event.payload_truncated === true;
  return (
    <dl class="meta-strip" aria-label="Event facts">
      <div class="meta-id">
        <dt>Event id</dt>
        <dd class="mono with-action">
          <EventIdText id={event.id} />
          <CopyButton text={() => event.id} label="Copy event id" />
        </dd>
      </div>
      <div class="meta-delivery">
        <dt>Delivery id</dt>
        <dd class="mono with-action">
          {event.external_id === null ? (
            <span class="muted">none</span>
          ) : (
            <>
              <span class="truncate-text" title={event.external_id} data-testid="delivery-id">
                {event.external_id}
              </span>
              <CopyButton text={() => event.external_id ?? ''} label="Copy delivery id" />
            </>
          )}
        </dd>
      </div>
      <div>
        <dt>Source</dt>
        <dd class="mono">{event.source_ip ?? <span class="muted">queue</span>}</dd>
      </div>
      <div>
        <dt>Size</dt>
        <dd class={truncated ? 'stacked' : undefined}>
          {formatBytes(event.payload_size)}
          {truncated ? <div class="muted">{`of ${formatBytes(event.received_size ?? 0)} received`}</div> : null}
        </dd>
      </div>
      {event.reply === undefined ? null : (
        <div class="meta-reply">
          <dt>App's reply</dt>
          <dd data-testid="event-reply">{formatReply(event.reply)}</dd>
        </div>
      )}
    </dl>
  );
}
