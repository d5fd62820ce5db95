/** How a consumer's answer looks wherever one is shown: replay results, replay history, forwarding attempts. */
import type { JSX } from 'preact';

/** The tone of an HTTP status: good for 2xx, warn for another answer, bad for none at all. */
export function statusClass(status: number | null): 'good' | 'warn' | 'bad' {
  if (status === null) return 'bad';
  if (status >= 200 && status < 300) return 'good';
  return 'warn';
}

/** What the consumer answered: its content type and the start of its body, as text. */
export function ResponseExcerpt({
  excerpt,
  contentType,
}: {
  excerpt?: string | undefined;
  contentType?: string | undefined;
}): JSX.Element | null {
  if (excerpt === undefined && contentType === undefined) return null;
  return (
    <div class="response-excerpt" data-testid="response-excerpt">
      <div class="response-excerpt-head">
        <span>Response body</span>
        <code data-testid="response-content-type">{contentType ?? 'no content type'}</code>
      </div>
      {excerpt === undefined ? (
        <p class="muted">Empty, or not text.</p>
      ) : (
        <pre class="code-box wrap excerpt-box">{excerpt}</pre>
      )}
    </div>
  );
}
