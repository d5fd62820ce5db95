// type/subtype plus parameters, nothing that could split a header or smuggle a second value.
const SAFE_CONTENT_TYPE =
  /^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+(\s*;\s*[A-Za-z0-9!#$&^_.+-]+=("[^"\\\r\n]*"|[A-Za-z0-9!#$&^_.+-]+))*$/;

const EXTENSIONS: Readonly<Record<string, string>> = {
  'application/json': '.json',
  'application/xml': '.xml',
  'text/xml': '.xml',
  'text/plain': '.txt',
  'application/x-www-form-urlencoded': '.txt',
};

function extensionFor(mediaType: string): string {
  if (mediaType.endsWith('+json')) return '.json';
  if (mediaType.endsWith('+xml')) return '.xml';
  return EXTENSIONS[mediaType] ?? '.bin';
}

/**
 * Headers for GET /api/events/:id/raw. The bytes are whatever a sender posted, HTML and SVG
 * included, and the API shares the UI's origin: attachment + nosniff + a sandboxing CSP make
 * sure a browser downloads them and never renders or runs them there.
 */
export function rawDownloadHeaders(id: string, storedContentType: string | null): Record<string, string> {
  const contentType =
    storedContentType !== null && SAFE_CONTENT_TYPE.test(storedContentType)
      ? storedContentType
      : 'application/octet-stream';
  const mediaType = (contentType.split(';')[0] ?? '').trim().toLowerCase();
  const filename = `${id}${extensionFor(mediaType)}`;
  return {
    'Content-Type': contentType,
    'Content-Disposition': `attachment; filename="${filename}"`,
    'X-Content-Type-Options': 'nosniff',
    'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'; sandbox",
    'Cross-Origin-Resource-Policy': 'same-origin',
  };
}
