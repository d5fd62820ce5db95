/**
 * Presets that sign the URL the provider called (Twilio, Square, HubSpot, Trello, QStash's
 * subject) sign its query string too: Twilio puts a JSON body's hash there (bodySHA256), and a
 * sender may call `…/hooks/twilio?tenant=7`. A re-signed delivery of such an event (replay,
 * forwarding, `switchboard listen`) carries the query it arrived with, after any the target has of
 * its own, and is signed over the query it carries, so a consumer that checks its public URL plus
 * the query it received gets what was signed.
 */

/** The target with the original query string (without `?`) appended to its own. */
export function withOriginalQuery(target: string | URL, original: string): URL {
  const url = new URL(target);
  const own = url.search.slice(1);
  url.search = [own, original].filter((part) => part !== '').join('&');
  return url;
}
